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
import { mkdtemp, rm, writeFile } from "node:fs/promises";
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
import type { FaultPoints } from "../../faults";
import { scratchDir } from "../../process";
import { ensureDirBelow, PathRefused, removeRetired, retire, UUID_PATTERN, type ProvenDir } from "../../fs";
import type { CheckoutRecipe } from "./recipe";

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
  /** `git-restore-points.staged` (built and applied beside its path), `.restored` (moved into place). */
  faults?: FaultPoints;
}

export type CheckoutRestore =
  | { kind: "point"; point: StoredPoint }
  /** No restore point: the remote reproduced the checkout. */
  | { kind: "reproducible" }
  /** The restore point expired: start fresh on the branch. */
  | { kind: "fresh"; baseRef: string | null };

const RESTORING = new RegExp(`^\\.restoring-${UUID_PATTERN}$`);

/** Deletes the directory `name` of `parent` (renamed to a `.trash` name, then removed; never through a link). */
async function discard(parent: ProvenDir, name: string): Promise<void> {
  const info = await parent.lstatEntry(name);
  if (info === null || !info.isDirectory()) return;
  try {
    await removeRetired(parent, await retire(parent, name, ".trash", { dev: info.dev, ino: info.ino }));
  } catch (error) {
    if (error instanceof PathRefused && (error.reason === "missing" || error.reason === "identity_changed"))
      return;
    throw error;
  }
}

/** The directory `target` below the instance, its missing levels made one at a time (never through a link). */
async function placeBelow(deps: RestoreDeps, target: string): Promise<ProvenDir> {
  const dir = await ensureDirBelow(deps.instanceRoot, target);
  if (typeof dir === "string")
    throw new RestoreRefused("unsafe_workspace_path", `${target} is not a real directory below the instance`);
  return dir;
}

/** The clone a worktree belongs to, cloned again from the repository when it is gone. */
async function ensureClone(deps: RestoreDeps, recipe: CheckoutRecipe): Promise<SafeRepository> {
  const parent = await placeBelow(deps, path.dirname(recipe.clone));
  const name = path.basename(recipe.clone);
  const info = await parent.lstatEntry(name);
  if (info !== null && !info.isDirectory())
    throw new RestoreRefused("unsafe_workspace_path", `${recipe.clone} is not a real directory`);
  if (info === null) {
    const staging = `.restoring-${randomUUID()}`;
    try {
      await runSafeGit(["clone", "-q", "--", recipe.repoUrl, parent.join(staging)], {
        cwd: os.tmpdir(),
        env: remoteEnv(),
        signal: deps.signal,
      });
      await parent.rename(staging, name);
    } finally {
      await discard(parent, staging);
    }
  }
  const repo = await openSafeRepository(recipe.clone, { signal: deps.signal });
  if (repo.linked || repo.worktree === undefined) {
    throw new RestoreRefused("unexpected_git_layout", `${recipe.clone} is not a clone`);
  }
  return repo;
}

/** Removes `.restoring-*` worktrees and directories an interrupted attempt left in `parent`. */
async function removeLeftovers(clone: SafeRepository | null, parent: ProvenDir): Promise<void> {
  const names = (await parent.list()).map((e) => e.name).filter((n) => RESTORING.test(n));
  for (const name of names) {
    if (clone) await clone.git(["worktree", "remove", "--force", parent.join(name)], { okCodes: [0, 128] });
    await discard(parent, name);
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

/**
 * Fetches the repository's branches into the clone's remote-tracking refs, never through the
 * clone's own config: a `git fetch <url>` run in the clone follows its `url.<x>.insteadOf`, so
 * an agent could send Reclaim's fetch to any repository Reclaim can reach and have it land in
 * the shared clone. The fetch runs in a throwaway bare repository (a config of Reclaim's own,
 * the clone's objects as alternates, so only what the clone lacks travels); what it brought is
 * carried into the clone as a bundle (`git bundle unbundle`, a file: no URL to rewrite), and
 * the remote-tracking refs are set in one transaction.
 */
async function fetchRepository(repo: SafeRepository, url: string, signal?: AbortSignal): Promise<void> {
  const tmp = await mkdtemp(path.join(await scratchDir(), "fetch-"));
  try {
    const helper = path.join(tmp, "helper.git");
    await runSafeGit(["init", "-q", "--bare", `--object-format=${repo.objectFormat}`, helper], {
      cwd: tmp,
      env: remoteEnv(),
      signal,
    });
    await writeFile(path.join(helper, "objects", "info", "alternates"), `${repo.objectsDir}\n`);
    const env = { ...remoteEnv(), GIT_DIR: helper };
    const inHelper = (args: string[], input?: string) =>
      runSafeGit(args, { cwd: helper, env, signal, ...(input === undefined ? {} : { input }) });
    await inHelper(["fetch", "-q", "--no-tags", "--", url, "+refs/heads/*:refs/heads/*"]);
    const heads = (
      await inHelper(["for-each-ref", "--format=%(objectname) %(refname)", "refs/heads/"])
    ).stdout
      .toString()
      .split("\n")
      .filter(Boolean)
      .map((line) => line.split(" ") as [string, string]);
    if (heads.length === 0) return;
    const have = (await repo.text(["for-each-ref", "--format=%(objectname)"])).split("\n").filter(Boolean);
    const revs = [...heads.map(([, ref]) => ref), ...[...new Set(have)].map((oid) => `^${oid}`)];
    const missing = Number(
      (await inHelper(["rev-list", "--count", "--objects", "--stdin"], revs.join("\n") + "\n")).stdout
        .toString()
        .trim(),
    );
    if (missing > 0) {
      const bundle = path.join(tmp, "fetched.bundle");
      await inHelper(["bundle", "create", "-q", bundle, "--stdin"], revs.join("\n") + "\n");
      await repo.git(["bundle", "unbundle", bundle], { signal });
    }
    const updates = heads.map(
      ([oid, ref]) => `update refs/remotes/origin/${ref.slice("refs/heads/".length)} ${oid}\n`,
    );
    await repo.git(["update-ref", "--stdin"], { input: updates.join(""), signal });
  } finally {
    await rm(tmp, { recursive: true, force: true });
  }
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

/**
 * The branch tracks the upstream the recipe recorded again (a re-cloned shared clone, or a
 * fresh clone, has no branch configuration). Best effort: a remote-tracking ref that is gone
 * leaves the branch without one, which never loses work.
 */
async function setUpstream(recipe: CheckoutRecipe): Promise<void> {
  if (recipe.headRef === null || !recipe.upstream) return;
  const repo = await openSafeRepository(recipe.path);
  const branch = recipe.headRef.replace(/^refs\/heads\//, "");
  if ((await refOid(repo, recipe.upstream)) === null) return;
  await repo.git(["branch", "-q", `--set-upstream-to=${recipe.upstream}`, branch], { okCodes: [0, 1, 128] });
}

export type RestoreOutcome = "restored" | "already_applied" | "fresh";

export async function restoreCheckout(
  deps: RestoreDeps,
  recipe: CheckoutRecipe,
  restore: CheckoutRestore,
): Promise<RestoreOutcome> {
  // The clone first: a worktree's parent lies inside it (`<clone>/.paperclip/worktrees/`).
  const clone = recipe.kind === "worktree" ? await ensureClone(deps, recipe) : null;
  const parent = await placeBelow(deps, path.dirname(recipe.path));
  const name = path.basename(recipe.path);
  if ((await parent.lstatEntry(name)) !== null) {
    if (await matches(recipe, restore)) return "already_applied";
    throw new RestoreRefused("checkout_in_the_way", `${recipe.path} exists and is not the saved checkout`);
  }
  await removeLeftovers(clone, parent);
  const stagingName = `.restoring-${randomUUID()}`;
  const staging = parent.join(stagingName);
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
    await deps.faults?.hit("git-restore-points.staged");
    await parent.confirm();
    if (clone) await clone.git(["worktree", "move", staging, recipe.path]);
    else await parent.rename(stagingName, name);
    await setUpstream(recipe);
    await deps.faults?.hit("git-restore-points.restored");
  } catch (error) {
    if (clone)
      await clone
        .git(["worktree", "remove", "--force", staging], { okCodes: [0, 128] })
        .catch(() => undefined);
    await discard(parent, stagingName);
    if (clone) await clone.git(["worktree", "prune"], { okCodes: [0] }).catch(() => undefined);
    if (error instanceof GitRestoreError && error.code === "RECLAIM_ERR_GIT_APPLY_BASE_MISSING") {
      throw new RestoreRefused("base_missing", error.message);
    }
    throw error;
  }
  return restore.kind === "fresh" ? "fresh" : "restored";
}
