/**
 * One sync of a batch of ledger keys (deadline-queues.ts). In one PostgreSQL transaction
 * that holds the ledger lock of every key, it reads each key's earliest deadline and makes
 * the key's queue hold exactly the job that asks for:
 *  - no job (or only a finished one): add it, delayed until the earliest row is due;
 *  - a delayed job due later: move it earlier (`changeDelay`); never later;
 *  - waiting or active: nothing; the worker syncs the key again when the job finishes, and
 *    rows touched while it ran survive its settlement (ledger/settle.ts);
 *  - no rows: a delayed job is removed (nothing due means nothing scheduled).
 * Holding the locks across the ledger read and the Redis calls is what lets schedulers and
 * workers in any number of processes sync the same keys without racing: due work is never
 * queued twice. A batch costs the same few statements and Redis round trips for one key or
 * two hundred.
 */
import type { JobsOptions, Queue } from "bullmq";
import type { Redis } from "ioredis";
import type { Clock } from "../clock";
import { lockAllOn, LOCK_NAMESPACES, pgTransaction, type Db } from "../db";
import { earliestDueOf, keyOf, type LedgerKey } from "../ledger";
import { deadlineJobId, type ReclaimJobData } from "./names";

export interface SyncTarget {
  db: Db;
  redis: Redis;
  clock: Clock;
  queue(domain: string): Queue<ReclaimJobData>;
  jobOptions(): JobsOptions;
}

type JobState = Awaited<ReturnType<Queue["getJobState"]>> | "missing";

export async function syncLedgerKeys(target: SyncTarget, batch: LedgerKey[]): Promise<void> {
  const keys = [...new Map(batch.map((k) => [keyOf(k), k])).values()];
  if (keys.length === 0) return;
  await pgTransaction(target.db, async (client) => {
    await lockAllOn(client, LOCK_NAMESPACES.ledger, keys.map(keyOf));
    const due = await earliestDueOf(client, keys);
    const states = await jobStates(target, keys);
    const adds = new Map<string, Parameters<Queue<ReclaimJobData>["addBulk"]>[0]>();
    const changes: Promise<void>[] = [];
    const now = target.clock.now().getTime();
    keys.forEach((key, i) => {
      const queue = target.queue(key.domain);
      const jobId = deadlineJobId(key);
      const state = states[i]!;
      const dueAt = due.get(keyOf(key));
      if (!dueAt) {
        if (state === "delayed") changes.push(queue.remove(jobId).then(() => undefined));
        return;
      }
      const data: ReclaimJobData = {
        kind: "deadline",
        domain: key.domain,
        scope: key.scope,
        dueAt: dueAt.toISOString(),
      };
      const delay = Math.max(0, dueAt.getTime() - now);
      const add = () => {
        const list = adds.get(key.domain) ?? [];
        list.push({ name: key.domain, data, opts: { ...target.jobOptions(), jobId, delay } });
        adds.set(key.domain, list);
      };
      if (state === "missing" || state === "unknown") add();
      else if (state === "completed" || state === "failed") {
        changes.push(queue.remove(jobId).then(() => void add()));
      } else if (state === "delayed") {
        changes.push(moveEarlier(queue, jobId, data, delay));
      }
      // waiting, prioritized, active: runs soon; the finishing worker syncs again.
    });
    await Promise.all(changes);
    await Promise.all([...adds].map(([domain, jobs]) => target.queue(domain).addBulk(jobs)));
  });
}

/**
 * Each key's job state. Finished deadline jobs are removed at once (removeOnComplete), so
 * most keys have no job: one pipelined EXISTS per batch tells those apart, and only the
 * others pay for BullMQ's state lookup.
 */
async function jobStates(target: SyncTarget, keys: LedgerKey[]): Promise<JobState[]> {
  const pipeline = target.redis.pipeline();
  for (const key of keys) pipeline.exists(target.queue(key.domain).toKey(deadlineJobId(key)));
  const exists = (await pipeline.exec()) ?? [];
  return Promise.all(
    keys.map(async (key, i) => {
      const [error, found] = exists[i] ?? [new Error("no reply"), 0];
      if (error) throw error;
      if (found === 0) return "missing" as const;
      return target.queue(key.domain).getJobState(deadlineJobId(key));
    }),
  );
}

async function moveEarlier(
  queue: Queue<ReclaimJobData>,
  jobId: string,
  data: ReclaimJobData,
  delay: number,
): Promise<void> {
  const job = await queue.getJob(jobId);
  if (!job) return;
  const scheduled = job.data.dueAt ? Date.parse(job.data.dueAt) : Number.POSITIVE_INFINITY;
  if (Date.parse(data.dueAt!) >= scheduled) return;
  try {
    await job.changeDelay(delay);
    await job.updateData(data);
  } catch {
    // Promoted to waiting meanwhile: it runs now, which is at least as early.
  }
}
