/**
 * The git workspace reopener (workspaces/reopen/types.ts): the reopen worker hands it a closed
 * git worktree row that carries the recipe, holding the source lock and the
 * workspace lifecycle lock in `tx`. In order:
 *
 *  1. a removal the expiration did not finish: while the checkout is still at its path, it is
 *     kept as it is (nothing was lost) and the workspace made active again (`already_applied`);
 *     otherwise the removal is finished first (registrations, nested branches, the renamed tree);
 *  2. the checkout is put back (restore.ts): its clone re-cloned when gone, the bundle
 *     imported, the saved commit checked out, the restore point applied and verified; then each
 *     nested checkout with its own restore point;
 *  3. in `tx`: the workspace active again (with Paperclip's reopen-pending flag), the recipe
 *     and plan dropped, the restore points superseded, and an `execution_workspace.reopened`
 *     activity row.
 * A restore point that has expired (retention moved it on, or it is gone): the checkout is
 * recreated fresh on its branch, and the answer is `fresh` with the warning the issue comment
 * carries. A failure throws or answers `failed` with a reason: `tx` rolls back and the
 * workspace stays closed, so the run never starts in a new workspace.
 */
import path from "node:path";
import { breakLeftoverGitLocks, loadInstanceKey } from "@reclaim/shared";
import type { Tx } from "../../db";
import { provenDirBelow, sameIdentity, type Identity } from "../../fs";
import { dueFor, storageFor } from "../../restore-points";
import {
  lifecycleGeneration,
  metadataOf,
  reactivateWorkspace,
  recordWorkspaceActivity,
  type ReopenContext,
  type ReopenResult,
  type WorkspaceReopener,
  type WorkspaceRow,
} from "../../workspaces";
import type { GitRestorePointsConfig } from "./config";
import { manifestOf, RESTORED_FROM_KEY } from "./manifests";
import { lockSharedClones } from "./queries";
import { readRecipe, readRemoval, RECIPE_KEY, REMOVAL_KEY, type CheckoutRecipe, type Recipe } from "./recipe";
import { deleteAside, removeCheckout, returnUnverified } from "./removal";
import { restoreCheckout, RestoreRefused, type CheckoutRestore, type RestoreDeps } from "./restore";

type Ctx = ReopenContext<GitRestorePointsConfig>;

export const FRESH_WARNING =
  "This workspace was cleaned up and its saved work has expired: it was recreated fresh on its branch. " +
  "Unpushed and uncommitted work from before the cleanup is no longer available.";

export const gitReopener: WorkspaceReopener<GitRestorePointsConfig> = {
  kind: "git_worktree",
  matches: (row) =>
    row.strategy_type === "git_worktree" && readRecipe(metadataOf(row.metadata)).state !== "absent",
  reopen: (ctx, tx, row) => reopenGitWorkspace(ctx, tx, row),
};

async function reopenGitWorkspace(ctx: Ctx, tx: Tx, row: WorkspaceRow): Promise<ReopenResult> {
  const metadata = metadataOf(row.metadata);
  const recipe = readRecipe(metadata);
  if (recipe.state !== "ok") {
    return {
      outcome: "failed",
      path: row.cwd,
      reason: recipe.state === "invalid" ? "unknown_recipe" : "no_recipe",
    };
  }
  // Re-adding worktrees, importing bundles and removing registrations are serialized per
  // shared clone: every clone this reopen may touch, locked up front in path order.
  await lockSharedClones(
    tx,
    [recipe.value.worktree, ...recipe.value.contents]
      .filter((c) => c.kind === "worktree")
      .map((c) => c.clone),
  );
  const removal = readRemoval(metadata);
  if (removal.state === "ok" && removal.value.lifecycleGeneration === lifecycleGeneration(row.metadata)) {
    const plan = removal.value;
    // A tree renamed aside by an expiration that stopped before verifying it there: kept.
    await returnUnverified(ctx.instanceRoot, plan);
    if (plan.state === "pending" && (await stillThere(ctx.instanceRoot, plan.path, plan.identity))) {
      // Locks a killed expiration left behind; a live one's go when it stops (the row moved on).
      await breakLeftoverGitLocks(plan.lockFiles);
      return finish(ctx, tx, row, recipe.value, "already_applied", [], undefined);
    }
    await removeCheckout(ctx.instanceRoot, plan, ctx.faults);
    await deleteAside(ctx.instanceRoot, plan);
  }
  const deps: RestoreDeps = {
    instanceRoot: ctx.instanceRoot,
    storage: storageFor(ctx.config.storage),
    instanceKey: await loadInstanceKey(ctx.config.instanceKey),
    faults: ctx.faults,
  };
  const used: string[] = [];
  /** Nested checkout name -> the restore point it was restored from (manifests.ts). */
  const restoredFrom: Record<string, string> = {};
  let fresh = false;
  try {
    const main = await how(ctx, tx, row, recipe.value.worktree, recipe.value.worktree.baseRef);
    if (main.kind === "fresh") fresh = true;
    if (main.kind === "point") used.push(recipe.value.worktree.restorePointId!);
    const outcome = await restoreCheckout(deps, recipe.value.worktree, main);
    for (const nested of recipe.value.contents) {
      const restore = await how(ctx, tx, row, nested, null);
      // An expired nested restore point: the checkout is left to provisioning, which clones
      // the project's nested repositories fresh.
      if (restore.kind === "fresh") {
        fresh = true;
        continue;
      }
      if (restore.kind === "point") {
        used.push(nested.restorePointId!);
        restoredFrom[nested.checkoutName] = nested.restorePointId!;
      }
      await restoreCheckout(deps, nested, restore);
    }
    const answer = fresh ? "fresh" : outcome === "already_applied" ? "already_applied" : "restored";
    return finish(ctx, tx, row, recipe.value, answer, used, fresh ? FRESH_WARNING : undefined, restoredFrom);
  } catch (error) {
    if (error instanceof RestoreRefused) return { outcome: "failed", path: row.cwd, reason: error.reason };
    // The payload could not be read or applied (storage, seal, git): nothing was reactivated,
    // the checkout being built was removed; the workspace stays closed and the run fails.
    const code = (error as { code?: unknown }).code;
    if (typeof code === "string" && code.startsWith("RECLAIM_ERR_")) {
      ctx.log.warn("git workspace restore failed", { workspaceId: row.id, error });
      return { outcome: "failed", path: row.cwd, reason: "restore_failed" };
    }
    throw error;
  }
}

/** The archived checkout is still at its path (the same directory, reached without a link). */
async function stillThere(instanceRoot: string, target: string, identity: Identity): Promise<boolean> {
  const parent = await provenDirBelow(instanceRoot, path.dirname(target));
  if (typeof parent === "string") return false;
  const info = await parent.lstatEntry(path.basename(target));
  return info !== null && info.isDirectory() && sameIdentity(identity, { dev: info.dev, ino: info.ino });
}

/** How a checkout comes back: its active restore point, or fresh when it expired, or re-added. */
async function how(
  ctx: Ctx,
  tx: Tx,
  row: WorkspaceRow,
  checkout: CheckoutRecipe,
  baseRef: string | null,
): Promise<CheckoutRestore> {
  if (checkout.restorePointId === null) return { kind: "reproducible" };
  const point = await tx.executionWorkspaceRestorePoint.findFirst({
    where: { id: checkout.restorePointId, companyId: row.company_id, executionWorkspaceId: row.id },
  });
  if (!point || point.status !== "active") return { kind: "fresh", baseRef };
  if (point.storageProvider !== storageFor(ctx.config.storage).kind) {
    throw new RestoreRefused(
      "storage_mismatch",
      `restore point ${point.id} is stored with ${point.storageProvider}`,
    );
  }
  const manifest = manifestOf(point);
  if (manifest === null) throw new RestoreRefused("no_manifest", `restore point ${point.id} has no manifest`);
  return { kind: "point", point: { storageKey: point.storageKey, sha256: point.sha256, manifest } };
}

async function finish(
  ctx: Ctx,
  tx: Tx,
  row: WorkspaceRow,
  recipe: Recipe,
  outcome: "restored" | "already_applied" | "fresh",
  used: string[],
  warning: string | undefined,
  /** Null: the checkouts were not restored here (a removal never finished kept them). */
  restoredFrom: Record<string, string> | null = null,
): Promise<ReopenResult> {
  const now = ctx.clock.now();
  const reactivated = await reactivateWorkspace(tx, {
    companyId: row.company_id,
    workspaceId: row.id,
    now,
    removeKeys: [RECIPE_KEY, REMOVAL_KEY],
    ...(restoredFrom === null ? {} : { metadata: { [RESTORED_FROM_KEY]: restoredFrom } }),
    reopenPending: true,
  });
  if (reactivated === null) return { outcome: "failed", path: row.cwd, reason: "workspace_changed" };
  const points = [recipe.worktree, ...recipe.contents]
    .map((c) => c.restorePointId)
    .filter((id): id is string => id !== null);
  if (points.length > 0) {
    await tx.executionWorkspaceRestorePoint.updateMany({
      where: { id: { in: points }, companyId: row.company_id, status: "active" },
      data: { status: "superseded", deleteAfter: null, retryAt: null, lastError: null, updatedAt: now },
    });
    ctx.deadlines.push(dueFor(row.company_id, "superseded", now));
  }
  const restorePointId = used[0];
  await recordWorkspaceActivity(tx, {
    companyId: row.company_id,
    workspaceId: row.id,
    action: "execution_workspace.reopened",
    details: {
      reason: ctx.request.reason,
      outcome,
      recipe: recipe.recipe,
      restorePointIds: used,
      ...(warning ? { warning } : {}),
    },
    at: now,
  });
  return {
    outcome,
    path: row.cwd,
    ...(restorePointId ? { restorePointId } : {}),
    ...(warning ? { warning } : {}),
  };
}
