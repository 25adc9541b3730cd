/**
 * Rule: what a restore point cannot restore exactly keeps the worktree, with a stable reason
 * code: submodules, special git state, hidden index flags, shallow history, untracked (and
 * ignored) nested repositories, special files, filtered paths, stashes, COMMIT_EDITMSG drafts
 * that match no commit (nested checkouts), and the limits.
 */
import { execFileSync } from "node:child_process";
import { mkdir, writeFile } from "node:fs/promises";
import path from "node:path";
import { captureWorktree, type CaptureOptions, type RefusalReason } from "../../src";
import { cleanup, clone, git, makeRemote, tempDir } from "./fixture";
import { captureManifest } from "./round-trip";

afterAll(cleanup);

async function worktree(): Promise<{ root: string; work: string; bare: string }> {
  const root = await tempDir();
  const remote = await makeRemote(root, { "a.txt": "a\n", "b.txt": "b\n" });
  return { root, work: await clone(remote, path.join(root, "work")), bare: remote.bare };
}

async function refusal(
  work: string,
  options: Partial<CaptureOptions> = {},
): Promise<RefusalReason | "captured"> {
  try {
    await captureManifest(work, options);
    return "captured";
  } catch (error) {
    const reason = (error as { reason?: RefusalReason }).reason;
    if (reason) return reason;
    throw error;
  }
}

describe("capture refusals", () => {
  it("submodule", async () => {
    const { root, work, bare } = await worktree();
    void root;
    await git(work, ["-c", "protocol.file.allow=always", "submodule", "add", "-q", bare, "sub"]);
    await expect(refusal(work)).resolves.toBe("submodule");
  });

  it("special git state: merge, cherry-pick, rebase, bisect in progress", async () => {
    for (const marker of ["MERGE_HEAD", "CHERRY_PICK_HEAD", "rebase-merge", "BISECT_LOG"]) {
      const { work } = await worktree();
      const head = (await git(work, ["rev-parse", "HEAD"])).trim();
      if (marker === "rebase-merge") await mkdir(path.join(work, ".git", marker));
      else await writeFile(path.join(work, ".git", marker), `${head}\n`);
      await expect(refusal(work)).resolves.toBe("special_git_state");
    }
  });

  it("hidden index flags: skip-worktree and assume-unchanged", async () => {
    const a = await worktree();
    await git(a.work, ["update-index", "--skip-worktree", "a.txt"]);
    await expect(refusal(a.work)).resolves.toBe("hidden_index_flags");
    const b = await worktree();
    await git(b.work, ["update-index", "--assume-unchanged", "b.txt"]);
    await expect(refusal(b.work)).resolves.toBe("hidden_index_flags");
  });

  it("shallow history", async () => {
    const { root, bare } = await worktree();
    const shallow = path.join(root, "shallow");
    await git(root, ["clone", "-q", "--depth", "1", `file://${bare}`, shallow]);
    await expect(refusal(shallow)).resolves.toBe("shallow_history");
  });

  it("untracked nested repository, and an ignored one", async () => {
    const a = await worktree();
    await git(a.work, ["init", "-q", "inner"]);
    await writeFile(path.join(a.work, "inner", "f"), "x");
    await expect(refusal(a.work)).resolves.toBe("untracked_nested_repository");
    const b = await worktree();
    await writeFile(path.join(b.work, ".git", "info", "exclude"), "vendor/\n");
    await mkdir(path.join(b.work, "vendor"));
    await git(b.work, ["init", "-q", "vendor/inner"]);
    await expect(refusal(b.work)).resolves.toBe("ignored_nested_repository");
  });

  it("nested .paperclip-repositories checkouts are left out, not refused", async () => {
    const { work } = await worktree();
    await writeFile(path.join(work, ".git", "info", "exclude"), ".paperclip-repositories/\n");
    await mkdir(path.join(work, ".paperclip-repositories"));
    await git(work, ["init", "-q", ".paperclip-repositories/other-1"]);
    const manifest = await captureManifest(work);
    expect(manifest.ignored.files).toBe(0);
  });

  it("special file (a FIFO) among ignored files", async () => {
    const { work } = await worktree();
    await writeFile(path.join(work, ".git", "info", "exclude"), "cache/\n");
    await mkdir(path.join(work, "cache"));
    execFileSync("mkfifo", [path.join(work, "cache", "pipe")]);
    await expect(refusal(work)).resolves.toBe("special_file");
  });

  it("filtered paths", async () => {
    const { work } = await worktree();
    await writeFile(path.join(work, ".gitattributes"), "*.bin filter=lfs\n");
    await writeFile(path.join(work, "x.bin"), "data");
    await expect(refusal(work)).resolves.toBe("filtered_path");
  });

  it("stash", async () => {
    const { work } = await worktree();
    await writeFile(path.join(work, "a.txt"), "changed\n");
    await git(work, ["stash", "-q"]);
    await expect(refusal(work)).resolves.toBe("stash");
  });

  it("a COMMIT_EDITMSG draft that matches no commit (nested checkouts); one that matches is accepted", async () => {
    const { work } = await worktree();
    await writeFile(path.join(work, ".git", "COMMIT_EDITMSG"), "half-written message\n# comment\n");
    await expect(refusal(work, { nested: true })).resolves.toBe("commit_message_draft");
    await expect(refusal(work)).resolves.toBe("captured");
    await writeFile(path.join(work, ".git", "COMMIT_EDITMSG"), "initial\n");
    await expect(refusal(work, { nested: true })).resolves.toBe("captured");
  });

  it("the limits: files, one file, total bytes, commits, bundle bytes", async () => {
    const limits = {
      maxFiles: 3,
      maxFileBytes: 100,
      maxTotalBytes: 150,
      maxBundleBytes: 10_000,
      maxCommits: 2,
    };
    const files = await worktree();
    for (const n of [1, 2, 3, 4]) await writeFile(path.join(files.work, `u${n}`), "x");
    await expect(refusal(files.work, { limits })).resolves.toBe("restore_point_too_many_files");
    const big = await worktree();
    await writeFile(path.join(big.work, "big"), Buffer.alloc(101));
    await expect(refusal(big.work, { limits })).resolves.toBe("restore_point_file_too_large");
    const total = await worktree();
    await writeFile(path.join(total.work, "one"), Buffer.alloc(80));
    await writeFile(path.join(total.work, "two"), Buffer.alloc(80));
    await expect(refusal(total.work, { limits })).resolves.toBe("restore_point_too_large");
    const commits = await worktree();
    for (const n of [1, 2, 3]) await git(commits.work, ["commit", "-q", "--allow-empty", "-m", `c${n}`]);
    await expect(refusal(commits.work, { limits })).resolves.toBe("restore_point_too_many_commits");
    const bundle = await worktree();
    await writeFile(path.join(bundle.work, "random"), (await import("node:crypto")).randomBytes(20_000));
    await git(bundle.work, ["add", "random"]);
    await git(bundle.work, ["commit", "-q", "-m", "big blob"]);
    await expect(refusal(bundle.work, { limits: { ...limits, maxFiles: 100 } })).resolves.toBe(
      "restore_point_bundle_too_large",
    );
  });

  it("refuses before anything is streamed: no payload exists for a refused worktree", async () => {
    const { work } = await worktree();
    await writeFile(path.join(work, ".git", "MERGE_HEAD"), "0".repeat(40));
    await expect(captureWorktree(work, { base: { kind: "remote" } })).rejects.toMatchObject({
      code: "RECLAIM_ERR_GIT_CAPTURE_REFUSED",
      reason: "special_git_state",
    });
  });
});
