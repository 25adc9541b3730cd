/**
 * The Prisma client, over node-postgres through @prisma/adapter-pg (Prisma 6 "client"
 * engine: no native query engine binary, see ../shared/notes/toolchain.md).
 */
import { PrismaPg } from "@prisma/adapter-pg";
import pg from "pg";
import { Prisma, PrismaClient } from "./generated/client";
import { deferBegin, forgetBegin } from "./deferred-begin";
import { registerPool, transactionBegan } from "./statements";

export { Prisma, PrismaClient };
export type Db = PrismaClient;
/** What a check receives inside the job's interactive transaction. */
export type Tx = Prisma.TransactionClient;

/**
 * How the settlement's own connection is set up, once per connection (below; the benchmarks
 * replay its statements on a connection set up the same way).
 */
export const SETTLE_CONNECTION_SETUP = "SET plan_cache_mode = force_generic_plan; SET enable_seqscan = off";

export interface DbOptions {
  /** Pool size; every concurrent job holds one connection for its transaction. */
  max?: number;
}

export function createDb(databaseUrl: string, options: DbOptions = {}): Db {
  const pool = new pg.Pool({
    connectionString: databaseUrl,
    max: options.max ?? 10,
    // Fail fast when PostgreSQL is down instead of queueing forever; BullMQ retries the job.
    connectionTimeoutMillis: 5000,
  });
  releaseDeadConnections(pool);
  // A transaction's BEGIN goes out with its first statement (deferred-begin.ts).
  pool.on("connect", (client) => deferBegin(client));
  pool.on("release", (_error, client) => forgetBegin(client));
  // An idle connection that PostgreSQL ended (a restart, a terminated backend): the pool drops
  // it and connects anew when asked. Without a listener here the error would end the process
  // until Prisma's adapter adds its own at the client's first Prisma query, while platform SQL
  // (statements.ts) uses this pool from the start.
  pool.on("error", () => undefined);
  const adapter = new ReportingPrismaPg(pool, { disposeExternalPool: true });
  const db = new PrismaClient({ adapter, transactionOptions: { maxWait: 10_000, timeout: 120_000 } });
  // The settlement's own connection (ledger/settle.ts), opened at its first use: a worker
  // process sends its settlement and fold statements there over and over, so that connection
  // plans each once (a generic plan) instead of planning it anew on each run, which cost
  // PostgreSQL more than running it. They read their estimates from JSON, which a custom plan
  // cannot estimate any better. Every table access of theirs is by key or by ctid, and
  // no table scan is ever planned on this connection: its plans are kept for as long as the
  // process runs, and one made on a young database (empty, never analyzed tables, where a
  // scan looks cheapest) would read the whole ledger and every report on each run.
  const settlePool = new pg.Pool({
    connectionString: databaseUrl,
    max: 1,
    connectionTimeoutMillis: 5000,
    // Before the connection is handed out; a failure ends it and fails the settlement.
    onConnect: async (client) => {
      await client.query(SETTLE_CONNECTION_SETUP);
    },
  });
  // An idle connection that PostgreSQL ended (a restart): the next settlement connects again.
  settlePool.on("error", () => undefined);
  registerPool(db, pool, settlePool);
  const disconnect = db.$disconnect.bind(db);
  db.$disconnect = async () => {
    await disconnect();
    // Callers may disconnect twice (a service's stop, then a test's own clean-up).
    if (!settlePool.ended) await settlePool.end();
  };
  return db;
}

/**
 * @prisma/adapter-pg, reporting the connection of each interactive transaction it begins
 * (statements.ts `prismaTransaction`): its transaction object keeps the checked-out pg
 * client as `client`.
 */
class ReportingPrismaPg extends PrismaPg {
  constructor(
    private readonly own: pg.Pool,
    options: ConstructorParameters<typeof PrismaPg>[1],
  ) {
    super(own, options);
  }

  override async connect(): ReturnType<PrismaPg["connect"]> {
    const adapter = await super.connect();
    const begin = adapter.startTransaction.bind(adapter);
    adapter.startTransaction = async (isolationLevel) => {
      const transaction = await begin(isolationLevel);
      const client = (transaction as unknown as { client?: unknown }).client;
      if (client instanceof pg.Client) transactionBegan(this.own, client as pg.PoolClient);
      return transaction;
    };
    return adapter;
  }
}

/**
 * A transaction's connection that dies (PostgreSQL restarted, the backend terminated) is
 * never given back by @prisma/adapter-pg 6.19: its rollback runs ROLLBACK first, which fails
 * on the dead connection, and so never reaches `release()`. Each outage would leak one pool
 * slot per active transaction, until no job could get a connection and `$disconnect()` (which
 * waits for every slot) hung at shutdown. So a checked-out connection that ends is released
 * here, as broken (the pool drops it); the adapter's own later release, if it gets there,
 * finds it released and fails a transaction that had failed anyway.
 */
function releaseDeadConnections(pool: pg.Pool): void {
  const watching = new WeakMap<pg.PoolClient, () => void>();
  pool.on("acquire", (client) => {
    const ended = () => {
      watching.delete(client);
      try {
        // Read at call time: the pool sets `release` for this checkout after "acquire".
        client.release(new Error("connection ended while checked out"));
      } catch {
        // Released meanwhile.
      }
    };
    watching.set(client, ended);
    client.once("end", ended);
  });
  pool.on("release", (_error, client) => {
    const ended = watching.get(client);
    if (ended) client.removeListener("end", ended);
    watching.delete(client);
  });
}
