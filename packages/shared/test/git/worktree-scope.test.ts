/**
 * Rule (spec, "Nested project repository worktrees"): for a worktree of a shared clone only
 * what belongs to it counts: its HEAD, HEAD reflog, ORIG_HEAD, per-worktree index and working
 * tree, and every branch under its own `paperclip/<id>/` prefix with that branch's reflog.
 * Other tasks' branches and the shared clone's history never block and are never captured;
 * reopening recreates the worktree from the shared clone (or a re-clone of it) and applies it.
 */
import { writeFile } from "node:fs/promises";
import path from "node:path";
import { captureWorktree, verifyUnchanged, type CaptureScope } from "../../src";
import { cleanup, clone, git, makeRemote, tempDir } from "./fixture";
import {
  applyStored,
  captureAndStore,
  captureManifest,
  localStorage,
  makeKey,
  repoFacts,
} from "./round-trip";

afterAll(cleanup);
const key = makeKey();
const scopeA: CaptureScope = { kind: "worktree", branchPrefix: "paperclip/aaa/" };

/** One shared clone with three task worktrees, each with work of its own, and unpushed work in the clone. */
async function sharedClone() {
  const root = await tempDir();
  const remote = await makeRemote(root, { "a.txt": "a\n", "b.txt": "b\n" });
  const shared = await clone(remote, path.join(root, "projects", "shared"));
  const add = async (id: string): Promise<string> => {
    const dir = path.join(root, `task-${id}`, ".paperclip-repositories", "repo-1");
    await git(shared, ["worktree", "add", "-q", "-b", `paperclip/${id}/main`, dir, "origin/main"]);
    await git(dir, ["branch", "-q", "--set-upstream-to=origin/main"]);
    return dir;
  };
  const a = await add("aaa");
  const b = await add("bbb");
  const c = await add("ccc");
  // A: unpushed commits, a second branch under its prefix, a reset-away commit, ORIG_HEAD, changes.
  await writeFile(path.join(a, "a.txt"), "a1\n");
  await git(a, ["commit", "-qam", "A unpushed"]);
  await git(a, ["branch", "-q", "paperclip/aaa/feature"]);
  await git(a, ["checkout", "-q", "paperclip/aaa/feature"]);
  await writeFile(path.join(a, "f.txt"), "feature\n");
  await git(a, ["add", "f.txt"]);
  await git(a, ["commit", "-qm", "A feature"]);
  await git(a, ["checkout", "-q", "paperclip/aaa/main"]);
  await writeFile(path.join(a, "b.txt"), "reset away\n");
  await git(a, ["commit", "-qam", "A reset away"]);
  await git(a, ["reset", "-q", "--hard", "HEAD~1"]);
  await writeFile(path.join(a, "b.txt"), "b staged\n");
  await git(a, ["add", "b.txt"]);
  await writeFile(path.join(a, "untracked.txt"), "u\n");
  // B and C: other tasks' unpushed work; the shared clone: a branch of its own, ahead.
  await writeFile(path.join(b, "a.txt"), "b's work\n");
  await git(b, ["commit", "-qam", "B unpushed"]);
  await git(c, ["commit", "-q", "--allow-empty", "-m", "C unpushed"]);
  await git(shared, ["branch", "-q", "someone-else", "paperclip/bbb/main"]);
  return { root, remote, shared, a, b, c };
}

describe("a worktree of a shared clone", () => {
  it("captures only its own HEAD, history and prefix branches; other tasks' branches neither block nor travel", async () => {
    const { root, remote, shared, a, b } = await sharedClone();
    const storage = localStorage(path.join(root, "storage"));
    const stored = await captureAndStore(a, storage, key, { scope: scopeA, nested: true });
    expect(stored.manifest.refs.map((r) => r.name)).toEqual([
      "refs/heads/paperclip/aaa/feature",
      "refs/heads/paperclip/aaa/main",
    ]);
    expect(stored.manifest.remoteTracking).toBeNull();
    // A's three commits (unpushed, feature, reset away) plus the index-blob carrier; none of B's.
    expect(stored.manifest.bundle?.commits).toBe(4);

    // Reopen after the shared clone was lost: a re-clone, a fresh worktree on the remote's commit.
    const reclone = await clone(remote, path.join(root, "projects", "reclone"));
    const target = path.join(root, "reopened", ".paperclip-repositories", "repo-1");
    await git(reclone, ["worktree", "add", "-q", "--detach", target, "origin/main"]);
    await expect(applyStored(target, storage, key, stored, { scope: scopeA })).resolves.toEqual({
      status: "applied",
      keptIgnored: [],
    });
    expect(await repoFacts(target)).toEqual(await repoFacts(a));
    expect(await git(target, ["log", "-1", "--format=%s", "paperclip/aaa/feature"])).toBe("A feature\n");
    const bCommit = (await git(b, ["rev-parse", "HEAD"])).trim();
    await expect(git(reclone, ["cat-file", "-e", bCommit])).rejects.toThrow();
    await expect(git(reclone, ["rev-parse", "-q", "--verify", "refs/heads/someone-else"])).rejects.toThrow();
    void shared;
  });

  it("reopens into the same shared clone after expiration removed the worktree and its own branches", async () => {
    const { root, shared, a } = await sharedClone();
    const storage = localStorage(path.join(root, "storage"));
    const stored = await captureAndStore(a, storage, key, { scope: scopeA });
    const facts = await repoFacts(a);
    await git(shared, ["worktree", "remove", "--force", a]);
    await git(shared, ["branch", "-q", "-D", "paperclip/aaa/main", "paperclip/aaa/feature"]);
    await git(shared, ["worktree", "add", "-q", "--detach", a, "origin/main"]);
    await expect(applyStored(a, storage, key, stored, { scope: scopeA })).resolves.toEqual({
      status: "applied",
      keptIgnored: [],
    });
    expect(await repoFacts(a)).toEqual(facts);
    await expect(verifyUnchanged(a, stored.manifest)).resolves.toEqual({ unchanged: true });
    await git(shared, ["fsck", "--strict", "--no-progress"]);
  });

  it("verify ignores what other tasks and the shared clone do, and sees a change to its own prefix branches", async () => {
    const { shared, a, b, c } = await sharedClone();
    const manifest = await captureManifest(a, { scope: scopeA });
    // Other worktrees commit, reset and branch; the shared clone fetches (remote-tracking refs move).
    await git(b, ["commit", "-q", "--allow-empty", "-m", "B more"]);
    await git(b, ["reset", "-q", "--soft", "HEAD~1"]);
    await git(c, ["branch", "-q", "paperclip/ccc/other"]);
    await git(shared, ["branch", "-q", "-f", "someone-else", "paperclip/ccc/main"]);
    await git(shared, ["update-ref", "refs/remotes/origin/moved", "paperclip/bbb/main"]);
    await expect(verifyUnchanged(a, manifest)).resolves.toEqual({ unchanged: true });
    // Its own prefix: a new branch there (with its reflog) is a change, whoever made it.
    await git(b, ["branch", "-q", "paperclip/aaa/planted-by-b"]);
    const result = await verifyUnchanged(a, manifest);
    expect(result.unchanged ? [] : result.differences.map((d) => d.kind)).toEqual(["refs", "history"]);
  });

  it("a stash in the shared clone still blocks; other worktrees' unpushed branches do not", async () => {
    const { shared, a, b } = await sharedClone();
    void b;
    await expect(captureManifest(a, { scope: scopeA, nested: true })).resolves.toMatchObject({
      scope: scopeA,
    });
    await writeFile(path.join(shared, "a.txt"), "stashed\n");
    await git(shared, ["stash", "-q"]);
    await expect(captureWorktree(a, { base: { kind: "remote" }, scope: scopeA })).rejects.toMatchObject({
      reason: "stash",
    });
  });
});
