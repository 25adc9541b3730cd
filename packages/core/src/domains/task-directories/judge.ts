/** Judging task directory rows on facts read now: unlocked in prepare, under the locks before archiving. */
import type { Tx } from "../../db";
import { consumersOf, isClosedWorkspaceStatus, subjectFacts, type WorkspaceRow } from "../../workspaces";
import type { JobContext } from "../types";
import { LIMITS, type TaskDirectoriesConfig } from "./config";
import { directoryRefs } from "./queries";
import { judgeRow, type Verdict } from "./rules";
import { directoryKind, taskDirectory } from "./survey";

type Ctx = JobContext<TaskDirectoriesConfig>;

/** Judges a batch of task directory rows on facts read now (in `db`: unlocked, or under the locks in `tx`). */
export async function judgeRows(ctx: Ctx, db: Ctx["db"] | Tx, companyId: string, rows: WorkspaceRow[]) {
  const paths = rows.map((r) => ({
    key: r.id,
    path: taskDirectory(ctx.instanceRoot, companyId, r.source_issue_id!),
  }));
  const facts = await subjectFacts(
    db,
    companyId,
    rows.map((r) => ({ key: r.id, rootIssueId: r.source_issue_id!, workspaceIds: [r.id] })),
    ctx.startedAt,
  );
  const refs = await directoryRefs(db, companyId, paths);
  const verdicts = new Map<string, Verdict>();
  for (const [i, row] of rows.entries()) {
    const f = facts.get(row.id);
    const others = (refs.get(row.id) ?? []).filter(
      (r) => r.id !== row.id && (r.kind === "project_workspace" || !isClosedWorkspaceStatus(r.status ?? "")),
    );
    verdicts.set(
      row.id,
      judgeRow(
        {
          facts: f,
          consumers: f ? consumersOf(f, [row.metadata], ctx.startedAt) : [],
          otherRefs: others.length,
          directory: await directoryKind(ctx.instanceRoot, paths[i]!.path),
        },
        {
          now: ctx.startedAt,
          terminalDelayMs: ctx.config.terminalDelayMs,
          busyRetryMs: LIMITS.busyRetryMs,
          restorePointsUsable: ctx.dryRun || ctx.config.restorePointsEnabled,
        },
      ),
    );
  }
  return verdicts;
}
