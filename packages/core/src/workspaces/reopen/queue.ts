/**
 * The reopen queue (`reclaim-reopen`): the scheduler adds a job per request and may wait for
 * its result (`?wait=`), a worker on the host that holds the instance directory runs it
 * (run.ts). Results stay a day, so `GET /v1/jobs/:jobId` can answer later. Job ids start
 * with `reopen--`.
 */
import { randomUUID } from "node:crypto";
import { Queue, QueueEvents, Worker, type Job } from "bullmq";
import type { Redis } from "ioredis";
import type { Logger } from "../../logging";
import { closeRedis } from "../../queue/connection";
import type { ReopenDeps } from "./run";
import { runReopen } from "./run";
import type { ReopenRequest, ReopenResult } from "./types";

export const REOPEN_QUEUE = "reclaim-reopen";
export const REOPEN_JOB_PREFIX = "reopen--";
/** The longest `?wait=` a request may ask for, in seconds. */
export const MAX_REOPEN_WAIT_SECONDS = 120;

export const isReopenJobId = (jobId: string): boolean => jobId.startsWith(REOPEN_JOB_PREFIX);

export type ReopenJobState = "waiting" | "delayed" | "active" | "completed" | "failed";

export class ReopenQueue {
  private readonly queue: Queue<ReopenRequest, ReopenResult>;
  private events: Promise<{ events: QueueEvents; connection: Redis }> | null = null;

  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
  ) {
    this.queue = new Queue<ReopenRequest, ReopenResult>(REOPEN_QUEUE, { connection: redis, prefix });
  }

  /**
   * Adds the reopen job. With `listen`, the finished-job stream is being read before the job
   * exists, so `waitForResult` cannot miss a job that finishes at once.
   */
  async enqueue(request: ReopenRequest, options: { listen?: boolean } = {}): Promise<string> {
    if (options.listen) await this.listening();
    const jobId = `${REOPEN_JOB_PREFIX}${request.workspaceId}--${randomUUID()}`;
    await this.queue.add("reopen", request, {
      jobId,
      // A worker killed mid-reopen: the job's lock lapses and another worker runs it again
      // (a reopen is idempotent: the second finds the workspace restored or restores it).
      attempts: 3,
      backoff: { type: "exponential", delay: 1000 },
      removeOnComplete: { age: 24 * 3600 },
      removeOnFail: { age: 24 * 3600 },
    });
    return jobId;
  }

  /**
   * The finished-job stream, read from the last event it held when first asked for: a
   * QueueEvents started at '$' misses what is added between its start and its first blocking
   * read, so a job that finished in that gap was never answered.
   */
  private listening(): Promise<{ events: QueueEvents; connection: Redis }> {
    this.events ??= (async () => {
      const last = (await this.redis.xrevrange(this.queue.toKey("events"), "+", "-", "COUNT", 1))[0]?.[0];
      // Blocking reads of the finished-job stream need a connection of their own.
      const connection = this.redis.duplicate();
      const events = new QueueEvents(REOPEN_QUEUE, {
        connection,
        prefix: this.prefix,
        lastEventId: last ?? "0-0",
      });
      await events.waitUntilReady();
      return { events, connection };
    })();
    return this.events;
  }

  /** The finished result within `waitMs`, or null (still queued or running). */
  async waitForResult(jobId: string, waitMs: number): Promise<ReopenResult | null> {
    const job = await this.queue.getJob(jobId);
    if (!job) return null;
    const { events } = await this.listening();
    try {
      // waitUntilFinished also reads the job's state once it listens, for a job already done.
      return (await job.waitUntilFinished(events, waitMs)) as ReopenResult;
    } catch (error) {
      if (String((error as Error).message).includes("timed out")) return null;
      throw error;
    }
  }

  async status(jobId: string): Promise<{ state: ReopenJobState; result?: ReopenResult } | null> {
    // The state first, then the job: a job read before it completed carries no return value
    // even when its state, read after, says completed.
    const raw = await this.queue.getJobState(jobId);
    if (raw === "unknown") return null;
    const state: ReopenJobState =
      raw === "completed" || raw === "failed" || raw === "active" || raw === "delayed" ? raw : "waiting";
    if (state !== "completed") return { state };
    const job: Job<ReopenRequest, ReopenResult> | undefined = await this.queue.getJob(jobId);
    return job ? { state, result: job.returnvalue } : null;
  }

  async close(): Promise<void> {
    if (this.events) {
      const { events, connection } = await this.events;
      await events.close();
      await closeRedis(connection);
    }
    await this.queue.close();
  }
}

/** The reopen worker (worker processes). */
export function reopenWorker(
  deps: ReopenDeps,
  options: { connection: Redis; prefix: string; lockMs: number; stalledIntervalMs: number; log: Logger },
): Worker<ReopenRequest, ReopenResult> {
  const worker = new Worker<ReopenRequest, ReopenResult>(
    REOPEN_QUEUE,
    (job) => runReopen(deps, job.id!, job.data),
    {
      connection: options.connection,
      prefix: options.prefix,
      concurrency: 4,
      lockDuration: options.lockMs,
      stalledInterval: options.stalledIntervalMs,
      maxStalledCount: 1,
    },
  );
  worker.on("error", (error) => options.log.error("reopen worker error", { error }));
  return worker;
}
