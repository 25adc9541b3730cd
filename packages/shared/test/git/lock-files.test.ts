/**
 * Rule: under the expiration locks (git's `index.lock`, `HEAD.lock` and the current branch's
 * ref lock in the checkout) no git command of an agent can change the checkout; locks a
 * killed worker left behind are broken by the next attempt; git's own locks are never touched.
 */
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { readdir, readFile, rm, symlink, writeFile } from "node:fs/promises";
import path from "node:path";
import { breakLeftoverGitLocks, GitLocksBusy, openSafeRepository, takeGitLocks } from "../../src";
import { cleanup, clone, git, makeRemote, tempDir } from "./fixture";

afterAll(cleanup);

async function checkout(): Promise<{ root: string; work: string; wt: string }> {
  const root = await tempDir();
  const remote = await makeRemote(root, { "a.txt": "a\n" });
  const work = await clone(remote, path.join(root, "work"));
  const wt = path.join(work, ".paperclip", "worktrees", "task-1");
  await git(work, ["worktree", "add", "-q", "-b", "task-1", wt]);
  return { root, work, wt };
}

it("the three lock files stop the agent's git commands until they are released", async () => {
  const { work, wt } = await checkout();
  const repo = await openSafeRepository(wt);
  const held = await takeGitLocks(repo);
  expect(held.files).toEqual([
    path.join(repo.gitDir, "index.lock"),
    path.join(repo.gitDir, "HEAD.lock"),
    path.join(repo.commonDir, "refs", "heads", "task-1.lock"),
  ]);
  await writeFile(path.join(wt, "b.txt"), "b\n");
  await expect(git(wt, ["add", "b.txt"])).rejects.toThrow(/index\.lock/);
  await expect(git(wt, ["commit", "-q", "--allow-empty", "-m", "x"])).rejects.toThrow(/lock/);
  // Another branch of the shared clone is not locked.
  await git(work, ["branch", "other"]);
  await held.release();
  for (const file of held.files) expect(existsSync(file)).toBe(false);
  await git(wt, ["add", "b.txt"]);
  await git(wt, ["commit", "-q", "-m", "b"]);
});

it("a second attempt is busy while the first holds them, and git's own lock is never taken over", async () => {
  const { wt } = await checkout();
  const repo = await openSafeRepository(wt);
  const held = await takeGitLocks(repo);
  await expect(takeGitLocks(repo)).rejects.toEqual(expect.objectContaining({ holder: "reclaim" }));
  await held.release();
  // A lock git itself holds (no marker): busy, and left exactly as it was.
  await writeFile(path.join(repo.gitDir, "HEAD.lock"), "ref: refs/heads/x\n");
  const busy = await takeGitLocks(repo).catch((e: unknown) => e);
  expect(busy).toBeInstanceOf(GitLocksBusy);
  expect((busy as GitLocksBusy).holder).toBe("git");
  expect(await readFile(path.join(repo.gitDir, "HEAD.lock"), "utf8")).toBe("ref: refs/heads/x\n");
  // What the failed attempt took before it met the busy lock is released.
  expect(existsSync(path.join(repo.gitDir, "index.lock"))).toBe(false);
});

it("locks of a worker killed with SIGKILL are broken by the next attempt", async () => {
  const { wt } = await checkout();
  const child = spawn(
    process.execPath,
    ["--import", "tsx", path.join(__dirname, "lock-holder-process.ts"), wt],
    {
      stdio: ["ignore", "pipe", "inherit"],
    },
  );
  await new Promise<void>((resolve) =>
    child.stdout!.on("data", (d: Buffer) => d.toString().includes("locked") && resolve()),
  );
  const repo = await openSafeRepository(wt);
  await expect(takeGitLocks(repo)).rejects.toEqual(expect.objectContaining({ holder: "reclaim" }));
  child.kill("SIGKILL");
  await new Promise((resolve) => child.once("exit", resolve));
  expect(existsSync(path.join(repo.gitDir, "index.lock"))).toBe(true);
  const held = await takeGitLocks(repo);
  await held.release();
  expect(await breakLeftoverGitLocks(held.files)).toEqual([]);
});

it("a ref lock directory planted as a symlink is never written through", async () => {
  const root = await tempDir();
  const remote = await makeRemote(root, { "a.txt": "a\n" });
  const work = await clone(remote, path.join(root, "work"));
  await git(work, ["checkout", "-q", "-b", "paperclip/x/main"]);
  await git(work, ["pack-refs", "--all"]);
  const outside = await tempDir();
  await rm(path.join(work, ".git", "refs", "heads", "paperclip"), { recursive: true, force: true });
  await symlink(outside, path.join(work, ".git", "refs", "heads", "paperclip"));
  const repo = await openSafeRepository(work);
  await expect(takeGitLocks(repo, { headRef: "refs/heads/paperclip/x/main" })).rejects.toBeInstanceOf(
    GitLocksBusy,
  );
  expect(await readdir(outside)).toEqual([]);
});
