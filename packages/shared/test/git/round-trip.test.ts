/**
 * Rule (Proof): capture -> seal -> store -> open -> apply into a fresh clone reproduces the
 * worktree: status, index (entries, modes, stages, intent-to-add), every file's bytes and
 * mode, the reflog's commits and ORIG_HEAD; `.env` and regenerable directories stay out.
 */
import { existsSync } from "node:fs";
import { chmod, mkdir, readFile, symlink, writeFile } from "node:fs/promises";
import path from "node:path";
import { cleanup, clone, git, makeRemote, tempDir } from "./fixture";
import { applyStored, captureAndStore, localStorage, makeKey, repoFacts } from "./round-trip";

afterAll(cleanup);
const key = makeKey();

describe("round trip into a fresh clone", () => {
  it("reproduces unpushed, reflog-only and ORIG_HEAD-only commits, every kind of change, modes, links, binary and odd names", async () => {
    const root = await tempDir();
    const remote = await makeRemote(root, {
      "a.txt": "a\n",
      "b.txt": "b\n",
      "dir/c.txt": "c\n",
      "gone.txt": "bye\n",
      "x.sh": "echo\n",
    });
    const work = await clone(remote, path.join(root, "work"));
    await writeFile(path.join(work, ".gitignore"), "*.log\nnode_modules/\nout/\n.env*\n");
    await git(work, ["add", ".gitignore"]);
    await git(work, ["commit", "-q", "-m", "ignore rules"]);
    // unpushed commits
    await writeFile(path.join(work, "a.txt"), "a2\n");
    await git(work, ["commit", "-qam", "unpushed 1"]);
    // a commit reachable only from the reflog after reset --hard
    await writeFile(path.join(work, "b.txt"), "lost\n");
    await git(work, ["commit", "-qam", "will be reset away"]);
    await git(work, ["reset", "-q", "--hard", "HEAD~1"]);
    // ORIG_HEAD-only: a commit then reset --soft leaves ORIG_HEAD at it
    await writeFile(path.join(work, "dir/c.txt"), "c-orig\n");
    await git(work, ["commit", "-qam", "orig head only"]);
    await git(work, ["reset", "-q", "--soft", "HEAD~1"]);
    // staged + unstaged + deleted
    await writeFile(path.join(work, "dir/c.txt"), "c-staged\n");
    await git(work, ["add", "dir/c.txt"]);
    await writeFile(path.join(work, "dir/c.txt"), "c-staged-then-unstaged\n");
    await writeFile(path.join(work, "b.txt"), "unstaged\n");
    await git(work, ["rm", "-q", "gone.txt"]);
    await chmod(path.join(work, "x.sh"), 0o755);
    // intent-to-add
    await writeFile(path.join(work, "ita.txt"), "intent\n");
    await git(work, ["add", "-N", "ita.txt"]);
    // untracked with exec bit, symlinks, .env, binary, spaces and non-ASCII
    await writeFile(path.join(work, "run.sh"), "#!/bin/sh\n");
    await chmod(path.join(work, "run.sh"), 0o750);
    await symlink("a.txt", path.join(work, "link-to-a"));
    await symlink("/nonexistent/target", path.join(work, "dangling"));
    await writeFile(path.join(work, ".env"), "SECRET=1\n");
    await mkdir(path.join(work, "sub"));
    await writeFile(path.join(work, "sub", ".env.local"), "SECRET=2\n");
    await writeFile(path.join(work, "blob.bin"), Buffer.from([0, 1, 2, 255, 254, 0, 10, 13]));
    await writeFile(path.join(work, "with space ü é.txt"), "naïve\n");
    // ignored build output inside and outside node_modules
    await mkdir(path.join(work, "node_modules", "pkg"), { recursive: true });
    await writeFile(path.join(work, "node_modules", "pkg", "index.js"), "x\n");
    await mkdir(path.join(work, "out"));
    await writeFile(path.join(work, "out", "build.o"), Buffer.from([1, 2, 3]));
    await writeFile(path.join(work, "debug.log"), "log\n");

    const storage = localStorage(path.join(root, "storage"));
    const stored = await captureAndStore(work, storage, key);
    expect(stored.manifest.bundle?.commits).toBeGreaterThanOrEqual(4);

    const fresh = await clone(remote, path.join(root, "fresh"));
    await expect(applyStored(fresh, storage, key, stored)).resolves.toEqual({
      status: "applied",
      keptIgnored: [],
    });
    const original = await repoFacts(work, { leaveOut: true });
    const restored = await repoFacts(fresh, { leaveOut: true });
    expect(restored).toEqual(original);
    // the reset-away commit and ORIG_HEAD resolve in the restored repository
    expect(restored.reflog).toContain("will be reset away");
    expect(restored.origHead).not.toBe("");
    // .env files were not carried
    await expect(git(fresh, ["ls-files", "-o"])).resolves.not.toContain(".env");
    // applying again is only reported
    await expect(applyStored(fresh, storage, key, stored)).resolves.toEqual({ status: "already_applied" });
  });

  it("leaves .claude/settings.local.json out of the ignored files (saved with the workspace contents); other ignored files there come back", async () => {
    const root = await tempDir();
    const remote = await makeRemote(root, { "a.txt": "a\n" });
    const work = await clone(remote, path.join(root, "work"));
    await writeFile(path.join(work, ".gitignore"), ".claude/\n");
    await git(work, ["add", ".gitignore"]);
    await git(work, ["commit", "-q", "-m", "ignore .claude"]);
    await mkdir(path.join(work, ".claude"));
    await writeFile(path.join(work, ".claude", "settings.local.json"), '{"secret":"local"}\n');
    await writeFile(path.join(work, ".claude", "notes.json"), '{"kept":true}\n');
    const storage = localStorage(path.join(root, "storage"));
    const stored = await captureAndStore(work, storage, key);
    expect(stored.manifest.ignored.files).toBe(1);
    const fresh = await clone(remote, path.join(root, "fresh"));
    await expect(applyStored(fresh, storage, key, stored)).resolves.toMatchObject({ status: "applied" });
    expect(await readFile(path.join(fresh, ".claude", "notes.json"), "utf8")).toBe('{"kept":true}\n');
    expect(existsSync(path.join(fresh, ".claude", "settings.local.json"))).toBe(false);
  });
});

describe("capture against remote-tracking refs (base `remote-tracking`: the caller fetched just now)", () => {
  it("takes the remote-tracking tips as the base, bundles only what they lack, and applies into a fresh clone; a stale tip the remote dropped fails the apply closed", async () => {
    const root = await tempDir();
    const remote = await makeRemote(root, { "a.txt": "a\n" });
    // The remote gains a branch `side` that the worktree fetches; the worktree builds on it.
    await git(remote.seed, ["checkout", "-q", "-b", "side"]);
    await writeFile(path.join(remote.seed, "side.txt"), "side\n");
    await git(remote.seed, ["add", "side.txt"]);
    await git(remote.seed, ["commit", "-q", "-m", "on the remote"]);
    await git(remote.seed, ["push", "-q", "origin", "side"]);
    const side = (await git(remote.seed, ["rev-parse", "HEAD"])).trim();
    const work = await clone(remote, path.join(root, "work"));
    await git(work, ["checkout", "-q", "-b", "task", "origin/side"]);
    await writeFile(path.join(work, "task.txt"), "unpushed\n");
    await git(work, ["add", "task.txt"]);
    await git(work, ["commit", "-q", "-m", "unpushed on side"]);
    await writeFile(path.join(work, "notes.md"), "untracked\n");

    const storage = localStorage(path.join(root, "storage"));
    const stored = await captureAndStore(work, storage, key, { base: { kind: "remote-tracking" } });
    expect(stored.manifest.base.source).toBe("remote-tracking");
    expect(stored.manifest.base.oids).toContain(side);
    expect(stored.manifest.bundle?.commits).toBe(1);
    const fresh = await clone(remote, path.join(root, "fresh"));
    await expect(applyStored(fresh, storage, key, stored)).resolves.toMatchObject({ status: "applied" });
    expect(await repoFacts(fresh, { leaveOut: true })).toEqual(await repoFacts(work, { leaveOut: true }));

    // The remote drops `side` after the fetch: the remote-tracking ref still names it, so the
    // capture takes it as present; a clone made now lacks it and the apply fails closed.
    await git(remote.seed, ["push", "-q", "origin", ":side"]);
    const later = await captureAndStore(work, storage, key, { base: { kind: "remote-tracking" } });
    // (--no-local: a local clone copies every object of the remote, reachable or not.)
    const lacking = path.join(root, "lacking");
    await git(root, ["clone", "-q", "--no-local", remote.bare, lacking]);
    const before = await repoFacts(lacking);
    await expect(applyStored(lacking, storage, key, later)).rejects.toMatchObject({
      code: "RECLAIM_ERR_GIT_APPLY_BASE_MISSING",
    });
    expect(await repoFacts(lacking)).toEqual(before);
    // The base `remote` (listed fresh) bundles it instead, and that applies.
    const fromRemote = await captureAndStore(work, storage, key);
    expect(fromRemote.manifest.bundle?.commits).toBe(2);
    await expect(applyStored(lacking, storage, key, fromRemote)).resolves.toMatchObject({
      status: "applied",
    });
  });
});
