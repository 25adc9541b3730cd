/**
 * The database reads of this domain (SQL in the .sql files beside this one). The reads before
 * the job's transaction (which folders are whose) run as prepared statements on the pool
 * (db/statements.ts): they send up to thousands of folder names, which Prisma's query
 * compiler would spend several times the query's own time on. The checks' reads run in the
 * job's Prisma transaction, on its connection (runStates).
 */
import { runStatementIn, type Db, type Tx } from "../../db";
import { statement } from "../../db/sql";
import { rulesWithUnwrittenSources, sourceTables } from "../sources";
import { SOURCES, type RunState, type SourceRule } from "./rules";

const RUN_OWNERS = statement(__dirname, "run-owners.sql");
const COMPANY_RUNS = statement(__dirname, "company-runs.sql");
const RUN_STATE = statement(__dirname, "run-state.sql");

/**
 * The company of each run this process has read. A run's company never changes, so a company
 * job sends PostgreSQL only the folder names it has not seen yet, instead of every name after
 * its cursor at each batch (a name without a run is asked again each time: its run may
 * appear). It only chooses which folders a batch looks at: every decision reads the run again
 * in the job's transaction. Bounded: emptied when full, and then read again.
 */
const knownOwners = new Map<string, string>();
const KNOWN_OWNERS_MAX = 100_000;

function remember(runId: string, companyId: string): void {
  if (knownOwners.size >= KNOWN_OWNERS_MAX) knownOwners.clear();
  knownOwners.set(runId, companyId);
}

export async function runOwners(db: Db, runIds: string[]): Promise<Map<string, string>> {
  if (runIds.length === 0) return new Map();
  const rows = await runStatementIn<{ id: string; company_id: string }>(db, RUN_OWNERS, [
    JSON.stringify(runIds),
  ]);
  for (const row of rows) remember(row.id, row.company_id);
  return new Map(rows.map((r) => [r.id, r.company_id]));
}

export type CompanyRun = Pick<RunState, "id" | "status" | "finished_at">;

/**
 * The first `limit` of these folders (`runIds`, in name order) that are runs of the company,
 * with their status and finish: one query for the names this process has not seen
 * (`knownOwners`) up to the `limit`-th it knows is the company's (no name after it can be one
 * of the first `limit`), one for the status of the company's first `limit`. A run it knew that
 * is gone (or, were that possible, moved to another company) is forgotten and the next ones are
 * asked instead.
 */
export async function companyRunsInOrder(
  db: Db,
  runIds: readonly string[],
  companyId: string,
  limit: number,
): Promise<CompanyRun[]> {
  // Names not (or no longer) a run of the company.
  const passed = new Set<string>();
  for (;;) {
    const unknown: string[] = [];
    let mine: string[] = [];
    for (const id of runIds) {
      if (passed.has(id)) continue;
      const owner = knownOwners.get(id);
      if (owner === undefined) unknown.push(id);
      else if (owner === companyId && mine.push(id) >= limit) break;
    }
    const owners = await runOwners(db, unknown);
    for (const id of unknown) {
      if (owners.get(id) === companyId) mine.push(id);
      else passed.add(id);
    }
    mine = mine.sort().slice(0, limit);
    if (mine.length === 0) return [];
    const rows = await runStatementIn<CompanyRun>(db, COMPANY_RUNS, [JSON.stringify(mine), companyId, limit]);
    if (rows.length === mine.length) return rows;
    const found = new Set(rows.map((row) => row.id));
    for (const id of mine) {
      if (found.has(id)) continue;
      passed.add(id);
      knownOwners.delete(id);
    }
  }
}

export interface RunStates {
  /** By run id: the runs among the ids asked for. */
  runs: Map<string, RunState>;
  /**
   * The rules whose tables nothing but Reclaim writes here (sources/index.ts), read in the same
   * round trip; when no run was read, every rule the operator did not opt out of (nothing told
   * otherwise: a run judged with these is kept as `source_unavailable`).
   */
  unavailable: Set<SourceRule>;
}

/**
 * Run state for the check, in the job's transaction: on its own connection as a prepared
 * statement where it can be told (the query is large; Prisma's compiler doubled its time),
 * else through `tx`.
 */
export async function runStates(
  tx: Tx,
  runIds: string[],
  assumeEmpty: readonly SourceRule[],
): Promise<RunStates> {
  const tables = sourceTables(SOURCES);
  const rows =
    runIds.length === 0
      ? []
      : await runStatementIn<RunState & { unwritten_tables: string[] }>(tx, RUN_STATE, [
          JSON.stringify(runIds),
          tables,
        ]);
  return {
    runs: new Map(rows.map((r) => [r.id, r])),
    unavailable: rulesWithUnwrittenSources(SOURCES, rows[0]?.unwritten_tables ?? tables, assumeEmpty),
  };
}
