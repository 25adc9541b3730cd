/**
 * Removing an expired checkout, after the archive committed, in steps a crash can stop
 * anywhere (the plan, `gitCacheExpirationRemoval` in the row's metadata, was committed with
 * the archive, so a later sweep or a reopen finishes it):
 *
 *  1. the checkout is renamed to its recorded `.expired-<UUID>` name beside it, only if it is
 *     still the directory that was archived (device + inode), and verified there against what
 *     was saved (the expiration's `check`): a difference moves it back and stops here;
 *  2. its worktree registrations (`<clone>/.git/worktrees/<name>`, holding its index, HEAD,
 *     reflog and Reclaim's index.lock / HEAD.lock) are deleted, each only while it still names
 *     the removed checkout;
 *  3. Reclaim's lock files are released (and a dead holder's broken), then nested worktrees'
 *     own branches deleted, each only at its recorded commit (`update-ref -d <ref> <oid>`);
 *  4. the plan is marked `renamed` and the renamed tree deleted (allocated bytes freed);
 *  5. the plan is cleared.
 * Every step checks before it acts and is a no-op when already done, so repeating the whole
 * sequence after a crash is safe. Steps 1 to 3 and the records run holding the workspace
 * lifecycle lock, only while the row's lifecycle generation is the archive's (finish.ts, and
 * the reopen, which finishes a pending removal before it restores).
 */
import { realpath } from "node:fs/promises";
import path from "node:path";
import { breakLeftoverGitLocks, errnoCode, openSafeRepository } from "@reclaim/shared";
import { PathRefused, provenDirBelow, removeRetired, retire, unretire, type ProvenDir } from "../../fs";
import type { FaultPoints } from "../../faults";
import type { Removal } from "./recipe";

const MAX_GITDIR_FILE_BYTES = 4096;

/** Step 1: the checkout moves aside (nothing when it is gone already, or is another directory now). */
export async function renameAside(
  instanceRoot: string,
  removal: Removal,
): Promise<"renamed" | "gone" | "replaced"> {
  const parent = await provenDirBelow(instanceRoot, path.dirname(removal.path));
  if (parent === "missing") return "gone";
  if (parent === "unsafe") return "replaced";
  try {
    await retire(
      parent,
      path.basename(removal.path),
      ".expired",
      removal.identity,
      path.basename(removal.aside),
    );
    return "renamed";
  } catch (error) {
    if (error instanceof PathRefused) return error.reason === "missing" ? "gone" : "replaced";
    throw error;
  }
}

/**
 * Step 2: a registration goes only while it still names the removed checkout's `.git` and
 * that checkout is gone (a reopen re-adds a worktree under a new registration). It is renamed
 * aside in its proven parent and deleted there, never through a link.
 */
async function removeRegistration(instanceRoot: string, adminDir: string, gitdir: string): Promise<void> {
  const found = await registrationNaming(instanceRoot, adminDir, gitdir);
  if (found === null) return;
  if ((await provenDirBelow(instanceRoot, path.dirname(gitdir))) !== "missing") return;
  const { parent, admin } = found;
  try {
    await removeRetired(parent, await retire(parent, path.basename(adminDir), ".trash", admin.identity));
  } catch (error) {
    if (error instanceof PathRefused && (error.reason === "missing" || error.reason === "identity_changed"))
      return;
    throw error;
  }
}

/**
 * A registration folder, proven (never through a link), while its `gitdir` file (read without
 * following a link, at most 4 KiB) still names the removed checkout's `.git`; else null.
 */
async function registrationNaming(
  instanceRoot: string,
  adminDir: string,
  gitdir: string,
): Promise<{ parent: ProvenDir; admin: ProvenDir } | null> {
  // The registration's path is git's (real) path: it is proven from the real instance root.
  const realRoot = await realpath(instanceRoot).catch(() => instanceRoot);
  const parent = await provenDirBelow(realRoot, path.dirname(adminDir));
  if (typeof parent === "string") return null;
  const name = path.basename(adminDir);
  const info = await parent.lstatEntry(name);
  if (info === null || !info.isDirectory()) return null;
  const admin = parent.childFrom(name, info);
  const named = await admin.readFile("gitdir", MAX_GITDIR_FILE_BYTES);
  if (named.status !== "ok" || named.data.toString("utf8").trim() !== gitdir) return null;
  return { parent, admin };
}

/** Step 3: a nested worktree's own branch, only at the commit the removal recorded. */
async function deleteBranch(clone: string, ref: string, oid: string): Promise<void> {
  const repo = await openSafeRepository(clone).catch(() => null);
  if (repo === null) return;
  // Exit 1: the ref is elsewhere or gone: it is not ours to delete any more.
  const deleted = await repo.git(["update-ref", "-d", ref, oid], { okCodes: [0, 1, 128] });
  // Its configuration (upstream) goes with it; the reopen sets it again from the recipe.
  if (deleted.code === 0 && ref.startsWith("refs/heads/")) {
    await repo.git(["config", "--remove-section", `branch.${ref.slice("refs/heads/".length)}`], {
      okCodes: [0, 1, 5, 128],
    });
  }
}

/** The renamed tree goes back to its path (a change was found in it); refused when the path is taken. */
async function moveBack(instanceRoot: string, removal: Removal): Promise<void> {
  const parent = await provenDirBelow(instanceRoot, path.dirname(removal.path));
  if (
    typeof parent === "string" ||
    !(await unretire(parent, path.basename(removal.aside), path.basename(removal.path)))
  )
    throw new Error(`${removal.aside} changed after its verification and cannot go back to ${removal.path}`);
}

/**
 * A tree a stopped run renamed aside but maybe never verified there (the plan is still
 * `pending` and every worktree registration still names it: they go only after the
 * verification passed): back to its path, so the next attempt verifies it in place and renames
 * it again, or a reopen keeps it. Nothing when the path is taken, the aside is gone or not a
 * real directory, or a registration is gone (verified; its index and reflog went with it).
 */
export async function returnUnverified(instanceRoot: string, removal: Removal): Promise<boolean> {
  if (removal.state !== "pending") return false;
  for (const r of removal.registrations) {
    if ((await registrationNaming(instanceRoot, r.adminDir, r.gitdir)) === null) return false;
  }
  const parent = await provenDirBelow(instanceRoot, path.dirname(removal.path));
  if (typeof parent === "string") return false;
  const aside = await parent.lstatEntry(path.basename(removal.aside));
  if (aside === null || !aside.isDirectory()) return false;
  try {
    return await unretire(parent, path.basename(removal.aside), path.basename(removal.path));
  } catch (error) {
    if (errnoCode(error) === "ENOENT") return false;
    throw error;
  }
}

/**
 * Steps 1 to 3, run holding the workspace lifecycle lock (the caller's): the checkout moves
 * aside, its registrations, nested branches and Reclaim's lock files outside it go.
 * `replaced`: another directory is at the path now (never touched); nothing was done.
 * `check`: verifies the tree just renamed aside (given its path there) against what was saved;
 * a difference (something outside git wrote into it after the locked verification) moves it
 * back, with its registrations, branches and lock files untouched (`{ changed }`).
 */
export async function removeCheckout(
  instanceRoot: string,
  removal: Removal,
  faults: FaultPoints,
  /** Releases the lock files this process still holds (before leftovers are broken). */
  release: () => Promise<void> = async () => undefined,
  check?: (aside: string) => Promise<string | null>,
): Promise<"renamed" | "replaced" | { changed: string }> {
  if (removal.state === "renamed") return "renamed";
  const moved = await renameAside(instanceRoot, removal);
  if (moved === "replaced") return "replaced";
  if (moved === "renamed" && check) {
    await faults.hit("git-restore-points.renamed-unverified");
    const difference = await check(removal.aside);
    if (difference !== null) {
      await moveBack(instanceRoot, removal);
      return { changed: difference };
    }
  }
  await faults.hit("git-restore-points.renamed-aside");
  for (const r of removal.registrations) await removeRegistration(instanceRoot, r.adminDir, r.gitdir);
  // The branch ref locks go first: git refuses to delete a ref whose lock file exists. The
  // deletion names the recorded commit, so a branch moved meanwhile is left alone.
  await release();
  await breakLeftoverGitLocks(removal.lockFiles);
  for (const b of removal.branches) await deleteBranch(b.clone, b.ref, b.oid);
  return "renamed";
}

/**
 * Step 4's deletion (no lock needed: the recorded name is this plan's alone). A reopen that
 * finishes the plan may delete it at the same time as the expiration does: whatever the
 * other one removed first is not an error.
 */
export async function deleteAside(instanceRoot: string, removal: Removal): Promise<number> {
  const parent = await provenDirBelow(instanceRoot, path.dirname(removal.aside));
  if (typeof parent === "string") return 0;
  try {
    return await removeRetired(parent, path.basename(removal.aside));
  } catch (error) {
    if (errnoCode(error) === "ENOENT") return 0;
    throw error;
  }
}
