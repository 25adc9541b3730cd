/**
 * The ledger is the source of truth: a Redis flush, a Redis restart (a real redis-server
 * that keeps nothing on disk) or a scheduler restart loses no deadline. PostgreSQL
 * connections cut mid-job (as a restart would) fail the job, which is retried, and leave no
 * connection behind that would hang shutdown.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { randomUUID } from "node:crypto";
import { createServer } from "node:net";
import { existsSync } from "node:fs";
import { readdir } from "node:fs/promises";
import path from "node:path";
import {
  createDb,
  deadlineJobId,
  FaultPoints,
  queueName,
  settlesWithin,
  silentLogger,
  type Db,
} from "@reclaim/core";
import {
  createTestDatabase,
  deleteKeys,
  stackEnv,
  tempDir,
  uniquePrefix,
  waitFor,
  withAdmin,
  type TestDatabase,
} from "@reclaim/testkit";
import { insertRun, makeFolder } from "@reclaim/testkit/src/fixtures/native-workspace-sync";
import { createWorkerService } from "@reclaim/worker/src/service";
import { Redis } from "ioredis";
import { createScheduler } from "../src/service";

const DOMAIN = "native-workspace-sync";
let database: TestDatabase;
let db: Db;
let root: { path: string; remove(): Promise<void> };

beforeEach(async () => {
  database = await createTestDatabase();
  db = createDb(database.url);
  root = await tempDir();
});
afterEach(async () => {
  await db.$disconnect();
  await database.drop();
  await root.remove();
});

const inMinutes = (m: number) => new Date(Date.now() + m * 60_000);

async function scheduledAt(redis: Redis, prefix: string, scope: string): Promise<number | null> {
  const score = await redis.zscore(
    `${prefix}:${queueName(DOMAIN)}:delayed`,
    deadlineJobId({ domain: DOMAIN, scope }),
  );
  return score === null ? null : Math.floor(Number(score) / 0x1000);
}

it("a Redis flush followed by a scheduler restart still gets the deadline, and the work runs", async () => {
  const prefix = uniquePrefix();
  const env = stackEnv(database, prefix, root.path);
  const later = randomUUID();
  const now = randomUUID();
  const first = await createScheduler({ env, log: silentLogger });
  await first.started;
  await first.deps.queues.request([
    { domain: DOMAIN, scope: later, reason: "retention", dueAt: inMinutes(45) },
    { domain: DOMAIN, scope: now, reason: "folder_created", dueAt: new Date() },
  ]);
  await first.stop();
  await deleteKeys(prefix); // the flush

  const second = await createScheduler({ env, log: silentLogger });
  await second.started;
  const redis = new Redis(env.REDIS_URL);
  try {
    expect(Math.abs((await scheduledAt(redis, prefix, later))! - inMinutes(45).getTime())).toBeLessThan(5000);
    const worker = createWorkerService({ env, log: silentLogger });
    await worker.start();
    await waitFor(async () => (await db.reclaimBatchReport.count({ where: { companyId: now } })) === 1, {
      what: "the due job",
    });
    await worker.stop();
  } finally {
    redis.disconnect();
    await second.stop();
    await deleteKeys(prefix);
  }
});

describe("a Redis restart", () => {
  let server: ChildProcess | undefined;
  let port: number;

  const freePort = () =>
    new Promise<number>((resolve) => {
      const probe = createServer().listen(0, "127.0.0.1", () => {
        const { port: p } = probe.address() as { port: number };
        probe.close(() => resolve(p));
      });
    });

  async function startRedis() {
    server = spawn(
      "redis-server",
      ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
      {
        stdio: "ignore",
      },
    );
    await waitFor(
      async () => {
        const probe = new Redis(port, "127.0.0.1", {
          lazyConnect: true,
          maxRetriesPerRequest: 0,
          retryStrategy: () => null,
        });
        try {
          await probe.connect();
          return (await probe.ping()) === "PONG";
        } finally {
          probe.disconnect();
        }
      },
      { what: "redis-server" },
    );
  }

  beforeEach(async () => {
    port = await freePort();
    await startRedis();
  });
  afterEach(() => {
    server?.kill("SIGKILL");
  });

  it("loses no deadline: scheduler and workers rebuild the queues when Redis is back", async () => {
    const prefix = uniquePrefix();
    const env = stackEnv(database, prefix, root.path, { REDIS_URL: `redis://127.0.0.1:${port}` });
    const scheduler = await createScheduler({ env, log: silentLogger });
    await scheduler.started;
    const scope = randomUUID();
    await scheduler.deps.queues.request([
      { domain: DOMAIN, scope, reason: "retention", dueAt: inMinutes(30) },
    ]);
    const redis = new Redis(port, "127.0.0.1");
    try {
      expect(await scheduledAt(redis, prefix, scope)).not.toBeNull();
      redis.disconnect();
      server!.kill("SIGKILL");
      await new Promise((resolve) => server!.once("exit", resolve));
      await startRedis(); // empty: it keeps nothing on disk
      const after = new Redis(port, "127.0.0.1");
      try {
        const at = await waitFor(() => scheduledAt(after, prefix, scope), {
          what: "the rebuilt job",
          timeoutMs: 30_000,
        });
        expect(Math.abs(at - inMinutes(30).getTime())).toBeLessThan(5000);
      } finally {
        after.disconnect();
      }
    } finally {
      redis.disconnect();
      await scheduler.stop();
    }
  });

  it.each([
    ["while Redis is down", false],
    ["right after Redis came back, its connections still reconnecting", true],
  ])("a scheduler stops %s, instead of waiting for a connection's end forever", async (_case, restart) => {
    const env = stackEnv(database, uniquePrefix(), root.path, { REDIS_URL: `redis://127.0.0.1:${port}` });
    const scheduler = await createScheduler({ env, log: silentLogger });
    await scheduler.started;
    server!.kill("SIGKILL");
    await new Promise((resolve) => server!.once("exit", resolve));
    if (restart) await startRedis();
    // A hang, not a speed, is what this bounds: before, stop() never returned.
    expect(await settlesWithin(scheduler.stop(), 20_000)).toBe(true);
  });
});

describe("PostgreSQL connections lost mid-job", () => {
  it("the job fails and is retried, the folder is handled once, and the worker still stops cleanly", async () => {
    const prefix = uniquePrefix();
    const env = stackEnv(database, prefix, root.path);
    const scheduler = await createScheduler({ env, log: silentLogger });
    await scheduler.started;
    const company = randomUUID();
    const run = await insertRun({ db }, { companyId: company });
    const folder = await makeFolder({ instanceRoot: root.path }, run);
    let cut = 0;
    const worker = createWorkerService({
      env,
      log: silentLogger,
      // Inside the job's transaction, after the rename: every connection to the database is
      // terminated, as a PostgreSQL restart would.
      faults: FaultPoints.of({
        "native-workspace-sync.after-rename": async () => {
          if (cut++ > 0) return;
          await withAdmin((c) =>
            c.query(
              "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()",
              [database.name],
            ),
          );
        },
      }),
    });
    try {
      await worker.start();
      await scheduler.deps.queues.request([
        { domain: DOMAIN, scope: company, reason: "folder_created", dueAt: new Date() },
      ]);
      const reports = await waitFor(
        async () => {
          const rows = await db.reclaimBatchReport.findMany({ where: { companyId: company } });
          return rows.length > 0 ? rows : null;
        },
        { what: "the retried job's report", timeoutMs: 45_000 },
      );
      expect(cut).toBe(1);
      expect(reports).toHaveLength(1);
      expect(reports[0]!.error).toBeNull();
      expect(existsSync(folder)).toBe(false);
      expect(
        (await readdir(path.join(root.path, "native-workspace-sync"))).filter((n) => n.startsWith(".")),
      ).toEqual([]);
    } finally {
      const stopped = Promise.all([worker.stop(), scheduler.stop()]).then(() => "stopped");
      const outcome = await Promise.race([
        stopped,
        new Promise((resolve) => setTimeout(() => resolve("hung"), 20_000).unref()),
      ]);
      expect(outcome).toBe("stopped");
      await deleteKeys(prefix);
    }
  }, 90_000);
});
