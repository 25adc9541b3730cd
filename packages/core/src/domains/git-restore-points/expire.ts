/**
 * One workspace's expiration (spec: "Git workspace restore points"), in one transaction that
 * holds Paperclip's locks from the first read to the archive:
 *
 *  1. the issue's source lock and the workspace lifecycle lock (tried: busy is `lock_busy`,
 *     retried in 15 minutes); the row and its facts are read again and judged again under them;
 *  2. the filesystem survey (survey.ts): the checkout and its nested checkouts;
 *  3. git's lock files in every checkout (`git_lock_busy` when git or another job holds one);
 *  4. every checkout captured and judged (checkouts.ts): a refusal keeps the workspace with its
 *     reason; strict mode keeps anything its remote does not reproduce (`unpushed_work`,
 *     `nested_checkout_unpushed`); a dry run stops here (`dry_run`);
 *  5. restore-point mode: each unreproducible checkout sealed, uploaded, read back and
 *     hash-checked (save.ts), as `pending` restore points;
 *  6. every checkout verified against its capture, still under the locks: any difference rolls
 *     back (`rolled_back`, `worktree_changed`): the restore points are dropped, nothing else
 *     changed;
 *  7. in the same transaction: the restore points activated and the workspace archived with
 *     the recipe `paperclip.git-cache-restoration.v2` and its removal plan (recipe.ts); commit.
 * After the commit, the checkout is renamed aside, verified there once more (a change made
 * after step 6 by something git's lock files do not stop moves it back and rolls back), and
 * deleted (removal.ts, finish.ts), still under the git lock files, which go with it.
 */
import {
  assertRestorePointsAllowed,
  GitLocksBusy,
  loadInstanceKey,
  SealError,
  serializeManifest,
  type HeldGitLocks,
} from "@reclaim/shared";
import type { Db, Tx } from "../../db";
import { scratchDir } from "../../process";
import type { FaultPoints } from "../../faults";
import type { DeadlineRequest } from "../../ledger";
import { dueFor, recordActivation, storageFor } from "../../restore-points";
import {
  archiveWorkspace,
  lifecycleGeneration,
  metadataOf,
  subjectFacts,
  tryLockIssueSource,
  tryLockWorkspaceLifecycle,
} from "../../workspaces";
import {
  disposeAll,
  judgeCheckouts,
  lockCheckouts,
  releaseAll,
  verifyCheckouts,
  type Judged,
} from "./checkouts";
import { LIMITS, type GitRestorePointsConfig } from "./config";
import { gitWorkspaces, nextGeneration, projectRepositories, type GitWorkspace } from "./queries";
import { restoredFromManifests } from "./manifests";
import { buildRecipe, buildRemoval } from "./plan";
import { RECIPE_KEY, REMOVAL_KEY, type Removal } from "./recipe";
import { completeRemoval } from "./finish";
import { judgeWorkspace, type Trigger } from "./rules";
import { dropPending, saveCapture, type SaveDeps, type SavedPoint } from "./save";
import { surveyWorkspace } from "./survey";

export interface ExpireContext {
  db: Db;
  config: GitRestorePointsConfig;
  instanceRoot: string;
  now: () => Date;
  faults: FaultPoints;
  dryRun: boolean;
  signal?: AbortSignal;
  /** Deadlines of other domains this made due (restore-point retention's). */
  requestDeadlines(requests: DeadlineRequest[]): void;
}

export type Outcome = "removed" | "dry_run" | "skipped" | "rolled_back";

export interface ExpireResult {
  outcome: Outcome | "finish_removal" | "forget";
  reason?: string;
  detail?: string;
  trigger?: Trigger;
  candidateBytes: number;
  reclaimedBytes: number;
  /** When the workspace is judged again (null: only when a change wakes it). */
  next: { dueAt: Date | null; reason: string };
}

class RolledBack extends Error {
  constructor(
    readonly reason: string,
    detail: string,
  ) {
    super(detail);
  }
}

const skip = (reason: string, dueAt: Date | null, candidateBytes = 0, detail?: string): ExpireResult => ({
  outcome: "skipped",
  reason,
  detail,
  candidateBytes,
  reclaimedBytes: 0,
  next: { dueAt, reason },
});

export async function expireWorkspace(
  ctx: ExpireContext,
  companyId: string,
  workspaceId: string,
): Promise<ExpireResult> {
  const retryAt = () => new Date(ctx.now().getTime() + LIMITS.retryMs);
  const held: HeldGitLocks[] = [];
  let judged: Judged[] = [];
  const saved = new Map<Judged, SavedPoint>();
  let committed: { removal: Removal; result: ExpireResult } | null = null;
  try {
    const decided = await ctx.db.$transaction(
      async (tx): Promise<ExpireResult> => {
        const locked = await lockWorkspace(tx, companyId, workspaceId);
        if (typeof locked === "string") return skip(locked, locked === "lock_busy" ? retryAt() : null);
        const ws = locked;
        const now = ctx.now();
        const facts = ws.source_issue_id
          ? (
              await subjectFacts(
                tx,
                companyId,
                [{ key: ws.id, rootIssueId: ws.source_issue_id, workspaceIds: [ws.id] }],
                now,
              )
            ).get(ws.id)
          : undefined;
        const verdict = judgeWorkspace({ workspace: ws, facts, config: ctx.config, now });
        if (verdict.action === "wait") return skip(verdict.reason, verdict.dueAt);
        if (verdict.action !== "expire")
          return {
            outcome: verdict.action,
            candidateBytes: 0,
            reclaimedBytes: 0,
            next: { dueAt: null, reason: verdict.action },
          };
        if (!ws.repo_url) return skip("no_repository_url", null);

        const survey = await surveyWorkspace(ctx.instanceRoot, ws.cwd!, ctx.signal);
        if (survey.state === "missing") return skip("worktree_missing", null);
        if (survey.state === "unsafe") return skip(survey.reason, null, 0, survey.detail);
        const bytes = survey.allocatedBytes;
        if (survey.unknownNested.length > 0) {
          return skip("unknown_nested_checkout", null, bytes, survey.unknownNested.join(", "));
        }
        try {
          held.push(...(await lockCheckouts([survey.checkout, ...survey.nested])));
        } catch (error) {
          if (error instanceof GitLocksBusy) return skip("git_lock_busy", retryAt(), bytes, error.message);
          throw error;
        }
        const judgement = await judgeCheckouts(
          { survey: survey.checkout, remoteUrl: ws.repo_url },
          survey.nested,
          await projectRepositories(tx, companyId, ws.project_id),
          {
            tmpDir: await scratchDir(),
            signal: ctx.signal,
            restoredFrom: await restoredFromManifests(tx, companyId, metadataOf(ws.metadata)),
          },
        );
        if (judgement.state === "blocked") return skip(judgement.reason, null, bytes, judgement.detail);
        judged = judgement.checkouts;
        const unreproducible = judged.filter((j) => !j.reproducible);
        if (unreproducible.length > 0 && !ctx.config.restorePointsEnabled) {
          return skip(
            unreproducible[0]!.name === null ? "unpushed_work" : "nested_checkout_unpushed",
            null,
            bytes,
          );
        }
        if (ctx.dryRun) {
          return {
            outcome: "dry_run",
            trigger: verdict.trigger,
            candidateBytes: bytes,
            reclaimedBytes: 0,
            next: { dueAt: null, reason: "dry_run" },
          };
        }
        if (unreproducible.length > 0) {
          const refused = await saveAll(ctx, tx, ws, unreproducible, saved);
          if (refused) return skip(refused, null, bytes);
        }
        await ctx.faults.hit("git-restore-points.saved");
        const difference = await verifyCheckouts(judged, saved, ctx.signal);
        if (difference) throw new RolledBack("worktree_changed", difference);
        await ctx.faults.hit("git-restore-points.verified");

        const at = ctx.now();
        for (const point of saved.values()) {
          // The manifest as its exact text: jsonb would reorder its keys, and verification
          // compares the manifest's own serialization.
          const metadata = { capturedBy: "git-restore-points", manifest: serializeManifest(point.manifest) };
          if ((await recordActivation(tx, point.facts, at, metadata)).count !== 1) {
            throw new RolledBack(
              "restore_point_changed",
              `restore point ${point.restorePointId} is no longer pending`,
            );
          }
        }
        const generation = [...saved.values()][0]?.generation ?? 0;
        const recipe = buildRecipe({
          ws,
          survey,
          judged,
          saved,
          trigger: verdict.trigger,
          generation,
          at,
          mode: ctx.config.restorePointsEnabled ? "restore_point" : "strict",
        });
        const removal = buildRemoval({
          survey,
          judged,
          lockFiles: held.flatMap((h) => h.files),
          lifecycleGeneration: lifecycleGeneration(ws.metadata) + 1,
        });
        const archived = await archiveWorkspace(tx, {
          companyId,
          workspaceId,
          now: at,
          cleanupReason: "git_cache_expired",
          metadata: { [RECIPE_KEY]: recipe, [REMOVAL_KEY]: removal },
        });
        if (archived === null)
          throw new RolledBack("workspace_changed", "the workspace row changed under its locks");
        await ctx.faults.hit("git-restore-points.before-commit");
        const result: ExpireResult = {
          outcome: "removed",
          trigger: verdict.trigger,
          candidateBytes: bytes,
          reclaimedBytes: 0,
          next: { dueAt: null, reason: "expired" },
        };
        committed = { removal, result };
        return result;
      },
      { timeout: LIMITS.expirationTimeoutMs, maxWait: 10_000 },
    );
    if (committed === null) {
      for (const point of saved.values()) await dropPending(saveDeps(ctx), companyId, point.restorePointId);
      return decided;
    }
    const done: { removal: Removal; result: ExpireResult } = committed;
    const at = ctx.now();
    if (saved.size > 0) ctx.requestDeadlines([dueFor(companyId, "activated", at)]);
    await ctx.faults.hit("git-restore-points.archived");
    // The tree renamed aside is verified once more: nothing outside git wrote into it since.
    const removed = await completeRemoval(ctx, companyId, workspaceId, done.removal, held, (at) =>
      verifyCheckouts(judged, saved, ctx.signal, at),
    );
    if (removed.state === "changed") throw new RolledBack("worktree_changed", removed.difference);
    return { ...done.result, reclaimedBytes: removed.reclaimedBytes };
  } catch (error) {
    if (committed === null) {
      for (const point of saved.values()) await dropPending(saveDeps(ctx), companyId, point.restorePointId);
    }
    if (error instanceof RolledBack) {
      return {
        outcome: "rolled_back",
        reason: error.reason,
        detail: error.message,
        candidateBytes: 0,
        reclaimedBytes: 0,
        // Something is changing the worktree: looked at again (captured afresh) in 15 minutes.
        next: { dueAt: retryAt(), reason: error.reason },
      };
    }
    throw error;
  } finally {
    await disposeAll(judged);
    await releaseAll(held);
  }
}

/** Paperclip's two locks, tried; the row read again under them. A string is the skip reason. */
async function lockWorkspace(tx: Tx, companyId: string, workspaceId: string): Promise<GitWorkspace | string> {
  const first = (await gitWorkspaces(tx, companyId, [workspaceId])).get(workspaceId);
  if (!first) return "workspace_missing";
  if (first.source_issue_id && (await tryLockIssueSource(tx, companyId, first.source_issue_id)) === "busy")
    return "lock_busy";
  if (!(await tryLockWorkspaceLifecycle(tx, workspaceId))) return "lock_busy";
  return (await gitWorkspaces(tx, companyId, [workspaceId])).get(workspaceId) ?? "workspace_missing";
}

function saveDeps(ctx: ExpireContext): Pick<SaveDeps, "db" | "now" | "deadlines"> {
  return { db: ctx.db, now: ctx.now, deadlines: (d) => ctx.requestDeadlines(d) };
}

/** Seals each unreproducible checkout into a pending restore point; a refusal is returned. */
async function saveAll(
  ctx: ExpireContext,
  tx: Tx,
  ws: GitWorkspace,
  checkouts: Judged[],
  saved: Map<Judged, SavedPoint>,
): Promise<string | null> {
  const storage = storageFor(ctx.config.storage);
  let instanceKey;
  try {
    instanceKey = await loadInstanceKey(ctx.config.instanceKey);
    assertRestorePointsAllowed(storage.kind, instanceKey.source);
  } catch (error) {
    if (error instanceof SealError && error.code === "RECLAIM_ERR_RESTORE_POINTS_REFUSED")
      return "restore_points_refused";
    throw error;
  }
  const generation = await nextGeneration(tx, ws.company_id, ws.id);
  const deps: SaveDeps = { ...saveDeps(ctx), storage, instanceKey, faults: ctx.faults };
  for (const j of checkouts) {
    const point = await saveCapture(
      deps,
      {
        companyId: ws.company_id,
        workspaceId: ws.id,
        sourceIssueId: ws.source_issue_id!,
        generation,
        kind: j.name === null ? "worktree" : "nested_checkout",
        checkoutName: j.name,
      },
      j.capture,
    );
    saved.set(j, point);
  }
  return null;
}
