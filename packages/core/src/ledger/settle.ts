/**
 * Settling finished jobs: one statement (settle-jobs.sql), atomic on its own, consumes each
 * job's claim (the rows it saw due, unless touched again since), records the deadlines the
 * checks computed, stores the report rows and appends their figures to the reports not yet
 * folded. A crash before it commits leaves the claims in the ledger, so the jobs run again;
 * once `settleJob` resolves, the next deadlines are durable.
 *
 * The jobs of a process that finish while a settlement is on its way to PostgreSQL are
 * settled together by the next statement: one round trip and one commit for all of them,
 * instead of one each. A statement PostgreSQL refuses is tried again job by job, so one job's
 * bad settlement never fails the others'.
 *
 * Folding (fold-reports.sql): the running totals (/metrics) and the rollups (the console) are
 * made of the figures of stored reports, which a fold adds to them in bulk and deletes from
 * the unfolded ones; it also prunes old reports and rollup rows. A settler folds once
 * FOLD_AFTER of its reports wait, or FOLD_DELAY_MS after its first unfolded one, and every
 * reader folds before it reads (`foldReports`): what readers see counts every stored report
 * exactly once, however many processes fold, and whatever a process that died left unfolded.
 * Folds run on the settler's connection, between its settlements.
 */
import { randomUUID } from "node:crypto";
import pg from "pg";
import { runStatement, settlePoolOf, statement, type Db } from "../db";
import type { ClaimedDeadline, DeadlineRequest } from "./deadlines";
import { mergeRequests } from "./deadlines";
import { PRUNE_STATS_PER_REPORT, STATS_RETENTION_DAYS, StatsTally } from "./report-stats";
import { PRUNE_PER_JOB, REPORT_DURATION_BUCKETS, REPORT_TOTAL_SHARDS } from "./report-totals";
import { storedReport, type BatchReport, type NewReport } from "./reports";

/** Exported for the benchmarks, which replay a batch's statements (bench/domains/harness.ts). */
export const SETTLE_JOBS = statement(__dirname, "settle-jobs.sql");
const FOLD_REPORTS = statement(__dirname, "fold-reports.sql");
/** Jobs one statement settles at most. */
const MAX_BATCH = 64;
/** Reports one fold statement takes at most. */
const FOLD_BATCH = 1000;
/** A settler folds once this many of the reports it stored wait for a fold... */
export const FOLD_AFTER = 256;
/** ...or this long after it stored the first of them. */
export const FOLD_DELAY_MS = 1000;

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
}

export function settleJob(db: Db, settlement: Settlement): Promise<Settled> {
  return settlerOf(db).settle(settlement);
}

/**
 * Folds every stored report's figures not yet in the running totals and the rollups into them
 * (this process's and any other's); resolves with how many it folded. Readers of the totals
 * and the rollups call it first.
 */
export function foldReports(db: Db): Promise<number> {
  return settlerOf(db).fold();
}

function settlerOf(db: Db): Settler {
  let settler = settlers.get(db);
  if (!settler) settlers.set(db, (settler = new Settler(db)));
  return settler;
}

const settlers = new WeakMap<Db, Settler>();
/**
 * Settlers made so far by this process. A settler has one statement in flight at a time, so
 * settlers (one per process and database handle) that fold at the same time get different
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
  /** Reports this settler stored since its last fold. */
  private unfolded = 0;
  /** Callers of `fold` waiting for the next one. */
  private folding: { resolve(folded: number): void; reject(error: unknown): void }[] = [];
  /** A fold is due before the next settlement (FOLD_AFTER reports wait). */
  private foldDue = false;
  private foldTimer: NodeJS.Timeout | undefined;

  constructor(private readonly db: Db) {}

  settle(settlement: Settlement): Promise<Settled> {
    return new Promise((resolve, reject) => {
      this.waiting.push({ settlement, resolve, reject });
      this.next();
    });
  }

  fold(): Promise<number> {
    return new Promise((resolve, reject) => {
      this.folding.push({ resolve, reject });
      this.next();
    });
  }

  /** One statement at a time on the settlement connection: a fold when asked for, else the next batch. */
  private next(): void {
    if (this.busy) return;
    if (this.foldDue || this.folding.length > 0) {
      this.busy = true;
      const callers = this.folding.splice(0);
      void this.runFold()
        .then(
          (folded) => callers.forEach((c) => c.resolve(folded)),
          (error: unknown) => callers.forEach((c) => c.reject(error)),
        )
        .finally(() => {
          this.busy = false;
          this.next();
        });
      return;
    }
    if (this.waiting.length === 0) return;
    this.busy = true;
    const batch = this.waiting.splice(0, MAX_BATCH);
    void this.run(batch).finally(() => {
      this.busy = false;
      this.next();
    });
  }

  private async runFold(): Promise<number> {
    clearTimeout(this.foldTimer);
    this.foldTimer = undefined;
    this.foldDue = false;
    this.unfolded = 0;
    try {
      return await foldAll(this.db, this.shard);
    } catch (error) {
      // Left unfolded: tried again later; the next fold of any process takes them too, and
      // readers fold first.
      this.foldLater();
      throw error;
    }
  }

  /** After `stored` more reports: a fold before the next settlement, or one armed for later. */
  private stored(stored: number): void {
    this.unfolded += stored;
    if (this.unfolded >= FOLD_AFTER) this.foldDue = true;
    else this.foldLater();
  }

  private foldLater(): void {
    // A client that was disconnected folds no more.
    if (this.foldTimer || settlePoolOf(this.db).ended) return;
    this.foldTimer = setTimeout(() => {
      this.foldTimer = undefined;
      this.fold().catch(() => undefined);
    }, FOLD_DELAY_MS);
    // A process may exit with reports unfolded: the next fold of any process takes them.
    this.foldTimer.unref();
  }

  private async run(batch: Waiting[]): Promise<void> {
    try {
      const settled = await settleAll(
        this.db,
        batch.map((w) => w.settlement),
      );
      this.stored(batch.length);
      batch.forEach((w, i) => w.resolve(settled[i]!));
    } catch (error) {
      // Refused by PostgreSQL (so nothing of it was committed): each job again, alone. A
      // connection lost on the way may have committed, so those fail as they are.
      if (batch.length === 1 || !(error instanceof pg.DatabaseError)) {
        for (const w of batch) w.reject(error);
        return;
      }
      for (const w of batch) {
        await settleAll(this.db, [w.settlement]).then(
          ([settled]) => {
            this.stored(1);
            w.resolve(settled!);
          },
          (alone: unknown) => w.reject(alone),
        );
      }
    }
  }
}

/** Folds until no unfolded report is left (fold-reports.sql), on the settlement connection. */
async function foldAll(db: Db, shard: number): Promise<number> {
  let total = 0;
  for (;;) {
    const [row] = await runStatement<{ folded: number }>(settlePoolOf(db), FOLD_REPORTS, [
      FOLD_BATCH,
      shard,
      STATS_RETENTION_DAYS,
      PRUNE_STATS_PER_REPORT,
      PRUNE_PER_JOB,
    ]);
    const folded = row?.folded ?? 0;
    total += folded;
    if (folded < FOLD_BATCH) return total;
  }
}

async function settleAll(db: Db, settlements: Settlement[]): Promise<Settled[]> {
  const ids = settlements.map(() => randomUUID());
  await runStatement(settlePoolOf(db), SETTLE_JOBS, settlementValues(ids, settlements));
  return settlements.map((s, i) => ({ report: storedReport(ids[i]!, s.report) }));
}

/**
 * The parameters of settle-jobs.sql that settle `settlements` as report rows `ids`. Exported
 * for the tests of the statement's plan.
 */
export function settlementValues(ids: string[], settlements: Settlement[]): unknown[] {
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
  ];
}
