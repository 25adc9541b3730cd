/**
 * The platform's statements inside a check's Prisma interactive transaction run on that
 * transaction's own connection (db/statements.ts): the company-scoped lock a check relies on
 * is held by the very transaction the check is given. Real PostgreSQL.
 */
import { randomUUID } from "node:crypto";
import pg from "pg";
import {
  createDb,
  defineDomain,
  domainLockNamespace,
  FaultPoints,
  pgTransaction,
  poolOf,
  prismaTransaction,
  readCursor,
  writeCursor,
  runJob,
  silentLogger,
  systemClock,
  type DeadlineQueues,
  type Db,
  type DomainControls,
  type DomainId,
  type Tx,
} from "@reclaim/core";
import { createTestDatabase, type TestDatabase } from "@reclaim/testkit";

const ID: DomainId = "nested-clone-migration";
let database: TestDatabase;
let db: Db;
let other: pg.Client;

beforeAll(async () => {
  database = await createTestDatabase();
  db = createDb(database.url);
  other = new pg.Client({ connectionString: database.url });
  await other.connect();
});
afterAll(async () => {
  await other.end();
  await db.$disconnect();
  await database.drop();
});

/** Whether a session other than the transaction's could take the lock right now. */
async function lockIsFree(namespace: string, key: string): Promise<boolean> {
  await other.query("BEGIN");
  try {
    const { rows } = await other.query<{ acquired: boolean }>(
      "SELECT pg_try_advisory_xact_lock(hashtext($1), hashtext($2)) AS acquired",
      [namespace, key],
    );
    return rows[0]!.acquired;
  } finally {
    await other.query("ROLLBACK");
  }
}

async function backendAndTransaction(tx: Tx): Promise<string> {
  const [row] = await tx.$queryRawUnsafe<{ id: string }[]>(
    "SELECT pg_backend_pid()::text || '/' || txid_current()::text AS id",
  );
  return row!.id;
}

it("a Prisma interactive transaction hands the platform its own connection, inside the same transaction", async () => {
  const seen = await Promise.all(
    Array.from({ length: 12 }, () =>
      prismaTransaction(db, async (tx, client) => {
        expect(client).not.toBeNull();
        const { rows } = await client!.query<{ id: string }>(
          "SELECT pg_backend_pid()::text || '/' || txid_current()::text AS id",
        );
        return [rows[0]!.id, await backendAndTransaction(tx)];
      }),
    ),
  );
  for (const [platform, prisma] of seen) expect(platform).toBe(prisma);
});

it("never hands the platform another transaction's connection, even while plain db.$transaction calls begin at the same time", async () => {
  const plain = () =>
    db.$transaction(async (tx) => {
      await backendAndTransaction(tx);
    });
  const handed = await Promise.all(
    Array.from({ length: 24 }, (_, i) =>
      i % 2
        ? plain().then(() => null)
        : prismaTransaction(db, async (tx, client) => {
            if (!client) return "not told";
            const { rows } = await client.query<{ id: string }>(
              "SELECT pg_backend_pid()::text || '/' || txid_current()::text AS id",
            );
            return rows[0]!.id === (await backendAndTransaction(tx)) ? "its own" : "another's";
          }),
    ),
  );
  const told = handed.filter((h) => h !== null);
  expect(told).toHaveLength(12);
  expect(told).not.toContain("another's");
});

it("a transaction whose beginning saw another transaction begin goes on without its connection (it cannot tell which is its own)", async () => {
  // Every connection of the pool taken: a plain db.$transaction, then a prismaTransaction,
  // wait for one. The first freed goes to the plain one, which begins while the
  // prismaTransaction is beginning; the second to the prismaTransaction.
  const pool = poolOf(db);
  const held = await Promise.all(Array.from({ length: pool.options.max }, () => pool.connect()));
  let plainBegun!: () => void;
  const began = new Promise<void>((resolve) => (plainBegun = resolve));
  const plain = db.$transaction(async (tx) => {
    plainBegun();
    await backendAndTransaction(tx);
  });
  try {
    await new Promise((resolve) => setTimeout(resolve, 20));
    const handed = prismaTransaction(db, async (tx, client) => {
      if (!client) return "not told";
      const { rows } = await client.query<{ id: string }>(
        "SELECT pg_backend_pid()::text || '/' || txid_current()::text AS id",
      );
      return rows[0]!.id === (await backendAndTransaction(tx)) ? "its own" : "another's";
    });
    await new Promise((resolve) => setTimeout(resolve, 20));
    held.pop()!.release();
    await began;
    held.pop()!.release();
    expect(await handed).toBe("not told");
  } finally {
    for (const client of held) client.release();
    await plain;
  }
});

it("a check runs in a transaction that holds its company-scoped lock, released at commit", async () => {
  const scope = randomUUID();
  const namespace = domainLockNamespace(ID);
  const held: boolean[] = [];
  const domain = defineDomain({
    id: ID,
    title: "lock test",
    options: {},
    readConfig: () => ({ enabled: true, dryRun: false }),
    apply: async () => {
      held.push(!(await lockIsFree(namespace, scope)));
    },
  });
  await runJob(
    {
      db,
      queues: { syncManySoon: () => undefined } as unknown as DeadlineQueues,
      clock: systemClock,
      instanceRoot: "/nonexistent",
      log: silentLogger,
      faults: FaultPoints.none(),
      configs: new Map<DomainId, DomainControls>([[ID, { enabled: true, dryRun: false }]]),
      domains: new Map([[ID, domain]]),
    },
    {
      id: `sweep--${ID}--${randomUUID()}`,
      data: { kind: "sweep", domain: ID, scope },
      attemptsMade: 0,
      attempts: 1,
      signal: new AbortController().signal,
    },
  );
  expect(held).toEqual([true]);
  expect(await lockIsFree(namespace, scope)).toBe(true);
});

it("a plain platform transaction rolls back what it wrote when its work fails", async () => {
  const scope = randomUUID();
  await expect(
    pgTransaction(db, async (client) => {
      await client.query(
        "INSERT INTO reclaim_cursors (domain, company_id, name, value) VALUES ('d', $1, 'walk', 'x')",
        [scope],
      );
      throw new Error("failed after the write");
    }),
  ).rejects.toThrow("failed after the write");
  expect(await db.reclaimCursor.count({ where: { companyId: scope } })).toBe(0);
});

it("a plain platform transaction that outlives its time limit is ended in PostgreSQL, locks and all", async () => {
  const scope = randomUUID();
  await expect(
    pgTransaction(
      db,
      async (client) => {
        await client.query("SELECT pg_advisory_xact_lock(hashtext('t'), hashtext($1))", [scope]);
        await new Promise((resolve) => setTimeout(resolve, 500));
      },
      100,
    ),
  ).rejects.toThrow(/longer than 100 ms/);
  // The dropped connection's session ends; its lock goes with it.
  for (let i = 0; i < 50 && !(await lockIsFree("t", scope)); i++) await new Promise((r) => setTimeout(r, 20));
  expect(await lockIsFree("t", scope)).toBe(true);
});

it("an idle platform connection that PostgreSQL ends is dropped from the pool, before Prisma's first query too", async () => {
  // A client that has sent only platform SQL (statements.ts), never a Prisma query.
  const fresh = createDb(database.url);
  try {
    const pool = poolOf(fresh);
    const { rows } = await pool.query<{ pid: number }>("SELECT pg_backend_pid() AS pid");
    await other.query("SELECT pg_terminate_backend($1::int)", [rows[0]!.pid]);
    // The idle connection reports the termination; nothing may throw it at the process.
    for (let i = 0; i < 50 && pool.totalCount > 0; i++) await new Promise((r) => setTimeout(r, 20));
    expect(pool.totalCount).toBe(0);
    const again = await pool.query<{ ok: number }>("SELECT 1 AS ok");
    expect(again.rows).toEqual([{ ok: 1 }]);
  } finally {
    await fresh.$disconnect();
  }
});

it("a walk's cursor written in a check's transaction commits and rolls back with it, on its own connection", async () => {
  const key = { domain: ID, scope: randomUUID() };
  const now = new Date();
  await prismaTransaction(db, async (tx, client) => {
    expect(client).not.toBeNull();
    await writeCursor(tx, key, "folders", "run-0042", now);
    // Inside the transaction: visible to it, not to another session.
    expect(await readCursor(tx, key, "folders")).toBe("run-0042");
    const { rows } = await other.query("SELECT value FROM reclaim_cursors WHERE company_id = $1", [
      key.scope,
    ]);
    expect(rows).toEqual([]);
  });
  expect(await readCursor(db, key, "folders")).toBe("run-0042");
  await expect(
    prismaTransaction(db, async (tx) => {
      await writeCursor(tx, key, "folders", "run-0099", now);
      throw new Error("check failed");
    }),
  ).rejects.toThrow("check failed");
  expect(await readCursor(db, key, "folders")).toBe("run-0042");
  // null clears it, outside a transaction too.
  await writeCursor(db, key, "folders", null, now);
  expect(await readCursor(db, key, "folders")).toBeNull();
});

describe("a transaction's BEGIN travels with its first statement (db/deferred-begin.ts)", () => {
  /** Round trips (ReadyForQuery messages) seen on the connection while `fn` runs. */
  async function roundTrips<T>(client: pg.PoolClient, fn: () => Promise<T>): Promise<[T, number]> {
    const connection = (client as unknown as { connection: NodeJS.EventEmitter }).connection;
    let count = 0;
    const seen = () => (count += 1);
    connection.on("readyForQuery", seen);
    try {
      return [await fn(), count];
    } finally {
      connection.removeListener("readyForQuery", seen);
    }
  }

  it("BEGIN, two statements and COMMIT take three round trips (BEGIN goes with the first), the first inside the transaction", async () => {
    const client = await poolOf(db).connect();
    try {
      const [ids, trips] = await roundTrips(client, async () => {
        await client.query("BEGIN");
        const first = await client.query<{ id: string; status: string }>(
          "SELECT txid_current()::text AS id, $1::text AS status",
          ["first"],
        );
        const second = await client.query<{ id: string }>("SELECT txid_current()::text AS id");
        await client.query("COMMIT");
        return [first, second.rows[0]!.id] as const;
      });
      // The statement's own result, BEGIN's left out.
      expect(ids[0].rows).toEqual([{ id: ids[1], status: "first" }]);
      expect(ids[0].rowCount).toBe(1);
      expect(ids[0].fields.map((f) => f.name)).toEqual(["id", "status"]);
      expect(trips).toBe(3);
    } finally {
      client.release();
    }
  });

  it("a first statement that fails leaves the transaction aborted, and ROLLBACK undoes nothing else", async () => {
    const scope = randomUUID();
    const client = await poolOf(db).connect();
    try {
      await client.query("BEGIN");
      await expect(client.query("SELECT 1 / (0 * $1::int)", [1])).rejects.toThrow(/division by zero/);
      // BEGIN ran first: the failure aborted the transaction, which refuses what follows.
      await expect(client.query("SELECT 1")).rejects.toThrow(/current transaction is aborted/);
      expect(client.getTransactionStatus()).toBe("E");
      await client.query("ROLLBACK");
      expect(client.getTransactionStatus()).toBe("I");
      // A later transaction on the same connection begins as any other.
      await client.query("BEGIN");
      await client.query(
        "INSERT INTO reclaim_cursors (domain, company_id, name, value) VALUES ('d', $1, 'walk', 'x')",
        [scope],
      );
      await client.query("ROLLBACK");
      expect(await db.reclaimCursor.count({ where: { companyId: scope } })).toBe(0);
    } finally {
      client.release();
    }
  });

  it("a transaction that ran no statement sends neither its BEGIN nor its end", async () => {
    const client = await poolOf(db).connect();
    try {
      const [, trips] = await roundTrips(client, async () => {
        await client.query("BEGIN");
        await client.query("COMMIT");
        await client.query("BEGIN");
        await client.query("ROLLBACK");
      });
      expect(trips).toBe(0);
      expect(client.getTransactionStatus()).toBe("I");
    } finally {
      client.release();
    }
  });

  it("a connection given back with its BEGIN unsent is handed out idle", async () => {
    const fresh = createDb(database.url, { max: 1 });
    try {
      const first = await poolOf(fresh).connect();
      await first.query("BEGIN");
      first.release();
      const again = await poolOf(fresh).connect();
      try {
        expect(again).toBe(first);
        await again.query("SELECT 1");
        // Had the BEGIN survived the checkout, this statement would have opened a transaction.
        expect(again.getTransactionStatus()).toBe("I");
      } finally {
        again.release();
      }
    } finally {
      await fresh.$disconnect();
    }
  });

  it("the first statement may be a named prepared statement, parsed then or before", async () => {
    const client = await poolOf(db).connect();
    try {
      for (const round of [1, 2]) {
        await client.query("BEGIN");
        const { rows } = await client.query<{ n: number; inside: boolean }>({
          name: "deferred-begin-test",
          text: "SELECT $1::int AS n, now() = statement_timestamp() AS inside",
          values: [round],
        });
        // now() is the transaction's start: the BEGIN's, sent a moment before the statement.
        expect(rows[0]!.n).toBe(round);
        expect(client.getTransactionStatus()).toBe("T");
        await client.query("COMMIT");
      }
    } finally {
      client.release();
    }
  });

  it("a Prisma interactive transaction's first statement through Prisma runs in it, and its writes roll back with it", async () => {
    const scope = randomUUID();
    await expect(
      prismaTransaction(db, async (tx, client) => {
        expect(client).not.toBeNull();
        await tx.$executeRawUnsafe(
          "INSERT INTO reclaim_cursors (domain, company_id, name, value) VALUES ('d', $1, 'walk', 'x')",
          scope,
        );
        const { rows } = await client!.query<{ id: string }>("SELECT txid_current()::text AS id");
        expect(await backendAndTransaction(tx)).toMatch(new RegExp(`/${rows[0]!.id}$`));
        throw new Error("check failed");
      }),
    ).rejects.toThrow("check failed");
    expect(await db.reclaimCursor.count({ where: { companyId: scope } })).toBe(0);
  });
});
