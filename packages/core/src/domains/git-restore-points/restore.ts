/**
 * Putting one expired checkout back (the reopen's git half): the clone it belongs to is
 * re-cloned if it is gone; the checkout is built at a `.restoring-<UUID>` name beside its
 * path (a worktree of the clone, or a clone of the repository), the restore point applied
 * there (bundle imported, saved commit checked out, index, tracked changes, untracked and
 * ignored files, modes, reflog) and verified, then moved into place (`git worktree move`,
 * or a rename). A checkout never sits at its path half restored: a kill leaves only a
 * `.restoring-*` sibling, which the next attempt removes.
 *
 * A checkout already at its path is `already_applied` when it is the recorded commit and
 * matches its restore point; anything else there is never overwritten (`checkout_in_the_way`).
 * A checkout without a restore point (its remote reproduced it) is re-added on its branch at
 * the recorded commit.
 *
 * `fresh`: the restore point has expired; the checkout is re-added on its branch (its tip
 * when the clone still has it, else a new branch from the base ref), nothing applied.
 */
import { randomUUID } from "node:crypto";
import { lstat, mkdir, readdir, rename, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import {
  applyPayload,
  GitRestoreError,
  open,
  openSafeRepository,
  remoteEnv,
  runSafeGit,
  StorageKey,
  verifyUnchanged,
  type InstanceKey,
  type RestoreManifest,
  type SafeRepository,
  type StorageProvider,
} from "@reclaim/shared";
import { entryKind, UUID_PATTERN } from "../../fs";
import type { CheckoutRecipe } from "./recipe";
import { realDirectoryBelow } from "./survey";

export class RestoreRefused extends Error {
  constructor(
    readonly reason: string,
    detail: string,
  ) {
    super(`${reason}: ${detail}`);
    this.name = "RestoreRefused";
  }
}

export interface StoredPoint {
  storageKey: string;
  /** The sealed object's hash the ledger recorded when it was read back (null: none recorded). */
  sha256: string | null;
  manifest: RestoreManifest;
}

export interface RestoreDeps {
  instanceRoot: string;
  storage: StorageProvider;
  instanceKey: InstanceKey;
  signal?: AbortSignal;
}

export type CheckoutRestore =
  | { kind: "point"; point: StoredPoint }
  /** No restore point: the remote reproduced the checkout. */
  | { kind: "reproducible" }
  /** The restore point expired: start fresh on the branch. */
  | { kind: "fresh"; baseRef: string | null };

const RESTORING = new RegExp(`^\\.restoring-${UUID_PATTERN}$`);

const present = async (target: string): Promise<boolean> => (await entryKind(target)) !== "missing";

/** The clone a worktree belongs to, cloned again from the repository when it is gone. */
async function ensureClone(deps: RestoreDeps, recipe: CheckoutRecipe): Promise<SafeRepository> {
  const where = await realDirectoryBelow(deps.instanceRoot, recipe.clone);
  if (where === "unsafe")
    throw new RestoreRefused("unsafe_workspace_path", `${recipe.clone} is not below the instance`);
  if (where === "missing") {
    const parent = path.dirname(recipe.clone);
    if ((await realDirectoryBelow(deps.instanceRoot, parent)) === "unsafe") {
      throw new RestoreRefused(
        "unsafe_workspace_path",
        `${parent} is not a real directory below the instance`,
      );
    }
    await mkdir(parent, { recursive: true });
    const staging = path.join(parent, `.restoring-${randomUUID()}`);
    try {
      await runSafeGit(["clone", "-q", "--", recipe.repoUrl, staging], {
        cwd: os.tmpdir(),
        env: remoteEnv(),
        signal: deps.signal,
      });
      await rename(staging, recipe.clone);
    } finally {
      await rm(staging, { recursive: true, force: true });
    }
  }
  const repo = await openSafeRepository(recipe.clone, { signal: deps.signal });
  if (repo.linked || repo.worktree === undefined) {
    throw new RestoreRefused("unexpected_git_layout", `${recipe.clone} is not a clone`);
  }
  return repo;
}

/** Removes `.restoring-*` worktrees and directories an interrupted attempt left beside `target`. */
async function removeLeftovers(clone: SafeRepository | null, target: string): Promise<void> {
  const dir = path.dirname(target);
  const names = await readdir(dir).catch(() => [] as string[]);
  for (const name of names.filter((n) => RESTORING.test(n))) {
    const leftover = path.join(dir, name);
    if (clone) await clone.git(["worktree", "remove", "--force", leftover], { okCodes: [0, 128] });
    const stat = await lstat(leftover).catch(() => null);
    if (stat && !stat.isSymbolicLink()) await rm(leftover, { recursive: true, force: true });
  }
  if (clone) await clone.git(["worktree", "prune"], { okCodes: [0] });
}

async function hasCommit(repo: SafeRepository, oid: string): Promise<boolean> {
  const r = await repo.git(["cat-file", "-e", `${oid}^{commit}`], { okCodes: [0, 1, 128] });
  return r.code === 0;
}

async function refOid(repo: SafeRepository, ref: string): Promise<string | null> {
  const r = await repo.git(["rev-parse", "-q", "--verify", `${ref}^{commit}`], { okCodes: [0, 1] });
  return r.code === 0 ? r.stdout.toString().trim() : null;
}

/** Fetches the repository's branches into the clone's remote-tracking refs (safe runner, URL given). */
async function fetchRepository(repo: SafeRepository, url: string, signal?: AbortSignal): Promise<void> {
  await repo.git(["fetch", "-q", "--no-tags", "--", url, "+refs/heads/*:refs/remotes/origin/*"], { signal });
}

interface Start {
  /** `-b <branch>` (a new branch), `--detach`, or nothing (an existing branch). */
  flags: string[];
  commitish: string;
}

const detached = (oid: string): Start => ({ flags: ["--detach"], commitish: oid });

/** What the new worktree is first checked out at, and how (a branch, or detached). */
async function startingPoint(
  repo: SafeRepository,
  recipe: CheckoutRecipe,
  restore: CheckoutRestore,
  signal?: AbortSignal,
): Promise<Start> {
  const branch = recipe.headRef?.replace(/^refs\/heads\//, "") ?? null;
  if (restore.kind === "fresh") {
    if (branch && (await refOid(repo, `refs/heads/${branch}`))) return { flags: [], commitish: branch };
    const base = restore.baseRef ?? "HEAD";
    for (const candidate of [`refs/remotes/origin/${base}`, `refs/heads/${base}`, base]) {
      const oid = await refOid(repo, candidate);
      if (oid) return branch ? { flags: ["-b", branch], commitish: oid } : detached(oid);
    }
    throw new RestoreRefused("base_ref_missing", `${base} is not in ${recipe.clone}`);
  }
  if (!(await hasCommit(repo, recipe.head))) await fetchRepository(repo, recipe.repoUrl, signal);
  if (restore.kind === "reproducible") {
    if (!(await hasCommit(repo, recipe.head))) {
      throw new RestoreRefused(
        "commit_missing",
        `${recipe.head} is neither in ${recipe.clone} nor on its remote`,
      );
    }
    const tip = branch ? await refOid(repo, `refs/heads/${branch}`) : null;
    if (branch && tip === recipe.head) return { flags: [], commitish: branch };
    if (branch && tip === null) return { flags: ["-b", branch], commitish: recipe.head };
    return detached(recipe.head);
  }
  // A restore point: start detached where the clone can check out, apply moves HEAD.
  if (await hasCommit(repo, recipe.head)) return detached(recipe.head);
  for (const oid of restore.point.manifest.base.oids) if (await hasCommit(repo, oid)) return detached(oid);
  const head = await refOid(repo, "HEAD");
  if (head) return detached(head);
  throw new RestoreRefused("commit_missing", `${recipe.clone} has none of the restore point's base commits`);
}

async function applyPoint(deps: RestoreDeps, target: string, point: StoredPoint): Promise<void> {
  await applyPayload(
    target,
    () =>
      open(deps.storage, StorageKey.parse(point.storageKey), deps.instanceKey, {
        ...(point.sha256 ? { expectedSha256: point.sha256 } : {}),
      }),
    point.manifest,
    { signal: deps.signal },
  );
}

/** The checkout at `recipe.path` matches what was saved (`already_applied`). */
async function matches(recipe: CheckoutRecipe, restore: CheckoutRestore): Promise<boolean> {
  if (restore.kind === "point") {
    const result = await verifyUnchanged(recipe.path, restore.point.manifest).catch(() => null);
    return result?.unchanged === true;
  }
  const repo = await openSafeRepository(recipe.path).catch(() => null);
  if (!repo) return false;
  const head = await refOid(repo, "HEAD");
  return restore.kind === "fresh" || head === recipe.head;
}

export type RestoreOutcome = "restored" | "already_applied" | "fresh";

export async function restoreCheckout(
  deps: RestoreDeps,
  recipe: CheckoutRecipe,
  restore: CheckoutRestore,
): Promise<RestoreOutcome> {
  const parentState = await realDirectoryBelow(deps.instanceRoot, path.dirname(recipe.path));
  if (parentState === "unsafe") {
    throw new RestoreRefused(
      "unsafe_workspace_path",
      `${path.dirname(recipe.path)} is not below the instance`,
    );
  }
  if (await present(recipe.path)) {
    if (await matches(recipe, restore)) return "already_applied";
    throw new RestoreRefused("checkout_in_the_way", `${recipe.path} exists and is not the saved checkout`);
  }
  await mkdir(path.dirname(recipe.path), { recursive: true });
  const clone = recipe.kind === "worktree" ? await ensureClone(deps, recipe) : null;
  await removeLeftovers(clone, recipe.path);
  const staging = path.join(path.dirname(recipe.path), `.restoring-${randomUUID()}`);
  try {
    if (clone) {
      const start = await startingPoint(clone, recipe, restore, deps.signal);
      await clone.git(["worktree", "add", "-q", ...start.flags, staging, start.commitish]);
    } else {
      await runSafeGit(["clone", "-q", "--", recipe.repoUrl, staging], {
        cwd: os.tmpdir(),
        env: remoteEnv(),
        signal: deps.signal,
      });
      const repo = await openSafeRepository(staging, { signal: deps.signal });
      if (restore.kind !== "point") {
        const start = await startingPoint(repo, recipe, restore, deps.signal);
        const how = start.flags[0] === "-b" ? ["-B", start.flags[1]!] : start.flags;
        await repo.git(["checkout", "-q", ...how, start.commitish]);
      }
    }
    if (restore.kind === "point") await applyPoint(deps, staging, restore.point);
    if (clone) await clone.git(["worktree", "move", staging, recipe.path]);
    else await rename(staging, recipe.path);
  } catch (error) {
    if (clone)
      await clone
        .git(["worktree", "remove", "--force", staging], { okCodes: [0, 128] })
        .catch(() => undefined);
    await rm(staging, { recursive: true, force: true });
    if (error instanceof GitRestoreError && error.code === "RECLAIM_ERR_GIT_APPLY_BASE_MISSING") {
      throw new RestoreRefused("base_missing", error.message);
    }
    throw error;
  }
  return restore.kind === "fresh" ? "fresh" : "restored";
}
