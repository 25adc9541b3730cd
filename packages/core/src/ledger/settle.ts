/**
 * Settling finished jobs: one statement (settle-jobs.sql), atomic on its own, consumes each
 * job's claim (the rows it saw due, unless touched again since), records the deadlines the
 * checks computed, stores the report rows, adds them to their domains' running totals and
 * prunes a few reports past retention. A crash before it commits leaves the claims in the
 * ledger, so the jobs run again; once `settleJob` resolves, the next deadlines are durable.
 *
 * The jobs of a process that finish while a settlement is on its way to PostgreSQL are
 * settled together by the next statement: one round trip, one commit and one update of the
 * running totals for all of them, instead of one each. A statement PostgreSQL refuses is
 * tried again job by job, so one job's bad settlement never fails the others'.
 */
import { randomUUID } from "node:crypto";
import pg from "pg";
import { DAY_MS } from "../clock";
import { runStatement, settlePoolOf, statement, type Db } from "../db";
import type { ClaimedDeadline, DeadlineRequest } from "./deadlines";
import { mergeRequests } from "./deadlines";
import { PRUNE_STATS_PER_REPORT, STATS_RETENTION_DAYS, StatsTally } from "./report-stats";
import { PRUNE_PER_JOB, REPORT_DURATION_BUCKETS, REPORT_TOTAL_SHARDS } from "./report-totals";
import { storedReport, type BatchReport, type NewReport } from "./reports";

const SETTLE_JOBS = statement(__dirname, "settle-jobs.sql");
/** Jobs one statement settles at most. */
const MAX_BATCH = 64;

export interface Settlement {
  /** The job's claim (`claimDue`), consumed unless touched again meanwhile. */
  claimed: readonly ClaimedDeadline[];
  /** The deadlines the check computed. */
  deadlines: DeadlineRequest[];
  /** The report row; its domain and scope are the job's ledger key. */
  report: NewReport;
  /** Reports of the domain that finished before this are past retention. */
  pruneBefore: Date;
}

export interface Settled {
  report: BatchReport;
  /**
   * When the job's own key is due next as far as the settlement left it (null: no rows); a
   * hint for how soon to sync the key, since others may write rows at any time.
   */
  keyDue: Date | null;
}

export function settleJob(db: Db, settlement: Settlement): Promise<Settled> {
  let settler = settlers.get(db);
  if (!settler) settlers.set(db, (settler = new Settler(db)));
  return settler.settle(settlement);
}

const settlers = new WeakMap<Db, Settler>();
/**
 * Settlers made so far by this process. A settler has one statement in flight at a time, so
 * settlers (one per process and database handle) that settle at the same time get different
 * shards of the running totals: consecutive ones here, and processes started one after another
 * (consecutive pids) mostly too.
 */
let settlersMade = 0;

interface Waiting {
  settlement: Settlement;
  resolve(settled: Settled): void;
  reject(error: unknown): void;
}

class Settler {
  private readonly waiting: Waiting[] = [];
  private busy = false;
  /** The row of each domain's running totals this settler adds to (report-totals.ts). */
  private readonly shard = (process.pid + settlersMade++) % REPORT_TOTAL_SHARDS;

  constructor(private readonly db: Db) {}

  settle(settlement: Settlement): Promise<Settled> {
    return new Promise((resolve, reject) => {
      this.waiting.push({ settlement, resolve, reject });
      this.next();
    });
  }

  private next(): void {
    if (this.busy || this.waiting.length === 0) return;
    this.busy = true;
    const batch = this.waiting.splice(0, MAX_BATCH);
    void this.run(batch).finally(() => {
      this.busy = false;
      this.next();
    });
  }

  private async run(batch: Waiting[]): Promise<void> {
    try {
      const settled = await settleAll(
        this.db,
        this.shard,
        batch.map((w) => w.settlement),
      );
      batch.forEach((w, i) => w.resolve(settled[i]!));
    } catch (error) {
      // Refused by PostgreSQL (so nothing of it was committed): each job again, alone. A
      // connection lost on the way may have committed, so those fail as they are.
      if (batch.length === 1 || !(error instanceof pg.DatabaseError)) {
        for (const w of batch) w.reject(error);
        return;
      }
      for (const w of batch) {
        await settleAll(this.db, this.shard, [w.settlement]).then(
          ([settled]) => w.resolve(settled!),
          (alone: unknown) => w.reject(alone),
        );
      }
    }
  }
}

async function settleAll(db: Db, shard: number, settlements: Settlement[]): Promise<Settled[]> {
  const ids = settlements.map(() => randomUUID());
  const rows = await runStatement<{ id: string; key_due: Date | null }>(
    settlePoolOf(db),
    SETTLE_JOBS,
    settlementValues(ids, shard, settlements),
  );
  const due = new Map(rows.map((r) => [r.id, r.key_due]));
  return settlements.map((s, i) => ({
    report: storedReport(ids[i]!, s.report),
    keyDue: due.get(ids[i]!) ?? null,
  }));
}

/**
 * The parameters of settle-jobs.sql that settle `settlements` as report rows `ids`, adding to
 * the running totals' row `shard`. Exported for the tests of the statement's plan.
 */
export function settlementValues(ids: string[], shard: number, settlements: Settlement[]): unknown[] {
  // JSON writes the report's dates as ISO strings.
  const jobs = settlements.map(({ report, claimed, pruneBefore }, i) => {
    const seconds = (report.finishedAt.getTime() - report.startedAt.getTime()) / 1000;
    return {
      ...report,
      id: ids[i],
      seconds,
      buckets: REPORT_DURATION_BUCKETS.map((le) => (seconds <= le ? 1 : 0)),
      pruneBefore,
      claimed: claimed.map((c) => ({ reason: c.reason, version: String(c.version) })),
      stats: (report.stats ?? StatsTally.of(report.entries).list()).map((c) => ({
        ...c,
        companyId: c.companyId ?? report.scope,
      })),
    };
  });
  const deadlines = mergeRequests(settlements.flatMap((s) => s.deadlines));
  const now = new Date(Math.max(...settlements.map((s) => s.report.finishedAt.getTime())));
  return [
    JSON.stringify(jobs),
    JSON.stringify(deadlines.map((r) => ({ ...r, dueAt: r.dueAt.toISOString() }))),
    now,
    PRUNE_PER_JOB,
    shard,
    new Date(now.getTime() - STATS_RETENTION_DAYS * DAY_MS),
    PRUNE_STATS_PER_REPORT,
  ];
}
