/**
 * Key syncs in the background (deadline-queues.ts `syncSoon`, `syncFinishedSoon`), for
 * callers that cannot wait or fail: the end of a job, a finished-job event, the events API.
 * The ledger rows are already durable; this only makes the queues catch up, retrying with
 * backoff (1 s doubling to 60 s) until PostgreSQL and Redis answer.
 *
 * Keys are synced in batches (ledger-sync.ts): at once when a lane is free, and as one batch
 * per lane while the lanes are busy. The key of a deadline job that just completed needs the
 * locked sync only if the ledger still has rows for it: a completed job is removed at once,
 * so without rows there is nothing to add or remove, and whoever writes a row later syncs the
 * key after that write, when the finished job is already gone. Such keys are gathered for
 * `FINISHED_GATHER_MS` and one unlocked read per batch tells them apart; a job that leaves
 * work due sooner than that asks for the plain sync instead (apps/worker).
 */
import { keyOf, type LedgerKey } from "../ledger";
import { settlesWithin } from "./connection";

/** Keys one sync transaction covers at most. */
export const SYNC_BATCH = 200;
/** Sync transactions one process runs at once (each holds a pooled connection). */
export const SYNC_LANES = 2;
/** How long the keys of completed jobs are gathered before their one read. */
export const FINISHED_GATHER_MS = 100;

export interface SyncWork {
  /** The locked sync of a batch of keys. */
  sync(keys: LedgerKey[]): Promise<void>;
  /** Of `keys`, those the ledger has rows for (`keyOf`), read without locks. */
  withRows(keys: LedgerKey[]): Promise<Set<string>>;
}

interface Entry {
  key: LedgerKey;
  /** Failed attempts so far. */
  attempt: number;
  /** Its deadline job completed: synced only if the ledger has rows for it. */
  finished: boolean;
  onError?: (error: unknown) => void;
}

export class BackgroundSync {
  /** Closing: only first attempts are still made. Closed: nothing is. */
  private closing = false;
  private closed = false;
  /** Keys of completed jobs waiting for their gather window, by `keyOf`. */
  private readonly gathering = new Map<string, Entry>();
  private gatherTimer: NodeJS.Timeout | undefined;
  /** Keys not yet in a running batch, by `keyOf`. */
  private readonly pending = new Map<string, Entry>();
  private readonly running = new Set<Promise<void>>();
  private flushQueued = false;

  constructor(private readonly work: SyncWork) {}

  soon(keys: LedgerKey[], onError?: (error: unknown) => void, attempt = 0): void {
    if (keys.length === 0 || this.closed || (this.closing && attempt > 0)) return;
    for (const key of keys) {
      const id = keyOf(key);
      this.gathering.delete(id);
      const known = this.pending.get(id);
      if (!known) this.pending.set(id, { key, attempt, finished: false, onError });
      else {
        known.finished = false;
        known.attempt = Math.min(known.attempt, attempt);
        known.onError ??= onError;
      }
    }
    this.flushSoon();
  }

  finished(key: LedgerKey, onError?: (error: unknown) => void): void {
    if (this.closed) return;
    const id = keyOf(key);
    if (this.pending.has(id) || this.gathering.has(id)) return;
    this.gathering.set(id, { key, attempt: 0, finished: true, onError });
    if (this.closing) return this.endGathering();
    this.gatherTimer ??= setTimeout(() => this.endGathering(), FINISHED_GATHER_MS);
  }

  private endGathering(): void {
    clearTimeout(this.gatherTimer);
    this.gatherTimer = undefined;
    for (const [id, entry] of this.gathering) if (!this.pending.has(id)) this.pending.set(id, entry);
    this.gathering.clear();
    this.flushSoon();
  }

  private flushSoon(): void {
    if (this.flushQueued) return;
    this.flushQueued = true;
    // After the current tick: keys asked for together go in one batch.
    setImmediate(() => {
      this.flushQueued = false;
      this.flush();
    });
  }

  /** Starts a batch of pending keys in every free lane. */
  private flush(): void {
    while (this.pending.size > 0 && this.running.size < SYNC_LANES) {
      const batch: Entry[] = [];
      for (const [id, entry] of this.pending) {
        if (batch.length === SYNC_BATCH) break;
        batch.push(entry);
        this.pending.delete(id);
      }
      const done: Promise<void> = this.syncBatch(batch).then(
        () => undefined,
        (error: unknown) => this.retryLater(batch, error),
      );
      this.running.add(done);
      void done.finally(() => {
        this.running.delete(done);
        this.flush();
      });
    }
  }

  private async syncBatch(batch: Entry[]): Promise<void> {
    const finished = batch.filter((e) => e.finished).map((e) => e.key);
    const withRows = finished.length ? await this.work.withRows(finished) : new Set<string>();
    const keys = batch.filter((e) => !e.finished || withRows.has(keyOf(e.key))).map((e) => e.key);
    if (keys.length) await this.work.sync(keys);
  }

  private retryLater(batch: Entry[], error: unknown): void {
    for (const onError of new Set(batch.map((e) => e.onError))) onError?.(error);
    if (this.closing) return;
    for (const attempt of new Set(batch.map((e) => e.attempt))) {
      const entries = batch.filter((e) => e.attempt === attempt);
      const timer = setTimeout(
        () => {
          for (const e of entries) this.soon([e.key], e.onError, attempt + 1);
        },
        Math.min(60_000, 1000 * 2 ** attempt),
      );
      timer.unref();
    }
  }

  /**
   * Stops: keys already asked for and batches under way finish first (up to `waitMs`), so a
   * job that ended during shutdown still has its next deadline queued; retries waiting for
   * Redis or PostgreSQL are dropped (the ledger keeps their rows; the next start rebuilds
   * them).
   */
  async close(waitMs: number): Promise<void> {
    this.closing = true;
    for (const [id, entry] of this.pending) if (entry.attempt > 0) this.pending.delete(id);
    this.endGathering();
    await settlesWithin(this.drained(), waitMs);
    this.closed = true;
    this.pending.clear();
  }

  /** Resolves once no key is pending and no batch runs. */
  private async drained(): Promise<void> {
    while (this.running.size > 0 || this.pending.size > 0) {
      if (this.running.size > 0) await Promise.allSettled([...this.running]);
      else this.flush();
    }
  }
}
