/**
 * Finishing a committed expiration's removal (removal.ts), now or in a later sweep:
 *
 *  - right after the archive committed, with the git lock files still held since the
 *    verification (`completeRemoval`);
 *  - after a crash (`resumeRemoval`: a closed row whose plan is still recorded): when the
 *    checkout is still at its path, it is locked and verified again first, against the restore
 *    points' manifests (a reproducible checkout: still reproducible at the recorded commit).
 *    A checkout that changed meanwhile is never removed: the workspace is made active again,
 *    its restore points superseded, and the plan and recipe dropped (`rolled_back`).
 * Each step of the plan is recorded under the workspace lifecycle lock, and only while the
 * row's lifecycle generation is the archive's: a reopen raised it, and the plan stops.
 */
import path from "node:path";
import { GitLocksBusy, type HeldGitLocks } from "@reclaim/shared";
import type { Tx } from "../../db";
import { scratchDir } from "../../process";
import { dueFor, supersedeRestorePoint } from "../../restore-points";
import {
  lifecycleGeneration,
  lockWorkspaceLifecycle,
  mergeWorkspaceMetadata,
  metadataOf,
  reactivateWorkspace,
  tryLockWorkspaceLifecycle,
  workspaceRows,
} from "../../workspaces";
import {
  disposeAll,
  judgeCheckouts,
  lockCheckouts,
  releaseAll,
  verifyCheckouts,
  type Judged,
} from "./checkouts";
import { LIMITS } from "./config";
import type { ExpireContext, ExpireResult } from "./expire";
import { RECIPE_KEY, readRecipe, readRemoval, REMOVAL_KEY, type Recipe, type Removal } from "./recipe";
import { restoredFromManifests, storedManifest } from "./manifests";
import { lockSharedClones } from "./queries";
import { deleteAside, removeCheckout, returnUnverified } from "./removal";
import type { SavedPoint } from "./save";
import { surveyWorkspace } from "./survey";

export type RemovalResult =
  | { state: "removed" | "stopped"; reclaimedBytes: number }
  /** The tree renamed aside differed from what was saved: moved back, the workspace active again. */
  | { state: "changed"; reclaimedBytes: 0; difference: string };

/** Verifies the checkouts where they are now (`at` maps a checkout's path to its place aside). */
export type AsideCheck = (at: (checkoutPath: string) => string) => Promise<string | null>;

/** The shared clones a removal touches: those holding its registrations (`<clone>/.git/worktrees/<name>`) and branches. */
function clonesOf(plan: Removal): string[] {
  return [
    ...plan.registrations.map((r) => path.dirname(path.dirname(path.dirname(r.adminDir)))),
    ...plan.branches.map((b) => b.clone),
  ];
}

/** Runs `fn` holding the workspace lifecycle lock, while the row is still the archived one. */
async function whileArchived<T>(
  ctx: Pick<ExpireContext, "db">,
  companyId: string,
  workspaceId: string,
  generation: number,
  fn: (tx: Tx) => Promise<T>,
): Promise<T | "stopped"> {
  return ctx.db.$transaction(
    async (tx) => {
      await lockWorkspaceLifecycle(tx, workspaceId);
      const row = (await workspaceRows(tx, companyId, [workspaceId])).get(workspaceId);
      if (!row || lifecycleGeneration(row.metadata) !== generation) return "stopped" as const;
      return fn(tx);
    },
    { timeout: LIMITS.expirationTimeoutMs, maxWait: 10_000 },
  );
}

/**
 * The removal of a committed expiration (removal.ts), steps 1 to 3 and each record under the
 * lifecycle lock; the deletion of the renamed tree outside it.
 */
export async function completeRemoval(
  ctx: ExpireContext,
  companyId: string,
  workspaceId: string,
  plan: Removal,
  held: HeldGitLocks[],
  /**
   * Verifies the tree once it is renamed aside (no write reaches it through its path any more):
   * a change made after the locked verification (by something git's lock files do not stop)
   * moves it back and makes the workspace active again instead of deleting it.
   */
  check?: AsideCheck,
): Promise<RemovalResult> {
  const record = (tx: Tx, next: Removal | null) =>
    mergeWorkspaceMetadata(tx, { companyId, workspaceId, now: ctx.now(), metadata: { [REMOVAL_KEY]: next } });
  let current = plan;
  if (current.state === "pending") {
    const pending = current;
    const asideOf = (checkoutPath: string): string =>
      checkoutPath === pending.path || checkoutPath.startsWith(`${pending.path}/`)
        ? pending.aside + checkoutPath.slice(pending.path.length)
        : checkoutPath;
    const step = await whileArchived(ctx, companyId, workspaceId, plan.lifecycleGeneration, async (tx) => {
      await lockSharedClones(tx, clonesOf(pending));
      const removed = await removeCheckout(
        ctx.instanceRoot,
        pending,
        ctx.faults,
        () => releaseAll(held),
        check && (() => check(asideOf)),
      );
      if (removed === "replaced") return "replaced" as const;
      if (typeof removed === "object") {
        const row = (await workspaceRows(tx, companyId, [workspaceId])).get(workspaceId);
        const recipe = readRecipe(metadataOf(row?.metadata));
        await reactivateWorkspace(tx, {
          companyId,
          workspaceId,
          now: ctx.now(),
          removeKeys: [RECIPE_KEY, REMOVAL_KEY],
          reopenPending: false,
        });
        return { changed: removed.changed, points: recipe.state === "ok" ? pointsOf(recipe.value) : [] };
      }
      const next: Removal = { ...pending, state: "renamed" };
      await record(tx, next);
      return next;
    });
    if (step === "stopped" || step === "replaced") return { state: "stopped", reclaimedBytes: 0 };
    if ("changed" in step) {
      await supersedeAll(ctx, companyId, step.points);
      return { state: "changed", reclaimedBytes: 0, difference: step.changed };
    }
    current = step;
    await ctx.faults.hit("git-restore-points.registrations-removed");
  }
  const reclaimedBytes = await deleteAside(ctx.instanceRoot, current);
  await ctx.faults.hit("git-restore-points.deleted");
  await whileArchived(ctx, companyId, workspaceId, plan.lifecycleGeneration, (tx) => record(tx, null));
  return { state: "removed", reclaimedBytes };
}

/** A closed row's recorded removal, finished (or rolled back when its checkout changed). */
export async function resumeRemoval(
  ctx: ExpireContext,
  companyId: string,
  workspaceId: string,
): Promise<ExpireResult> {
  const retry = new Date(ctx.now().getTime() + LIMITS.retryMs);
  const base = { candidateBytes: 0, reclaimedBytes: 0 };
  const row = (await workspaceRows(ctx.db, companyId, [workspaceId])).get(workspaceId);
  const metadata = metadataOf(row?.metadata);
  const removal = readRemoval(metadata);
  if (!row || removal.state !== "ok") {
    return {
      ...base,
      outcome: "forget",
      reason: removal.state === "invalid" ? "invalid_removal_plan" : undefined,
      next: { dueAt: null, reason: "forget" },
    };
  }
  const plan = removal.value;
  if (lifecycleGeneration(row.metadata) !== plan.lifecycleGeneration) {
    return { ...base, outcome: "forget", next: { dueAt: null, reason: "reopened" } };
  }
  const result = { ...base, candidateBytes: plan.allocatedBytes };
  if (ctx.dryRun)
    return {
      ...result,
      outcome: "dry_run",
      reason: "removal_pending",
      next: { dueAt: null, reason: "dry_run" },
    };
  const recipe = readRecipe(metadata);
  const held: HeldGitLocks[] = [];
  let judged: Judged[] = [];
  let check: AsideCheck | undefined;
  try {
    if (plan.state === "pending") {
      // Stopped between the rename aside and the verification there: verified in place first.
      await returnUnverified(ctx.instanceRoot, plan);
      const survey = await surveyWorkspace(ctx.instanceRoot, plan.path, ctx.signal);
      if (survey.state === "present") {
        if (recipe.state !== "ok")
          return {
            ...result,
            outcome: "skipped",
            reason: "invalid_recipe",
            next: { dueAt: null, reason: "invalid_recipe" },
          };
        try {
          held.push(...(await lockCheckouts([survey.checkout, ...survey.nested])));
        } catch (error) {
          if (error instanceof GitLocksBusy)
            return {
              ...result,
              outcome: "skipped",
              reason: "git_lock_busy",
              next: { dueAt: retry, reason: "git_lock_busy" },
            };
          throw error;
        }
        const changed = await changedSince(ctx, companyId, recipe.value, survey, metadata);
        judged = changed.judged;
        check = (at) => verifyCheckouts(changed.judged, changed.saved, ctx.signal, at);
        if (changed.difference !== null) {
          await rollBack(ctx, companyId, workspaceId, recipe.value, plan);
          return {
            ...result,
            outcome: "rolled_back",
            reason: "worktree_changed",
            detail: changed.difference,
            // Active again and still due: captured afresh in 15 minutes (something is writing).
            next: { dueAt: retry, reason: "rolled_back" },
          };
        }
      }
    }
    const done = await completeRemoval(ctx, companyId, workspaceId, plan, held, check);
    if (done.state === "stopped")
      return { ...result, outcome: "forget", next: { dueAt: null, reason: "reopened" } };
    if (done.state === "changed")
      return {
        ...result,
        outcome: "rolled_back",
        reason: "worktree_changed",
        detail: done.difference,
        next: { dueAt: retry, reason: "rolled_back" },
      };
    return {
      ...result,
      outcome: "removed",
      reason: "interrupted_removal",
      reclaimedBytes: done.reclaimedBytes,
      next: { dueAt: null, reason: "expired" },
    };
  } finally {
    await disposeAll(judged);
    await releaseAll(held);
  }
}

/** Captures the present checkouts again and compares them with what the archive recorded. */
async function changedSince(
  ctx: ExpireContext,
  companyId: string,
  recipe: Recipe,
  survey: Extract<Awaited<ReturnType<typeof surveyWorkspace>>, { state: "present" }>,
  metadata: Record<string, unknown>,
): Promise<{ difference: string | null; judged: Judged[]; saved: Map<Judged, SavedPoint> }> {
  const restoredFrom = await restoredFromManifests(ctx.db, companyId, metadata);
  const expected = [recipe.worktree, ...recipe.contents];
  const names = survey.nested.map((n) => n.name).sort();
  const recorded = recipe.contents.map((c) => c.checkoutName).sort();
  if (JSON.stringify(names) !== JSON.stringify(recorded) || survey.unknownNested.length > 0) {
    return { difference: "the nested checkouts are not the ones recorded", judged: [], saved: new Map() };
  }
  const judgement = await judgeCheckouts(
    { survey: survey.checkout, remoteUrl: recipe.worktree.repoUrl },
    survey.nested,
    recipe.contents.map((c) => c.repoUrl),
    { tmpDir: await scratchDir(), signal: ctx.signal, restoredFrom },
  );
  if (judgement.state === "blocked")
    return { difference: `${judgement.reason}: ${judgement.detail}`, judged: [], saved: new Map() };
  const saved = new Map<Judged, SavedPoint>();
  for (const j of judgement.checkouts) {
    const entry = expected.find((e) => e.path === j.survey.path);
    if (!entry || entry.head !== j.capture.preview.head.oid) {
      return { difference: `${j.survey.path}: HEAD moved`, judged: judgement.checkouts, saved };
    }
    if (entry.restorePointId === null) {
      if (!j.reproducible)
        return { difference: `${j.survey.path}: no longer reproducible`, judged: judgement.checkouts, saved };
      continue;
    }
    const manifest = await storedManifest(ctx.db, companyId, entry.restorePointId);
    if (manifest === null)
      return {
        difference: `restore point ${entry.restorePointId} is missing`,
        judged: judgement.checkouts,
        saved,
      };
    saved.set(j, { manifest } as SavedPoint);
  }
  // verifyCheckouts compares the reproducible ones with their own fresh capture, which is
  // what the checks above did against the recorded commit already.
  const difference = await verifyCheckouts(
    judgement.checkouts.filter((j) => saved.has(j)),
    saved,
    ctx.signal,
  );
  return { difference, judged: judgement.checkouts, saved };
}

/** The checkout changed after the archive: the workspace is active again, nothing is removed. */
async function rollBack(
  ctx: ExpireContext,
  companyId: string,
  workspaceId: string,
  recipe: Recipe,
  plan: Removal,
): Promise<void> {
  const now = ctx.now();
  await ctx.db.$transaction(async (tx: Tx) => {
    if (!(await tryLockWorkspaceLifecycle(tx, workspaceId)))
      throw new Error("the workspace lifecycle lock is busy");
    const row = (await workspaceRows(tx, companyId, [workspaceId])).get(workspaceId);
    if (!row || lifecycleGeneration(row.metadata) !== plan.lifecycleGeneration) return;
    await reactivateWorkspace(tx, {
      companyId,
      workspaceId,
      now,
      removeKeys: [RECIPE_KEY, REMOVAL_KEY],
      reopenPending: false,
    });
  });
  await supersedeAll(ctx, companyId, pointsOf(recipe));
}

function pointsOf(recipe: Recipe): string[] {
  return [recipe.worktree, ...recipe.contents]
    .map((c) => c.restorePointId)
    .filter((id): id is string => id !== null);
}

/** A rolled-back expiration's restore points: superseded (the worktree they saved is kept). */
async function supersedeAll(ctx: ExpireContext, companyId: string, points: string[]): Promise<void> {
  const now = ctx.now();
  for (const id of points) {
    const result = await supersedeRestorePoint(ctx.db, companyId, id, now).catch(() => null);
    if (result) ctx.requestDeadlines(result.deadlines);
  }
  if (points.length > 0) ctx.requestDeadlines([dueFor(companyId, "superseded", now)]);
}
