/**
 * One job, start to finish (the BullMQ processor of every domain calls this):
 *
 *   claim    the ledger rows due now (deadline jobs), before the check reads anything:
 *            before prepare, or with the lock when the domain has no prepare phase
 *   prepare  domain phase 1, outside any lock
 *   apply    domain phase 2, in a Prisma interactive transaction holding the company lock
 *   finish   domain phase 3, after commit
 *   settle   one statement: consume the claim, record the computed deadlines, insert the
 *            report row (adding it to the domain's running totals), prune a few reports past
 *            their retention (ledger/settle.ts)
 *
 * A retryable failure before the last attempt is rethrown with nothing consumed, so BullMQ's
 * retry (or another worker, if this one dies) repeats the same job; checks are idempotent.
 * On the last attempt, or a permanent failure, the report records the error and the domain's
 * failure-retry deadline (15 minutes) is requested instead.
 */
import { UnrecoverableError } from "bullmq";
import type { Clock } from "../clock";
import { DAY_MS, MINUTE_MS } from "../clock";
import { workerOptions, type Env } from "../config";
import { domainLockNamespace, lockedTransaction, prismaTransaction, type Db } from "../db";
import type { AnyDomain, DeadlineSink, DomainControls, JobContext } from "../domains/types";
import type { DomainId } from "../domains/ids";
import type { FaultPoints } from "../faults";
import {
  claimDue,
  companyIdOf,
  keyOf,
  lockAndClaim,
  settleJob,
  type BatchReport,
  type ClaimedDeadline,
  type DeadlineRequest,
  type LedgerKey,
} from "../ledger";
import type { Logger } from "../logging";
import type { DeadlineQueues, ReclaimJobData } from "../queue";
import { BatchReporter } from "./batch-reporter";
import { ledgerCursors, sweepCursors } from "./cursors";
import { describeError, isPermanent } from "./classify";

export const DEFAULT_FAILURE_RETRY_MS = 15 * MINUTE_MS;
const DEFAULT_REPORT_RETENTION_MS = workerOptions.reportRetentionDays.read({}) * DAY_MS;

export interface JobRunnerDeps {
  db: Db;
  queues: DeadlineQueues;
  clock: Clock;
  instanceRoot: string;
  log: Logger;
  faults: FaultPoints;
  /** Domain configs as this process read them at start. */
  configs: ReadonlyMap<DomainId, DomainControls>;
  domains: ReadonlyMap<DomainId, AnyDomain>;
  /** Reports older than this are pruned as new ones are stored (RECLAIM_REPORT_RETENTION_DAYS). */
  reportRetentionMs?: number;
  /** Called with every stored report (callback delivery). */
  onReport?: (report: BatchReport) => Promise<void>;
  /**
   * Called once the job settled, with the earliest deadline it recorded for its own key (null:
   * none): the worker syncs that key once BullMQ has finished the job, at once when that is due
   * now (a continuation, a touched claim), else after gathering it with others.
   */
  onSettled?: (jobId: string, keyDue: Date | null) => void;
}

export interface JobInput {
  id: string;
  data: ReclaimJobData;
  /** Attempts already made before this one. */
  attemptsMade: number;
  attempts: number;
  signal: AbortSignal;
}

class Deadlines implements DeadlineSink {
  private readonly requests: DeadlineRequest[] = [];
  constructor(
    private readonly domain: DomainId,
    private readonly scope: string,
    private readonly kind: ReclaimJobData["kind"],
  ) {}
  at(reason: string, dueAt: Date, scope = this.scope, domain: DomainId = this.domain): void {
    // The one continuation rule: a requested sweep continues through its report's
    // nextCursor, never through the ledger. A `continue` deadline from it would start a real
    // (not dry-run) deadline job on the deadline walk's own cursors.
    if (reason === "continue" && this.kind === "sweep") return;
    this.requests.push({ domain, scope, reason, dueAt });
  }
  list(): DeadlineRequest[] {
    return this.requests;
  }
}

export function configOf(domain: AnyDomain, env: Env): DomainControls {
  return domain.readConfig(env);
}

export async function runJob(deps: JobRunnerDeps, input: JobInput): Promise<BatchReport> {
  const { db, clock } = deps;
  const domainId = input.data.domain as DomainId;
  const domain = deps.domains.get(domainId);
  const config = deps.configs.get(domainId);
  if (!domain || !config)
    throw new UnrecoverableError(`domain ${input.data.domain} is not served by this worker`);

  const key: LedgerKey = { domain: domainId, scope: input.data.scope };
  const startedAt = clock.now();
  const claimed: ClaimedDeadline[] = [];
  const claimFirst = input.data.kind === "deadline" && domain.prepare !== undefined;
  const claimWithLock = input.data.kind === "deadline" && domain.prepare === undefined;
  const claim = claimFirst ? await claimDue(db, key, startedAt) : null;
  if (claim) claimed.push(...claim.claimed);
  const report = new BatchReporter();
  const deadlines = new Deadlines(domainId, key.scope, input.data.kind);
  const failureRetryMs = domain.failureRetryMs ?? DEFAULT_FAILURE_RETRY_MS;
  const later = (ms: number) => new Date(startedAt.getTime() + ms);
  const namespace = domain.lockNamespace ?? domainLockNamespace(domainId);
  const lockKey = domain.lockKey?.(key.scope) ?? key.scope;
  const cursors =
    input.data.kind === "sweep"
      ? sweepCursors(input.data.cursor)
      : ledgerCursors(db, key, clock, claim?.cursors);
  const log = deps.log.child({ domain: domainId, companyId: companyIdOf(key.scope), jobId: input.id });

  const ctx: JobContext = {
    domain: domainId,
    scope: key.scope,
    companyId: companyIdOf(key.scope),
    kind: input.data.kind,
    jobId: input.id,
    config,
    dryRun: config.dryRun || input.data.dryRun === true,
    clock,
    startedAt,
    db,
    instanceRoot: deps.instanceRoot,
    claimed,
    signal: input.signal,
    report,
    deadlines,
    later,
    retryLater: () => deadlines.at("retry", later(failureRetryMs)),
    continueNow: () => deadlines.at("continue", startedAt),
    log,
    faults: deps.faults,
    readCursor: cursors.read,
    writeCursor: cursors.write,
    locked: (fn) => lockedTransaction(db, namespace, lockKey, fn),
  };

  let error: string | null = null;
  try {
    const prepared = domain.prepare ? await domain.prepare(ctx) : undefined;
    const applied = claimWithLock
      ? await prismaTransaction(db, async (tx, client) => {
          claimed.push(...(await lockAndClaim(client ?? tx, { namespace, key: lockKey }, key, startedAt)));
          return domain.apply(ctx, tx, prepared);
        })
      : await ctx.locked((tx) => domain.apply(ctx, tx, prepared));
    if (domain.finish) await domain.finish(ctx, applied);
  } catch (failure) {
    if (input.signal.aborted) {
      // Cancelled or shutting down, wherever it stopped (a walk throws AbortError): what was
      // claimed is due again at once for the next worker, and a sweep reports where its
      // cursors stopped. Not a failure, and never retried as one.
      for (const c of claimed) deadlines.at(c.reason, startedAt);
      log.info("batch stopped early", { why: String(input.signal.reason ?? "aborted") });
    } else {
      const lastAttempt = input.attemptsMade + 1 >= input.attempts;
      if (!lastAttempt && !isPermanent(failure)) throw failure;
      error = describeError(failure);
      // The failure-retry deadline, and what made this job due, so work such as start-up
      // discovery is not forgotten because its first attempt failed.
      const retryAt = later(failureRetryMs);
      deadlines.at("retry", retryAt);
      for (const c of claimed) deadlines.at(c.reason, retryAt);
      log.error("batch failed", { error: failure });
    }
  }

  const finishedAt = clock.now();
  // A dry-run sweep (a diagnosis) schedules nothing; a real sweep records only the work it
  // left behind (a retry, a recheck) for the deadline jobs: the sink already dropped its
  // continuations.
  const toRecord = input.data.kind === "sweep" && ctx.dryRun ? [] : deadlines.list();
  const { report: stored } = await settleJob(db, {
    claimed,
    deadlines: toRecord,
    pruneBefore: new Date(finishedAt.getTime() - (deps.reportRetentionMs ?? DEFAULT_REPORT_RETENTION_MS)),
    report: {
      jobId: input.id,
      domain: domainId,
      scope: key.scope,
      dryRun: ctx.dryRun,
      checked: report.checked,
      candidates: report.candidates,
      removed: report.removed,
      candidateBytes: report.candidateBytes,
      reclaimedBytes: report.reclaimedBytes,
      skipped: report.skipped,
      entries: report.entries,
      stats: report.tally.list(),
      error,
      nextCursor: cursors.token(),
      cancelled: input.signal.aborted,
      startedAt,
      finishedAt,
    },
  });

  // Other keys can be scheduled now. This job's own key is still held by the active job
  // (same id) and is synced by the worker once BullMQ has finished it.
  const own = keyOf(key);
  const others = new Map<string, LedgerKey>();
  let ownDue: Date | null = null;
  for (const d of toRecord) {
    const k = { domain: d.domain, scope: d.scope };
    if (input.data.kind === "sweep" || keyOf(k) !== own) others.set(keyOf(k), k);
    else if (!ownDue || d.dueAt < ownDue) ownDue = d.dueAt;
  }
  deps.onSettled?.(input.id, ownDue);
  void deps.queues.syncManySoon([...others.values()], (failure) =>
    log.warn("could not schedule a deadline yet; retrying", { error: failure }),
  );

  const { entries: _entries, ...summary } = stored;
  log.info("job.finished", {
    event: "reclaim.batch",
    kind: input.data.kind,
    reasons: claimed.map((c) => c.reason),
    ...summary,
    nextDeadlines: toRecord,
  });
  if (deps.onReport) {
    // Delivery is the callback queue's job (retried with backoff); it never fails the batch.
    await deps
      .onReport(stored)
      .catch((failure: unknown) => log.warn("report callback not queued", { error: failure }));
  }
  if (error !== null) throw new UnrecoverableError(error);
  return stored;
}
