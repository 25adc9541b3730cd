/** The domain's database reads (one query each; the workspace facts are packages/core/src/workspaces'). */
import type { Db, Tx } from "../../db";
import { sqlFile } from "../../db/sql";

/** A git worktree workspace, as expiration reads it (git-workspaces.sql). */
export interface GitWorkspace {
  id: string;
  company_id: string;
  project_id: string | null;
  source_issue_id: string | null;
  status: string;
  strategy_type: string;
  cwd: string | null;
  repo_url: string | null;
  base_ref: string | null;
  branch_name: string | null;
  metadata: unknown;
  bound_open: boolean;
  last_touch: Date | null;
}

export async function gitWorkspaces(
  db: Db | Tx,
  companyId: string,
  ids: string[],
): Promise<Map<string, GitWorkspace>> {
  if (ids.length === 0) return new Map();
  const rows = await db.$queryRawUnsafe<GitWorkspace[]>(
    sqlFile(__dirname, "git-workspaces.sql"),
    JSON.stringify(ids),
    companyId,
  );
  return new Map(rows.map((r) => [r.id, r]));
}

export async function projectRepositories(
  db: Db | Tx,
  companyId: string,
  projectId: string | null,
): Promise<string[]> {
  if (projectId === null) return [];
  const rows = await db.$queryRawUnsafe<{ repo_url: string }[]>(
    sqlFile(__dirname, "project-repositories.sql"),
    companyId,
    projectId,
  );
  return rows.map((r) => r.repo_url);
}

export async function untrackedWorkspaces(
  db: Db | Tx,
  domain: string,
): Promise<{ id: string; company_id: string }[]> {
  return db.$queryRawUnsafe(sqlFile(__dirname, "discover.sql"), domain);
}

/** An issue, a workspace or a run of a company; what a row of these queries names. */
export interface CompanyRef {
  companyId: string;
  id: string;
}

/**
 * The git worktree workspaces that changes of `issues` and `workspaces` may concern
 * (affected-workspaces.sql): one statement for any number of them, of any companies.
 */
export async function affectedWorkspaces(
  db: Db | Tx,
  issues: CompanyRef[],
  workspaces: CompanyRef[] = [],
): Promise<CompanyRef[]> {
  if (issues.length === 0 && workspaces.length === 0) return [];
  const rows = await db.$queryRawUnsafe<{ company_id: string; id: string }[]>(
    sqlFile(__dirname, "affected-workspaces.sql"),
    JSON.stringify(issues.map((i) => ({ companyId: i.companyId, issueId: i.id }))),
    JSON.stringify(workspaces.map((w) => ({ companyId: w.companyId, workspaceId: w.id }))),
  );
  return rows.map((r) => ({ companyId: r.company_id, id: r.id }));
}

/** The issues `runs` belong to (run-issues.sql): one statement for any number of runs. */
export async function runIssues(db: Db | Tx, runs: CompanyRef[]): Promise<CompanyRef[]> {
  if (runs.length === 0) return [];
  const rows = await db.$queryRawUnsafe<{ company_id: string; id: string }[]>(
    sqlFile(__dirname, "run-issues.sql"),
    JSON.stringify(runs.map((r) => ({ companyId: r.companyId, runId: r.id }))),
  );
  return rows.map((r) => ({ companyId: r.company_id, id: r.id }));
}

/** The next restore-point generation of a workspace (one more than any it has). */
export async function nextGeneration(db: Db | Tx, companyId: string, workspaceId: string): Promise<number> {
  const row = await db.executionWorkspaceRestorePoint.aggregate({
    where: { companyId, executionWorkspaceId: workspaceId },
    _max: { generation: true },
  });
  return (row._max.generation ?? 0) + 1;
}

/** A sweep's page of the company's workspaces after `after` (null: the first page). */
export async function companyWorkspaces(
  db: Db | Tx,
  companyId: string,
  after: string | null,
  limit: number,
): Promise<string[]> {
  // Unnamed (a raw query), so planned with the cursor's value: see the SQL file.
  const rows = await db.$queryRawUnsafe<{ id: string }[]>(
    sqlFile(__dirname, "company-workspaces.sql"),
    companyId,
    after,
    limit,
  );
  return rows.map((r) => r.id);
}

/**
 * Waits for the locks of the shared clones `clones` (shared-clone-lock.sql), in path order;
 * held until `tx` ends.
 */
export async function lockSharedClones(tx: Tx, clones: Iterable<string>): Promise<void> {
  for (const clone of [...new Set(clones)].sort()) {
    await tx.$queryRawUnsafe(sqlFile(__dirname, "shared-clone-lock.sql"), clone);
  }
}
