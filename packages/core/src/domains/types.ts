/**
 * What a retention domain is. Every domain folder (`domains/<id>/`) has the same few files:
 *   config.ts   its env controls, by the names the spec gives them
 *   events.ts   which events and start-up conditions make work due (deadline requests)
 *   survey.ts   filesystem reads outside any lock (listing, identity, byte counting)
 *   rules.ts    the spec's conditions as pure functions of what was read: keep (and why) or remove
 *   *.sql       the database reads the rules need, one query per batch (no N+1)
 *   check.ts    the batch: prepare -> apply (in the job's transaction, under the company lock) -> finish
 *   index.ts    the RetentionDomain value
 * A check that outgrows ~400 lines splits into named parts beside check.ts, which keeps the
 * phases (native-session-backups: batch.ts, copies.ts, leftovers.ts, evidence-expiry.ts).
 *
 * The platform (jobs/run-job.ts) claims the due deadlines, runs the three phases, then in
 * one transaction consumes the claim, records the deadlines the check computed and the
 * report row; the report is also the job's return value and one log line.
 */
import type { Clock } from "../clock";
import type { Env, Option } from "../config";
import type { Db, Tx } from "../db";
import type { EventOf, EventType } from "../events";
import type { FaultPoints } from "../faults";
import type { ClaimedDeadline, DeadlineRequest, Scope } from "../ledger";
import type { Logger } from "../logging";
import type { JobKind } from "../queue";
import type { BatchReporter } from "../jobs/batch-reporter";
import type { WorkspaceReopener } from "../workspaces/reopen/types";
import type { DomainId } from "./ids";

/** Every domain has at least these two controls. */
export interface DomainControls {
  enabled: boolean;
  dryRun: boolean;
}

/** Deadlines a check computes while it runs; recorded when the job settles. */
export interface DeadlineSink {
  /**
   * Work in `scope` (default: the job's scope) of `domain` (default: the job's domain) is due
   * at `dueAt`, for `reason`. Another domain: work this batch made due there (a restore point
   * it activated is due for review by restore-point retention).
   */
  at(reason: string, dueAt: Date, scope?: Scope, domain?: DomainId): void;
  list(): DeadlineRequest[];
}

export interface JobContext<C extends DomainControls = DomainControls> {
  readonly domain: DomainId;
  readonly scope: Scope;
  /** `null` for the instance scope. */
  readonly companyId: string | null;
  readonly kind: JobKind;
  readonly jobId: string;
  readonly config: C;
  /** The domain's dry-run control, or a dry-run sweep: report, change nothing. */
  readonly dryRun: boolean;
  readonly clock: Clock;
  /** The clock's time when the job started; windows are measured from it. */
  readonly startedAt: Date;
  readonly db: Db;
  readonly instanceRoot: string;
  /** The ledger rows that made this job due (empty for a requested sweep). */
  readonly claimed: readonly ClaimedDeadline[];
  /** Aborted when the worker shuts down: stop between entries and request a continuation. */
  readonly signal: AbortSignal;
  readonly report: BatchReporter;
  /**
   * Deadlines the batch computes. A `continue` (the next batch at once, or soon) is recorded
   * only for a deadline job: a requested sweep continues through its report's nextCursor,
   * and a `continue` from it would start a real deadline job on the deadline walk's cursors.
   * The runner (jobs/run-job.ts) applies that rule; checks never test `kind` for it.
   */
  readonly deadlines: DeadlineSink;
  /** `startedAt + ms`: windows and deadlines are measured from the job's start. */
  later(ms: number): Date;
  /**
   * Something in this batch must be tried again: requests the domain's `retry` deadline,
   * `failureRetryMs` (15 minutes) after the job started.
   */
  retryLater(): void;
  /** The walk is not finished: requests the next batch at once (`continue`). */
  continueNow(): void;
  readonly log: Logger;
  readonly faults: FaultPoints;
  /**
   * Continuation cursors, one per named walk. Deadline jobs keep them in the ledger; a
   * requested sweep starts from the cursor it was given and returns where it stopped
   * (`nextCursor`), leaving the deadline jobs' cursors alone. Pass `tx` to move a cursor
   * in the same transaction as the work it covers.
   */
  readCursor(name: string): Promise<string | null>;
  writeCursor(name: string, value: string | null, tx?: Tx): Promise<void>;
  /** Runs `fn` in a new transaction that holds this job's company-scoped lock. */
  locked<T>(fn: (tx: Tx) => Promise<T>): Promise<T>;
}

export interface EventContext<C extends DomainControls = DomainControls> {
  /** For events, the transaction the whole batch is recorded in (all or nothing). */
  readonly db: Db | Tx;
  readonly clock: Clock;
  readonly now: Date;
  readonly config: C;
  readonly log: Logger;
}

/**
 * A domain's handlers, by event type. A handler is called once per request with every event of
 * its type in that request (at least one, in request order), so what it reads of PostgreSQL
 * costs the same few statements for one event or a thousand.
 */
export type EventHandlers<C extends DomainControls> = {
  [T in EventType]?: (
    events: readonly EventOf<T>[],
    ctx: EventContext<C>,
  ) => DeadlineRequest[] | Promise<DeadlineRequest[]>;
};

export interface RetentionDomain<C extends DomainControls = DomainControls, P = unknown, A = unknown> {
  readonly id: DomainId;
  readonly title: string;
  /** The env controls (names and defaults from the spec). */
  readonly options: Record<string, Option<unknown>>;
  readConfig(env: Env): C;
  /**
   * Namespace of the company-scoped advisory lock a job holds (default `reclaim.<id>`).
   * Where the spec says the Paperclip server takes the same lock, this is that namespace.
   */
  readonly lockNamespace?: string;
  /**
   * The key of the company-scoped lock for a job of `scope` (default: the scope). A domain
   * whose work is instance-wide whatever the scope of the request returns one key for all,
   * so a company sweep never interleaves with the instance job on the same files.
   */
  readonly lockKey?: (scope: Scope) => string;
  /** How long after a failed batch the domain tries again (default 15 minutes). */
  readonly failureRetryMs?: number;
  /** Deadlines to request when the scheduler becomes ready ("runs at startup"). */
  onStartup?(ctx: EventContext<C>): DeadlineRequest[] | Promise<DeadlineRequest[]>;
  readonly events?: EventHandlers<C>;
  /** Phase 1, outside any lock: filesystem reads, identity, byte counting. */
  prepare?(ctx: JobContext<C>): Promise<P>;
  /** Phase 2, in the job's transaction holding the company-scoped lock. */
  apply(ctx: JobContext<C>, tx: Tx, prepared: P): Promise<A>;
  /** Phase 3, after commit: deletions, hooks, storage calls. */
  finish?(ctx: JobContext<C>, applied: A): Promise<void>;
  /**
   * Restores the workspaces this domain removed, for the reopen route
   * (POST .../execution-workspaces/:workspaceId/reopen; workspaces/reopen/types.ts). The
   * reopen worker dispatches a closed row to the first domain whose reopener `matches` it,
   * whether the domain's retention is enabled or not.
   */
  readonly reopener?: WorkspaceReopener<C>;
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type AnyDomain = RetentionDomain<any, any, any>;

export function defineDomain<C extends DomainControls, P, A>(
  domain: RetentionDomain<C, P, A>,
): RetentionDomain<C, P, A> {
  return domain;
}
