/**
 * Keeps BullMQ in step with the deadline ledger.
 *
 * For every (domain, scope) with rows in the ledger there is at most one pending BullMQ job,
 * id `deadlineJobId(key)`, delayed until the earliest row is due:
 *  - no job (or only a finished one): add it with that delay;
 *  - a delayed job due later: move it earlier (`changeDelay`); never later;
 *  - waiting or active: nothing; the worker syncs the key again when the job finishes,
 *    and rows touched while it ran survive its consumption (ledger/deadlines.ts);
 *  - no rows: a delayed job is removed (nothing due means nothing scheduled).
 * Each sync holds the ledger key's advisory lock across the ledger read and the Redis calls,
 * so schedulers and workers in any number of processes never race one another.
 */
import { Queue, QueueEvents, type JobsOptions } from "bullmq";
import type { Redis } from "ioredis";
import type { Clock } from "../clock";
import type { Logger } from "../logging";
import { lock, LOCK_NAMESPACES, type Db, type Tx } from "../db";
import {
  earliestDue,
  keyOf,
  requestDeadlines,
  scheduledKeys,
  type DeadlineRequest,
  type LedgerKey,
} from "../ledger";
import { CLOSE_WAIT_MS, settlesWithin } from "./connection";
import { deadlineJobId, deadlineKeyOf, queueName, sweepJobId, type ReclaimJobData } from "./names";

export interface DeadlineQueuesOptions {
  db: Db;
  redis: Redis;
  prefix: string;
  clock: Clock;
  /** Attempts for retryable failures (RECLAIM_JOB_ATTEMPTS). */
  attempts: number;
  /** Connection trouble of a queue (Redis restarting); the ledger keeps every deadline. */
  onError?: (error: Error) => void;
}

/** Concurrent key syncs of one request; below the default pool size of 10 connections. */
const SYNC_LANES = 6;
const SWEEP_RETENTION = { age: 7 * 24 * 3600, count: 1000 };

export class DeadlineQueues {
  private readonly queues = new Map<string, Queue<ReclaimJobData>>();
  private closed = false;
  private readonly inFlight = new Set<Promise<void>>();
  private readonly followers: { events: QueueEvents; connection: Redis }[] = [];

  constructor(private readonly options: DeadlineQueuesOptions) {}

  queue(domain: string): Queue<ReclaimJobData> {
    let queue = this.queues.get(domain);
    if (!queue) {
      queue = new Queue<ReclaimJobData>(queueName(domain), {
        connection: this.options.redis,
        prefix: this.options.prefix,
      });
      queue.on("error", (error) => this.options.onError?.(error));
      this.queues.set(domain, queue);
    }
    return queue;
  }

  private jobOptions(): JobsOptions {
    return {
      attempts: this.options.attempts,
      backoff: { type: "exponential", delay: 5000 },
      // The report row is the record; a finished job must free its id for the next deadline.
      removeOnComplete: true,
      removeOnFail: true,
    };
  }

  /** Records deadlines and schedules their jobs. */
  async request(requests: DeadlineRequest[]): Promise<void> {
    await this.syncAll(await this.record(requests));
  }

  /**
   * Records deadlines (durably: when this resolves they are in the ledger) and schedules
   * their jobs in the background, retrying until Redis answers. For callers that must answer
   * fast, such as the events API: a crash before the jobs exist loses nothing, because every
   * start and every Redis reconnect rebuilds the queues from the ledger.
   */
  async requestSoon(requests: DeadlineRequest[], onError?: (error: unknown) => void): Promise<void> {
    void this.syncManySoon(await this.record(requests), onError);
  }

  /** `syncSoon` for many keys, a few at a time (a pool of connections serves them). */
  syncManySoon(keys: LedgerKey[], onError?: (error: unknown) => void): Promise<void> {
    return this.syncAll(keys, (key) => this.syncSoon(key, onError));
  }

  /**
   * Records deadlines, in the caller's transaction when given one; returns their ledger keys,
   * for `syncManySoon` once that transaction committed.
   */
  async record(requests: DeadlineRequest[], db: Db | Tx = this.options.db): Promise<LedgerKey[]> {
    if (requests.length === 0) return [];
    await requestDeadlines(db, requests, this.options.clock.now());
    const keys = new Map<string, LedgerKey>();
    for (const r of requests) keys.set(keyOf(r), { domain: r.domain, scope: r.scope });
    return [...keys.values()];
  }

  /** Syncs keys a few at a time: each holds its own advisory lock, so they never contend. */
  private async syncAll(keys: LedgerKey[], syncOne = (key: LedgerKey) => this.sync(key)): Promise<void> {
    let next = 0;
    const lane = async () => {
      while (next < keys.length) await syncOne(keys[next++]!);
    };
    await Promise.all(Array.from({ length: Math.min(SYNC_LANES, keys.length) }, lane));
  }

  /** Makes the queue hold exactly the job the ledger asks for (see the header). */
  async sync(key: LedgerKey): Promise<void> {
    const { db, clock } = this.options;
    await db.$transaction(
      async (tx) => {
        await lock(tx, LOCK_NAMESPACES.ledger, keyOf(key));
        const due = await earliestDue(tx, key);
        const queue = this.queue(key.domain);
        const jobId = deadlineJobId(key);
        const job = await queue.getJob(jobId);
        const state = job ? await job.getState() : "missing";
        if (!due) {
          if (job && state === "delayed") await job.remove();
          return;
        }
        const delay = Math.max(0, due.getTime() - clock.now().getTime());
        const data: ReclaimJobData = {
          kind: "deadline",
          domain: key.domain,
          scope: key.scope,
          dueAt: due.toISOString(),
        };
        if (!job || state === "missing" || state === "unknown") {
          await queue.add(key.domain, data, { ...this.jobOptions(), jobId, delay });
        } else if (state === "completed" || state === "failed") {
          await job.remove();
          await queue.add(key.domain, data, { ...this.jobOptions(), jobId, delay });
        } else if (state === "delayed") {
          const scheduled = job.data.dueAt ? Date.parse(job.data.dueAt) : Number.POSITIVE_INFINITY;
          if (due.getTime() < scheduled) {
            try {
              await job.changeDelay(delay);
              await job.updateData(data);
            } catch {
              // Promoted to waiting meanwhile: it runs now, which is at least as early.
            }
          }
        }
        // waiting, prioritized, active: runs soon; the finishing worker syncs again.
      },
      { timeout: 30_000 },
    );
  }

  /**
   * `sync`, retried with backoff (1 s doubling to 60 s) while it fails, for callers that
   * cannot wait or fail: the end of a job, a reconnect. The ledger row is already durable;
   * this only makes the queue catch up once PostgreSQL and Redis answer again.
   */
  syncSoon(key: LedgerKey, onError?: (error: unknown) => void, attempt = 0): Promise<void> {
    if (this.closed) return Promise.resolve();
    const attemptDone = this.sync(key);
    // close() lets an attempt under way finish (the end of a job during shutdown).
    this.inFlight.add(attemptDone);
    void attemptDone.then(
      () => this.inFlight.delete(attemptDone),
      () => this.inFlight.delete(attemptDone),
    );
    return attemptDone.catch((error: unknown) => {
      onError?.(error);
      const delay = Math.min(60_000, 1000 * 2 ** attempt);
      return new Promise<void>((resolve) => {
        const timer = setTimeout(() => resolve(this.syncSoon(key, onError, attempt + 1)), delay);
        timer.unref();
      });
    });
  }

  /**
   * Rebuilds every missing job from the ledger (scheduler start, worker start, Redis back
   * after a restart). Returns how many keys were synced.
   */
  async reconcile(domains?: string[]): Promise<number> {
    const keys = await scheduledKeys(this.options.db, domains);
    await this.syncAll(keys);
    return keys.length;
  }

  /**
   * Syncs the key of every deadline job of `domains` that finishes, from BullMQ's event
   * stream. The worker that ran a job syncs its key right after; a worker killed in between
   * would leave the next deadline unqueued until some process restarts, so schedulers follow
   * the stream as well (a sync is idempotent under the key's lock). Blocking reads, no polling.
   */
  async followFinishedJobs(domains: string[], onError?: (error: unknown) => void): Promise<void> {
    for (const domain of domains) {
      if (this.followers.some((f) => f.events.name === queueName(domain))) continue;
      // A connection of its own (the reads block); BullMQ leaves a connection it is handed
      // open, so close() ends it.
      const connection = this.options.redis.duplicate();
      const events = new QueueEvents(queueName(domain), { connection, prefix: this.options.prefix });
      const follow = ({ jobId }: { jobId: string }) => {
        const key = deadlineKeyOf(jobId);
        if (key) void this.syncSoon(key, onError);
      };
      events.on("completed", follow);
      events.on("failed", follow);
      events.on("error", (error) => this.options.onError?.(error));
      this.followers.push({ events, connection });
    }
    await Promise.all(this.followers.map((f) => f.events.waitUntilReady()));
  }

  /** A requested sweep: its own job, with its own id, outside the deadline protocol. */
  async enqueueSweep(key: LedgerKey, dryRun: boolean, cursor?: string): Promise<string> {
    const jobId = sweepJobId(key);
    await this.queue(key.domain).add(
      key.domain,
      { kind: "sweep", domain: key.domain, scope: key.scope, dryRun, ...(cursor ? { cursor } : {}) },
      {
        jobId,
        attempts: this.options.attempts,
        backoff: { type: "exponential", delay: 5000 },
        removeOnComplete: SWEEP_RETENTION,
        removeOnFail: SWEEP_RETENTION,
      },
    );
    return jobId;
  }

  /** The queues of a service configured by the service environment. */
  static forService(
    db: Db,
    redis: Redis,
    clock: Clock,
    service: { queuePrefix: string; jobAttempts: number },
    log: Logger,
  ): DeadlineQueues {
    return new DeadlineQueues({
      db,
      redis,
      prefix: service.queuePrefix,
      clock,
      attempts: service.jobAttempts,
      onError: (error) => log.warn("queue connection error", { error }),
    });
  }

  /**
   * Stops scheduling: sync attempts under way finish first (up to 10 s), so a job that ended
   * during shutdown still has its next deadline queued; retries waiting for Redis or
   * PostgreSQL are dropped (the ledger keeps their rows; the next start rebuilds them).
   */
  async close(): Promise<void> {
    this.closed = true;
    if (this.inFlight.size > 0) await settlesWithin(Promise.allSettled([...this.inFlight]), 10_000);
    await Promise.all(
      this.followers.splice(0).map(async ({ events, connection }) => {
        // Its blocking read ends with the connection: drop that first, so a Redis that is
        // down or restarting cannot hold the close; and bound the close, because a connection
        // dropped while it waited to reconnect never reports its end (settlesWithin).
        connection.disconnect();
        await settlesWithin(events.close(), CLOSE_WAIT_MS);
      }),
    );
    await Promise.all([...this.queues.values()].map((q) => q.close()));
    this.queues.clear();
  }
}
