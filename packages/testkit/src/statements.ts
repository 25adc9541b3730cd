/**
 * The SQL statements of one batch, for the tests that prove a batch's statements do not grow
 * with its entries (no N+1): every statement pg sends is counted (BEGIN, locks, reads, the
 * settlement's ledger and report writes, COMMIT), and a batch runs through the real job
 * runner (runJob) without BullMQ or the queue syncs, whose statements would land in another
 * batch's count.
 */
import { randomUUID } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import pg from "pg";
import {
  createDb,
  domainRegistry,
  FaultPoints,
  foldReports,
  readDomainConfigs,
  runJob,
  silentLogger,
  systemClock,
  type BatchReport,
  type Db,
  type DeadlineQueues,
  type ReclaimJobData,
} from "@reclaim/core";
import { createTestDatabase, type TestDatabase } from "./postgres";

/** A statement as a pg `Client#query` call sends it: its text, parameters and prepared statement name. */
export interface SentStatement {
  text: string;
  values?: unknown[];
  name?: string;
}

/** The statement a pg `Client#query` call sends, from the call's arguments; null for a call without text. */
export function sentStatement(args: readonly unknown[]): SentStatement | null {
  const [first, second] = args;
  if (typeof first === "string") return { text: first, ...(Array.isArray(second) ? { values: second } : {}) };
  const config = first as { text?: unknown; values?: unknown[]; name?: unknown } | undefined;
  if (typeof config?.text !== "string") return null;
  const values = config.values ?? (Array.isArray(second) ? second : undefined);
  return {
    text: config.text,
    ...(values ? { values } : {}),
    ...(typeof config.name === "string" ? { name: config.name } : {}),
  };
}

/**
 * The first line of the statement a pg `Client#query` call sends (a .sql file's opening comment,
 * BEGIN, a Prisma query), from the call's arguments; undefined for a call without text.
 */
export function statementFirstLine(args: readonly unknown[]): string | undefined {
  return sentStatement(args)?.text.trimStart().split("\n", 1)[0];
}

let sent = 0;
let counting = 0;
/** The first line of each statement sent while a batchRunner job runs (null: none runs). */
let lines: string[] | null = null;
const query = pg.Client.prototype.query;

/** Counts the statements this process sends until the returned stop() (nested calls share one count). */
export function countStatements(): { sent(): number; stop(): void } {
  if (counting++ === 0) {
    pg.Client.prototype.query = function counted(this: pg.Client, ...args: unknown[]) {
      sent += 1;
      if (lines) {
        const line = statementFirstLine(args);
        if (line !== undefined) lines.push(line);
      }
      return (query as (...a: unknown[]) => unknown).apply(this, args);
    } as typeof pg.Client.prototype.query;
  }
  let stopped = false;
  return {
    sent: () => sent,
    stop() {
      if (stopped) return;
      stopped = true;
      if (--counting === 0) pg.Client.prototype.query = query;
    },
  };
}

/**
 * What runJob needs to run a domain's job over `db` and `instanceRoot`, the domains
 * configured from `env`; without `queues`, no BullMQ: what a job schedules stays in the ledger.
 */
export function jobDeps(
  db: Db,
  instanceRoot: string,
  env: Record<string, string> = {},
  queues: DeadlineQueues = {
    syncSoon: () => undefined,
    syncManySoon: () => undefined,
  } as unknown as DeadlineQueues,
) {
  return {
    db,
    queues,
    clock: systemClock,
    instanceRoot,
    log: silentLogger,
    faults: FaultPoints.none(),
    configs: readDomainConfigs(domainRegistry, env).configs,
    domains: domainRegistry,
  };
}

/**
 * Runs one job of `data` (jobDeps) and returns its report, the statements it sent
 * (countStatements must be on) and the first line of each (a .sql file's opening comment,
 * BEGIN, ...). The report is folded before it returns, so the fold is counted in no batch.
 */
export function batchRunner(db: Db, instanceRoot: string, env: Record<string, string> = {}) {
  const deps = jobDeps(db, instanceRoot, env);
  return async (
    data: ReclaimJobData,
  ): Promise<{ report: BatchReport; statements: number; lines: string[] }> => {
    const before = sent;
    const sentLines: string[] = (lines = []);
    let report: BatchReport;
    try {
      report = await runJob(deps, {
        id: `statements-${randomUUID()}`,
        data,
        attemptsMade: 0,
        attempts: 1,
        signal: new AbortController().signal,
      });
    } finally {
      lines = null;
    }
    const statements = sent - before;
    await foldReports(db);
    return { report, statements, lines: sentLines };
  };
}

/** A migrated database and an instance root of their own per `open()`, all removed by `close()`. */
export function scratchInstances() {
  const opened: { database: TestDatabase; db: Db; root: string }[] = [];
  return {
    async open(): Promise<{ db: Db; root: string }> {
      const database = await createTestDatabase();
      const db = createDb(database.url);
      const root = await mkdtemp(path.join(tmpdir(), "reclaim-statements-"));
      opened.push({ database, db, root });
      return { db, root };
    },
    async close(): Promise<void> {
      for (const { database, db, root } of opened.splice(0)) {
        await db.$disconnect();
        await database.drop();
        await rm(root, { recursive: true, force: true });
      }
    },
  };
}

/**
 * A statements test file's setup: statements counted and scratch instances opened for its
 * tests, all stopped and removed after them (this registers the afterAll hook: call it at the
 * top of the file). Returns the scratch instances.
 */
export function statementsTestFile(): ReturnType<typeof scratchInstances> {
  const counter = countStatements();
  const scratch = scratchInstances();
  afterAll(async () => {
    counter.stop();
    await scratch.close();
  });
  return scratch;
}
