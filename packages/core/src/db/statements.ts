/**
 * The platform's fixed SQL (the ledger, job settlement, queue sync) runs on node-postgres
 * directly, as named prepared statements (sql.ts `statement`), on the same pool as the Prisma
 * client: Prisma 6.19's client engine compiles every call, raw ones included, through its
 * wasm query compiler, which costs several times the statement itself (bench/RESULTS.md).
 * Domain checks keep the Prisma transaction they are given.
 *
 *   claim:  runStatement(poolOf(db), CLAIM_DUE, [domain, scope, now])
 *   sync:   pgTransaction(db, async (client) => { ...statements and Redis calls... })
 *   check:  prismaTransaction(db, async (tx, client) => { lock on `client`; domain.apply(tx) })
 */
import pg from "pg";
import type { Db, Tx } from "./client";
import { inTransaction } from "./deferred-begin";
import type { Statement } from "./sql";

/** The pools behind a client made by `createDb`: its own, and the settlement's (ledger/settle.ts). */
const pools = new WeakMap<Db, { main: pg.Pool; settle: pg.Pool }>();

/** Called by createDb. */
export function registerPool(db: Db, main: pg.Pool, settle: pg.Pool): void {
  pools.set(db, { main, settle });
}

function poolsOf(db: Db): { main: pg.Pool; settle: pg.Pool } {
  const found = pools.get(db);
  if (!found) throw new Error("this Prisma client was not made by createDb: it has no pool for platform SQL");
  return found;
}

/** The node-postgres pool behind a client made by `createDb`. */
export const poolOf = (db: Db): pg.Pool => poolsOf(db).main;

/** The connection pool of job settlements of a client made by `createDb` (generic plans). */
export const settlePoolOf = (db: Db): pg.Pool => poolsOf(db).settle;

export type Queryable = pg.Pool | pg.PoolClient;

export async function runStatement<R extends object>(
  on: Queryable,
  statement: Statement,
  values: unknown[],
): Promise<R[]> {
  const result = await on.query<R>({ name: statement.name, text: statement.text, values });
  return result.rows;
}

/**
 * The connection of each transaction begun by `prismaTransaction` (a job's check), so a
 * check's fixed SQL runs as a prepared statement inside that very transaction (`runStatementIn`).
 */
const connections = new WeakMap<Tx, pg.PoolClient>();

/**
 * `runStatement` on a connection or pool, on the pool of a client made by `createDb`, or in a
 * Prisma transaction: on that transaction's own connection where it can be told
 * (`prismaTransaction`), else through `tx` (the same SQL, unprepared). Columns that pg and
 * Prisma would decode differently (bigint) should be cast to text in the statement.
 */
export async function runStatementIn<R extends object>(
  on: Queryable | Db | Tx,
  statement: Statement,
  values: unknown[],
): Promise<R[]> {
  if (on instanceof pg.Pool || on instanceof pg.Client) return runStatement<R>(on, statement, values);
  if ("$transaction" in on) return runStatement<R>(poolOf(on), statement, values);
  const own = connections.get(on);
  if (own) return runStatement<R>(own, statement, values);
  return on.$queryRawUnsafe<R[]>(statement.text, ...values);
}

/**
 * A plain PostgreSQL transaction on one pooled connection. Like Prisma's interactive
 * transactions it is bounded in time: past `timeoutMs` its connection is dropped, which ends
 * the transaction (advisory locks included) in PostgreSQL, and the call fails.
 */
export async function pgTransaction<T>(
  db: Db,
  fn: (client: pg.PoolClient) => Promise<T>,
  timeoutMs = 30_000,
): Promise<T> {
  const client = await poolOf(db).connect();
  // A connection that dies while checked out reports an error on itself, not on the pool.
  const onError = () => undefined;
  client.on("error", onError);
  let timer: NodeJS.Timeout | undefined;
  let released = false;
  const release = (error?: Error) => {
    if (released) return;
    released = true;
    client.removeListener("error", onError);
    client.release(error);
  };
  try {
    await client.query("BEGIN");
    const timedOut = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        const error = new Error(`transaction took longer than ${timeoutMs} ms; rolled back`);
        release(error);
        reject(error);
      }, timeoutMs);
    });
    const value = await Promise.race([fn(client), timedOut]);
    await client.query("COMMIT");
    release();
    return value;
  } catch (error) {
    if (!released) {
      try {
        await client.query("ROLLBACK");
        release();
      } catch (rollbackFailed) {
        release(rollbackFailed as Error);
      }
    }
    throw error;
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Which connection a Prisma interactive transaction runs on. Prisma's API does not say, so a
 * process begins its `prismaTransaction`s one at a time, per client: each opens a window
 * before it calls `$transaction` and closes it when Prisma calls it back, by which time the
 * driver adapter (client.ts) has reported the connection it began the transaction on. A
 * window that saw exactly one report saw this transaction's; one that saw more (a plain
 * `db.$transaction` of the same client began meanwhile) cannot tell them apart, and the
 * transaction goes on without its connection (statements then go through `tx`). Only the
 * beginning is one at a time, never the transactions. (No AsyncLocalStorage: in Node 20 it
 * turns on async_hooks' promise hooks, a cost on every promise of the process.)
 */
interface Window {
  reports: number;
  client?: pg.PoolClient;
}
interface Beginnings {
  /** The window of the transaction beginning now, if any. */
  open: Window | null;
  /** Settles once the last transaction to begin has begun (or failed to). */
  last: Promise<void>;
}
const beginnings = new WeakMap<pg.Pool, Beginnings>();

function beginningsOf(pool: pg.Pool): Beginnings {
  let found = beginnings.get(pool);
  if (!found) beginnings.set(pool, (found = { open: null, last: Promise.resolve() }));
  return found;
}

/** Called by the driver adapter of `db`'s pool once it has begun a transaction on `client`. */
export function transactionBegan(pool: pg.Pool, client: pg.PoolClient): void {
  const window = beginnings.get(pool)?.open;
  if (!window) return;
  window.reports += 1;
  window.client = client;
}

/**
 * `db.$transaction(fn)`, also handing `fn` the transaction's own connection, so the platform's
 * statements inside it (the company lock) run as prepared statements in that very
 * transaction. `client` is null when the connection cannot be told for certain; callers then
 * go through `tx`.
 */
export async function prismaTransaction<T>(
  db: Db,
  fn: (tx: Tx, client: pg.PoolClient | null) => Promise<T>,
): Promise<T> {
  const queue = beginningsOf(poolOf(db));
  const before = queue.last;
  let begun!: () => void;
  queue.last = new Promise((resolve) => (begun = resolve));
  await before;
  const window: Window = { reports: 0 };
  queue.open = window;
  const close = () => {
    if (queue.open === window) queue.open = null;
    begun();
  };
  try {
    return await db.$transaction((tx) => {
      close();
      const client = window.reports === 1 ? window.client : undefined;
      // Inside a transaction block: the one Prisma just began (deferred-begin.ts).
      const own = client && inTransaction(client) ? client : null;
      if (own) connections.set(tx, own);
      return fn(tx, own);
    });
  } finally {
    close();
  }
}
