/**
 * Rule (spec, "Isolated repository sources" and "Converting existing standalone nested
 * clones"): a capture against a shared base bundles exactly the commits the shared clone
 * lacks (the base is what both repositories hold), preserves branch tips, the HEAD reflog and
 * ORIG_HEAD, imports into the shared clone, and applies into a fresh worktree of it; branches
 * can take the worktree's `paperclip/<id>/` prefix there; an earlier tip moves only forward.
 */
import { writeFile } from "node:fs/promises";
import path from "node:path";
import { LOCAL_TRANSFER_LIMITS, type CaptureScope } from "../../src";
import { cleanup, clone, git, makeRemote, tempDir, type Remote } from "./fixture";
import { applyStored, captureAndStore, localStorage, makeKey, repoFacts } from "./round-trip";

afterAll(cleanup);
const key = makeKey();

/**
 * A private clone (isolated source) whose worktree `.paperclip/worktrees/feat` holds unpushed
 * work, and the project's shared clone, which fetched later: each holds commits the other lacks.
 */
async function privateAndShared(): Promise<{
  root: string;
  remote: Remote;
  privateClone: string;
  work: string;
  shared: string;
}> {
  const root = await tempDir();
  const remote = await makeRemote(root, { "a.txt": "a\n", "b.txt": "b\n" });
  const privateClone = await clone(remote, path.join(root, "isolated", "checkout"));
  await git(remote.seed, ["commit", "-q", "--allow-empty", "-m", "upstream after the private clone"]);
  await git(remote.seed, ["push", "-q", "origin", "main"]);
  const shared = await clone(remote, path.join(root, "projects", "shared"));
  const work = path.join(privateClone, ".paperclip", "worktrees", "feat");
  await git(privateClone, ["worktree", "add", "-q", "-b", "feat", work, "origin/main"]);
  await writeFile(path.join(work, "a.txt"), "a1\n");
  await git(work, ["commit", "-qam", "feat 1"]);
  await writeFile(path.join(work, "a.txt"), "a2\n");
  await git(work, ["commit", "-qam", "feat 2"]);
  await git(work, ["commit", "-q", "--allow-empty", "-m", "reset away"]);
  await git(work, ["reset", "-q", "--hard", "HEAD~1"]);
  await writeFile(path.join(work, "b.txt"), "changed\n");
  await writeFile(path.join(work, "new.txt"), "untracked\n");
  return { root, remote, privateClone, work, shared };
}

describe("capture against a shared base", () => {
  it("rehome: bundles only what the shared clone lacks and applies into a fresh worktree of it", async () => {
    const { root, work, shared } = await privateAndShared();
    const storage = localStorage(path.join(root, "storage"));
    const stored = await captureAndStore(work, storage, key, {
      base: { kind: "shared", repository: shared },
      limits: LOCAL_TRANSFER_LIMITS,
    });
    // feat 1, feat 2, reset away: nothing the shared clone already holds.
    expect(stored.manifest.bundle?.commits).toBe(3);
    expect(stored.manifest.base.source).toBe("shared");
    for (const oid of stored.manifest.base.oids)
      await expect(git(shared, ["cat-file", "-t", oid])).resolves.toBe("commit\n");

    const target = path.join(shared, ".paperclip", "worktrees", "feat");
    await git(shared, ["worktree", "add", "-q", "--detach", target, "origin/main"]);
    await expect(applyStored(target, storage, key, stored)).resolves.toEqual({
      status: "applied",
      keptIgnored: [],
    });
    expect(await repoFacts(target)).toEqual(await repoFacts(work));
    await expect(git(shared, ["log", "-g", "--format=%s", "refs/heads/feat"])).resolves.toBe(
      await git(work, ["log", "-g", "--format=%s", "refs/heads/feat"]),
    );
    await git(shared, ["fsck", "--strict", "--no-progress"]);
  });

  it("rehome: a branch the shared clone holds at an earlier tip is fast-forwarded; a diverged one is never moved", async () => {
    const forward = await privateAndShared();
    const storage = localStorage(path.join(forward.root, "storage"));
    // The shared clone got the branch at "feat 1" earlier (not on any remote-tracking ref).
    await git(forward.shared, ["fetch", "-q", forward.privateClone, "refs/heads/feat"]);
    await git(forward.shared, [
      "branch",
      "-q",
      "feat",
      (await git(forward.work, ["rev-parse", "feat~1"])).trim(),
    ]);
    const stored = await captureAndStore(forward.work, storage, key, {
      base: { kind: "shared", repository: forward.shared },
      limits: LOCAL_TRANSFER_LIMITS,
    });
    const target = path.join(forward.shared, ".paperclip", "worktrees", "feat");
    await git(forward.shared, ["worktree", "add", "-q", target, "feat"]);
    await expect(applyStored(target, storage, key, stored)).resolves.toMatchObject({ status: "applied" });
    expect(await repoFacts(target)).toEqual(await repoFacts(forward.work));

    const diverged = await privateAndShared();
    await git(diverged.shared, ["branch", "-q", "feat", "origin/main"]);
    await git(diverged.shared, ["checkout", "-q", "feat"]);
    await git(diverged.shared, ["commit", "-q", "--allow-empty", "-m", "someone else's feat"]);
    await git(diverged.shared, ["checkout", "-q", "main"]);
    const before = await git(diverged.shared, ["for-each-ref"]);
    const objects = await git(diverged.shared, ["count-objects", "-v"]);
    const storage2 = localStorage(path.join(diverged.root, "storage"));
    const stored2 = await captureAndStore(diverged.work, storage2, key, {
      base: { kind: "shared", repository: diverged.shared },
      limits: LOCAL_TRANSFER_LIMITS,
    });
    const target2 = path.join(diverged.shared, ".paperclip", "worktrees", "feat");
    await git(diverged.shared, ["worktree", "add", "-q", "--detach", target2, "origin/main"]);
    await expect(applyStored(target2, storage2, key, stored2)).rejects.toMatchObject({
      code: "RECLAIM_ERR_GIT_APPLY_DIVERGED",
    });
    expect(await git(diverged.shared, ["for-each-ref"])).toBe(before);
    expect(await git(diverged.shared, ["count-objects", "-v"])).toBe(objects);
  });

  it("nested-clone conversion: a standalone clone's branches, tags and history-only commits move under the worktree's prefix", async () => {
    const root = await tempDir();
    const remote = await makeRemote(root, { "a.txt": "a\n" });
    const nested = await clone(remote, path.join(root, "task", ".paperclip-repositories", "repo-1"));
    await git(nested, ["commit", "-q", "--allow-empty", "-m", "main unpushed"]);
    await git(nested, ["branch", "-q", "topic"]);
    await git(nested, ["checkout", "-q", "topic"]);
    await git(nested, ["commit", "-q", "--allow-empty", "-m", "topic unpushed"]);
    await git(nested, ["tag", "-a", "-m", "tagged", "v1"]);
    await git(nested, ["checkout", "-q", "main"]);
    await git(nested, ["update-ref", "refs/remotes/origin/gone", "topic"]);
    await writeFile(path.join(nested, "a.txt"), "uncommitted\n");
    const shared = await clone(remote, path.join(root, "projects", "shared"));

    const storage = localStorage(path.join(root, "storage"));
    const stored = await captureAndStore(nested, storage, key, {
      base: { kind: "shared", repository: shared },
      scope: { kind: "clone" },
      limits: LOCAL_TRANSFER_LIMITS,
    });
    const prefix = "paperclip/abc123/";
    const scope: CaptureScope = { kind: "worktree", branchPrefix: prefix };
    const renameRef = (name: string): string | null =>
      name.startsWith("refs/heads/")
        ? `refs/heads/${prefix}${name.slice("refs/heads/".length)}`
        : `refs/heads/${prefix}tags/${name.slice("refs/tags/".length)}`;
    const target = path.join(root, "task", ".paperclip-repositories", "repo-1.clone-migrating");
    await git(shared, ["worktree", "add", "-q", "--detach", target, "origin/main"]);
    await expect(applyStored(target, storage, key, stored, { scope, renameRef })).resolves.toMatchObject({
      status: "applied",
    });

    const branches = await git(shared, [
      "for-each-ref",
      "--format=%(refname) %(objectname)",
      `refs/heads/${prefix}`,
    ]);
    const expected = [
      `refs/heads/${prefix}main ${(await git(nested, ["rev-parse", "main"])).trim()}`,
      `refs/heads/${prefix}tags/v1 ${(await git(nested, ["rev-parse", "v1^{commit}"])).trim()}`,
      `refs/heads/${prefix}topic ${(await git(nested, ["rev-parse", "topic"])).trim()}`,
    ];
    expect(branches.trim().split("\n")).toEqual(expected);
    const original = await repoFacts(nested);
    const converted = await repoFacts(target);
    expect(converted).toEqual({
      ...original,
      branch: `refs/heads/${prefix}main`,
      status: (original.status as string).replace("# branch.head main", `# branch.head ${prefix}main`),
    });
    // The history-only commit of refs/remotes/origin/gone is in the shared clone, for the
    // conversion to name `paperclip/<id>/remotes/origin/gone`.
    await expect(
      git(shared, ["cat-file", "-t", (await git(nested, ["rev-parse", "origin/gone"])).trim()]),
    ).resolves.toBe("commit\n");
    await git(shared, ["fsck", "--strict", "--no-progress"]);
  });
});
