/**
 * The retention worker as the restore-point benchmarks drive it (not runnable itself): the
 * real job pipeline (`runJob`: prepare, locked apply, finish, settle with its report row)
 * on a data set's database, one company batch at a time, as its "continue" deadlines would
 * run it. Storage is local_disk under a temporary instance root (the data set's objects do
 * not exist there: deleting one is the provider's real, idempotent delete of an absent
 * object). Counts every SQL statement sent by any pg client in this process (BEGIN/COMMIT
 * and locks included) and times the statements asked for (bench/support.ts).
 */
import { randomUUID } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { createDb, createRedis, DeadlineQueues, runJob, systemClock } from "../../packages/core/src";
import { deleteKeys, TEST_REDIS_URL, uniquePrefix } from "../../packages/testkit/src/redis";
import { jobDeps } from "../../packages/testkit/src/statements";
import type { Dataset } from "./dataset";

export { statementsSent, timeStatements } from "../support";

export const DOMAIN = "restore-point-retention";
export const BATCH = 50;

export interface BenchWorker {
  /** Runs one batch of the company; its wall time and how many rows it checked. */
  batch(companyId: string): Promise<{ ms: number; checked: number }>;
  close(): Promise<void>;
}

export async function startBenchWorker(data: Dataset): Promise<BenchWorker> {
  const instanceRoot = await mkdtemp(path.join(os.tmpdir(), "reclaim-bench-"));
  const prefix = uniquePrefix();
  const db = createDb(data.url, { max: 4 });
  const redis = createRedis(TEST_REDIS_URL);
  const queues = new DeadlineQueues({ db, redis, prefix, clock: systemClock, attempts: 1 });
  const env = { DATABASE_URL: data.url, PAPERCLIP_INSTANCE_ROOT: instanceRoot };
  const deps = jobDeps(db, instanceRoot, env, queues);
  await db.$queryRawUnsafe("SELECT 1"); // connect before anything is counted
  return {
    async batch(companyId) {
      const t0 = performance.now();
      const report = await runJob(deps, {
        id: `bench--${randomUUID()}`,
        data: { kind: "sweep", domain: DOMAIN, scope: companyId },
        attemptsMade: 0,
        attempts: 1,
        signal: new AbortController().signal,
      });
      return { ms: performance.now() - t0, checked: report.checked };
    },
    async close() {
      await queues.close();
      await redis.quit().catch(() => redis.disconnect());
      await db.$disconnect();
      await deleteKeys(prefix);
      await rm(instanceRoot, { recursive: true, force: true });
    },
  };
}
