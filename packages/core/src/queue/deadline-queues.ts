/**
 * Keeps BullMQ in step with the deadline ledger.
 *
 * For every (domain, scope) with rows in the ledger there is at most one pending BullMQ job,
 * id `deadlineJobId(key)`, delayed until the earliest row is due. A sync of a key
 * (ledger-sync.ts) holds the key's advisory lock across the ledger read and the Redis calls,
 * so schedulers and workers in any number of processes never race one another.
 *
 * Syncs are batched: `request`, `sync` and `reconcile` sync their keys a batch at a time and
 * wait; `syncSoon` and `syncFinishedSoon` sync them in the background (background-sync.ts).
 */
import { Queue, type JobsOptions } from "bullmq";
import type { Redis } from "ioredis";
import type { Clock } from "../clock";
import type { Logger } from "../logging";
import { poolOf, type Db, type Queryable, type Tx } from "../db";
import {
  earliestDueOf,
  keyOf,
  requestDeadlines,
  scheduledKeys,
  type DeadlineRequest,
  type LedgerKey,
} from "../ledger";
import { BackgroundSync, SYNC_BATCH, SYNC_LANES } from "./background-sync";
import { FinishedJobFollower } from "./finished-follower";
import { syncLedgerKeys } from "./ledger-sync";
import { deadlineKeyOf, queueName, sweepJobId, type ReclaimJobData } from "./names";

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

const SWEEP_RETENTION = { age: 7 * 24 * 3600, count: 1000 };
/** Pause between reads of the finished-job stream that found entries (followFinishedJobs). */
const FOLLOW_READ_PAUSE_MS = 200;

export class DeadlineQueues {
  private readonly queues = new Map<string, Queue<ReclaimJobData>>();
  private readonly followers = new Map<string, FinishedJobFollower>();
  private readonly background = new BackgroundSync({
    sync: (keys) => syncLedgerKeys(this, keys),
    withRows: async (keys) => new Set((await earliestDueOf(poolOf(this.db), keys)).keys()),
  });

  constructor(private readonly options: DeadlineQueuesOptions) {}

  get db(): Db {
    return this.options.db;
  }

  get redis(): Redis {
    return this.options.redis;
  }

  get clock(): Clock {
    return this.options.clock;
  }

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

  jobOptions(): JobsOptions {
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
    await this.syncKeys(await this.record(requests));
  }

  /**
   * Records deadlines (durably: when this resolves they are in the ledger) and schedules
   * their jobs in the background, retrying until Redis answers. For callers that must answer
   * fast, such as the events API: a crash before the jobs exist loses nothing, because every
   * start and every Redis reconnect rebuilds the queues from the ledger.
   */
  async requestSoon(requests: DeadlineRequest[], onError?: (error: unknown) => void): Promise<void> {
    this.syncManySoon(await this.record(requests), onError);
  }

  /**
   * Records deadlines, in the caller's transaction when given one (its `tx`, or its connection
   * from `prismaTransaction`); returns their ledger keys, for `syncManySoon` once that
   * transaction committed.
   */
  async record(requests: DeadlineRequest[], db: Db | Tx | Queryable = this.options.db): Promise<LedgerKey[]> {
    if (requests.length === 0) return [];
    await requestDeadlines(db, requests, this.options.clock.now());
    const keys = new Map<string, LedgerKey>();
    for (const r of requests) keys.set(keyOf(r), { domain: r.domain, scope: r.scope });
    return [...keys.values()];
  }

  /** Makes the queue hold exactly the job the ledger asks for (ledger-sync.ts). */
  sync(key: LedgerKey): Promise<void> {
    return this.syncKeys([key]);
  }

  /** Syncs keys a batch at a time, `SYNC_LANES` batches at once; fails if one fails. */
  private async syncKeys(keys: LedgerKey[]): Promise<void> {
    let next = 0;
    const lane = async () => {
      while (next < keys.length) {
        const batch = keys.slice(next, next + SYNC_BATCH);
        next += batch.length;
        await syncLedgerKeys(this, batch);
      }
    };
    await Promise.all(Array.from({ length: Math.min(SYNC_LANES, keys.length) }, lane));
  }

  /** Syncs `key` in the background (background-sync.ts). */
  syncSoon(key: LedgerKey, onError?: (error: unknown) => void): void {
    this.background.soon([key], onError);
  }

  /** `syncSoon` for many keys. */
  syncManySoon(keys: LedgerKey[], onError?: (error: unknown) => void): void {
    this.background.soon(keys, onError);
  }

  /**
   * `syncSoon` for the key of a deadline job that completed: gathered with others, and synced
   * only if the ledger still has rows for it (background-sync.ts).
   */
  syncFinishedSoon(key: LedgerKey, onError?: (error: unknown) => void): void {
    this.background.finished(key, onError);
  }

  /**
   * Rebuilds every missing job from the ledger (scheduler start, worker start, Redis back
   * after a restart). Returns how many keys were synced.
   */
  async reconcile(domains?: string[]): Promise<number> {
    const keys = await scheduledKeys(this.options.db, domains);
    await this.syncKeys(keys);
    return keys.length;
  }

  /**
   * Syncs the key of every deadline job of `domains` that finishes, from BullMQ's event
   * stream. The worker that ran a job syncs its key right after; a worker killed in between
   * would leave the next deadline unqueued until some process restarts, so schedulers follow
   * the stream as well (a sync is idempotent under the key's lock). Blocking reads, no polling.
   */
  async followFinishedJobs(domains: string[], onError?: (error: unknown) => void): Promise<void> {
    const started: Promise<void>[] = [];
    for (const domain of domains) {
      if (this.followers.has(domain)) continue;
      const follower = new FinishedJobFollower({
        stream: this.queue(domain).toKey("events"),
        // A connection of its own (the reads block); the follower closes it.
        connection: this.options.redis.duplicate(),
        // A backstop: a worker syncs the key itself right after the job, so reading the
        // stream in batches (and syncing their keys a batch at a time) costs no timeliness.
        pauseMs: FOLLOW_READ_PAUSE_MS,
        onFinished: ({ completed, failed }) => {
          for (const jobId of completed) {
            const key = deadlineKeyOf(jobId);
            if (key) this.syncFinishedSoon(key, onError);
          }
          for (const jobId of failed) {
            const key = deadlineKeyOf(jobId);
            if (key) this.syncSoon(key, onError);
          }
        },
        // Finished jobs may have been trimmed from the stream unread: rebuild from the ledger.
        onGap: () => void this.reconcile([domain]).catch((error: unknown) => onError?.(error)),
        onError: (error) => this.options.onError?.(error),
      });
      this.followers.set(domain, follower);
      started.push(follower.start());
    }
    await Promise.all(started);
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
   * Stops scheduling: keys already asked for and syncs under way finish first (up to 10 s),
   * so a job that ended during shutdown still has its next deadline queued; retries waiting
   * for Redis or PostgreSQL are dropped (the ledger keeps their rows; the next start rebuilds
   * them).
   */
  async close(): Promise<void> {
    await this.background.close(10_000);
    // A follower drops its connection first, so a Redis that is down cannot hold the close.
    await Promise.all([...this.followers.values()].map((f) => f.close()));
    this.followers.clear();
    await Promise.all([...this.queues.values()].map((q) => q.close()));
    this.queues.clear();
  }
}
