/** The database reads of this domain (SQL in the .sql files beside this one). */
import type { Db, Tx } from "../../db";
import { sqlFile } from "../../db/sql";
import type { RunState } from "./rules";

export async function runOwners(db: Db | Tx, runIds: string[]): Promise<Map<string, string>> {
  if (runIds.length === 0) return new Map();
  const rows = await db.$queryRawUnsafe<{ id: string; company_id: string }[]>(
    sqlFile(__dirname, "run-owners.sql"),
    JSON.stringify(runIds),
  );
  return new Map(rows.map((r) => [r.id, r.company_id]));
}

export async function runStates(tx: Tx, runIds: string[]): Promise<Map<string, RunState>> {
  if (runIds.length === 0) return new Map();
  const rows = await tx.$queryRawUnsafe<RunState[]>(
    sqlFile(__dirname, "run-state.sql"),
    JSON.stringify(runIds),
  );
  return new Map(rows.map((r) => [r.id, r]));
}
