/**
 * Paperclip's facts about workspaces and the issue trees that use them (subject-facts.sql,
 * workspace-rows.sql), one query per batch.
 */
import type { Db, Tx } from "../db";
import { sqlFile } from "../db/sql";
import { waitsForReopenConsumption } from "./vocabulary";

/** An execution workspace row, as Reclaim reads it. */
export interface WorkspaceRow {
  id: string;
  company_id: string;
  source_issue_id: string | null;
  mode: string;
  strategy_type: string;
  provider_type: string;
  status: string;
  cwd: string | null;
  closed_at: Date | null;
  metadata: unknown;
  updated_at: Date;
}

export async function workspaceRows(
  db: Db | Tx,
  companyId: string,
  ids: string[],
): Promise<Map<string, WorkspaceRow>> {
  if (ids.length === 0) return new Map();
  const rows = await db.$queryRawUnsafe<WorkspaceRow[]>(
    sqlFile(__dirname, "workspace-rows.sql"),
    JSON.stringify(ids),
    companyId,
  );
  return new Map(rows.map((r) => [r.id, r]));
}

/** An issue tree and the workspace rows that belong to it (see subject-facts.sql). */
export interface Subject {
  key: string;
  rootIssueId: string;
  workspaceIds: string[];
}

export interface SubjectFacts {
  key: string;
  root_exists: boolean;
  root_bound: boolean;
  tree_open: boolean;
  tree_latest_close: Date | null;
  users_open: boolean;
  users_latest_close: Date | null;
  bound_issue_ids: string[];
  live_run: boolean;
  unsettled_finalization: boolean;
  live_lease: boolean;
  live_service: boolean;
  open_recovery: boolean;
}

export async function subjectFacts(
  db: Db | Tx,
  companyId: string,
  subjects: Subject[],
  now: Date,
): Promise<Map<string, SubjectFacts>> {
  if (subjects.length === 0) return new Map();
  const rows = await db.$queryRawUnsafe<SubjectFacts[]>(
    sqlFile(__dirname, "subject-facts.sql"),
    JSON.stringify(subjects),
    companyId,
    now,
  );
  return new Map(rows.map((r) => [r.key, r]));
}

/** What still uses a workspace (the spec's live or unresolved consumers), for logs and reports. */
export type Consumer =
  "live_run" | "unsettled_finalization" | "live_lease" | "live_service" | "open_recovery" | "reopen_pending";

/**
 * The live or unresolved consumers of a workspace: runs of the tree or the workspace queued,
 * running or unfinished, unsettled native run finalizations, live environment or runtime
 * leases, live runtime services, unresolved recovery actions, and a reopen not yet consumed.
 * Empty: nothing uses it.
 */
export function consumersOf(facts: SubjectFacts, workspaceMetadata: unknown[], now: Date): Consumer[] {
  const found: Consumer[] = [];
  if (facts.live_run) found.push("live_run");
  if (facts.unsettled_finalization) found.push("unsettled_finalization");
  if (facts.live_lease) found.push("live_lease");
  if (facts.live_service) found.push("live_service");
  if (facts.open_recovery) found.push("open_recovery");
  if (workspaceMetadata.some((m) => waitsForReopenConsumption(m, now))) found.push("reopen_pending");
  return found;
}
