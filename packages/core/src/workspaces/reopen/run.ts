/**
 * The reopen worker's one job (see types.ts): locks, re-read, dispatch on the workspace's
 * kind, answer. Runs on a worker, on the host that holds the instance directory.
 */
import type { Clock } from "../../clock";
import type { Db } from "../../db";
import type { DomainId } from "../../domains/ids";
import type { AnyDomain, DomainControls } from "../../domains/types";
import type { FaultPoints } from "../../faults";
import type { DeadlineRequest } from "../../ledger";
import type { Logger } from "../../logging";
import { workspaceRows } from "../facts";
import { lockIssueSource, lockWorkspaceLifecycle } from "../locks";
import { isClosedWorkspaceStatus } from "../vocabulary";
import type { ReopenContext, ReopenRequest, ReopenResult, WorkspaceReopener } from "./types";

export interface ReopenDeps {
  db: Db;
  clock: Clock;
  instanceRoot: string;
  log: Logger;
  faults: FaultPoints;
  domains: ReadonlyMap<DomainId, AnyDomain>;
  configs: ReadonlyMap<DomainId, DomainControls>;
  /** Records deadlines a reopen made due (the deadline queues' `request`). */
  request(deadlines: DeadlineRequest[]): Promise<void>;
}

/** A reopen holds its locks while it restores: up to the snapshot limits, well within this. */
const REOPEN_TRANSACTION_MS = 15 * 60 * 1000;

export async function runReopen(
  deps: ReopenDeps,
  jobId: string,
  request: ReopenRequest,
): Promise<ReopenResult> {
  const log = deps.log.child({ jobId, workspaceId: request.workspaceId, companyId: request.companyId });
  const deadlines: DeadlineRequest[] = [];
  const result = await deps.db
    .$transaction(
      async (tx): Promise<ReopenResult> => {
        const [first] = (await workspaceRows(tx, request.companyId, [request.workspaceId])).values();
        if (!first) return { outcome: "failed", path: null, reason: "workspace_not_found" };
        if (first.source_issue_id) await lockIssueSource(tx, request.companyId, first.source_issue_id);
        await lockWorkspaceLifecycle(tx, request.workspaceId);
        const row = (await workspaceRows(tx, request.companyId, [request.workspaceId])).get(
          request.workspaceId,
        );
        if (!row) return { outcome: "failed", path: null, reason: "workspace_not_found" };
        if (!isClosedWorkspaceStatus(row.status)) return { outcome: "already_applied", path: row.cwd };
        const found = reopenerFor(deps, row);
        if (!found) return { outcome: "failed", path: row.cwd, reason: "not_reopenable" };
        const ctx: ReopenContext = {
          request,
          jobId,
          config: found.config,
          db: deps.db,
          clock: deps.clock,
          instanceRoot: deps.instanceRoot,
          log,
          faults: deps.faults,
          deadlines,
        };
        return found.reopener.reopen(ctx, tx, row);
      },
      { timeout: REOPEN_TRANSACTION_MS },
    )
    .catch((error: unknown): ReopenResult => {
      log.error("reopen failed", { error });
      deadlines.length = 0;
      return { outcome: "failed", path: null, reason: "reopen_error" };
    });
  if (deadlines.length > 0) await deps.request(deadlines);
  log.info("execution workspace reopen", {
    event: "execution_workspace.reopen",
    reason: request.reason,
    ...result,
  });
  return result;
}

function reopenerFor(
  deps: ReopenDeps,
  row: Parameters<WorkspaceReopener["matches"]>[0],
): { reopener: WorkspaceReopener; config: unknown } | null {
  for (const [id, domain] of deps.domains) {
    const reopener = domain.reopener as WorkspaceReopener | undefined;
    const config = deps.configs.get(id);
    if (reopener && reopener.matches(row, config)) return { reopener, config };
  }
  return null;
}
