/**
 * The database reads of this domain (SQL in the .sql files beside this one). The reads before
 * the job's transaction (which folders are whose) run as prepared statements on the pool
 * (db/statements.ts): they send up to thousands of folder names, which Prisma's query
 * compiler would spend several times the query's own time on. The checks' reads run in the
 * job's Prisma transaction, on its connection (runStates).
 */
import { connectionOf, runStatementIn, type Db, type Tx } from "../../db";
import { statement } from "../../db/sql";
import type { RunState } from "./rules";

const RUN_OWNERS = statement(__dirname, "run-owners.sql");
const COMPANY_RUNS = statement(__dirname, "company-runs.sql");
const RUN_STATE = statement(__dirname, "run-state.sql");

export async function runOwners(db: Db, runIds: string[]): Promise<Map<string, string>> {
  if (runIds.length === 0) return new Map();
  const rows = await runStatementIn<{ id: string; company_id: string }>(db, RUN_OWNERS, [
    JSON.stringify(runIds),
  ]);
  return new Map(rows.map((r) => [r.id, r.company_id]));
}

export type CompanyRun = Pick<RunState, "id" | "status" | "finished_at">;

/**
 * One query however many folders: the first `limit` of them (in name order) that are runs of
 * the company, with their status and finish.
 */
export async function companyRunsInOrder(
  db: Db,
  runIds: string[],
  companyId: string,
  limit: number,
): Promise<CompanyRun[]> {
  if (runIds.length === 0) return [];
  return runStatementIn<CompanyRun>(db, COMPANY_RUNS, [JSON.stringify(runIds), companyId, limit]);
}

/**
 * Run state for the check, in the job's transaction: on its own connection as a prepared
 * statement where it can be told (the query is large; Prisma's compiler doubled its time),
 * else through `tx`.
 */
export async function runStates(tx: Tx, runIds: string[]): Promise<Map<string, RunState>> {
  if (runIds.length === 0) return new Map();
  const rows = await runStatementIn<RunState>(connectionOf(tx) ?? tx, RUN_STATE, [JSON.stringify(runIds)]);
  return new Map(rows.map((r) => [r.id, r]));
}
