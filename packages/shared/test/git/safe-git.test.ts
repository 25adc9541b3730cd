/**
 * Rule: every git command the library runs on a workspace neutralizes what an agent can
 * plant: hooks, core.fsmonitor, filter drivers, include/includeIf, remote commands,
 * inherited GIT_* variables and a system or global config. Each planted item writes a
 * marker file when it runs; the same commands through plain git prove the plants are live.
 */
import { chmod, lstat, mkdir, readdir, readFile, rm, symlink, writeFile } from "node:fs/promises";
import { spawn } from "node:child_process";
import path from "node:path";
import { openSafeRepository, runSafeGit, remoteEnv } from "../../src/git/safe-git";
import { applyPayload, captureWorktree, open, verifyUnchanged } from "../../src";
import { cleanup, clone, git, makeRemote, tempDir, type Remote } from "./fixture";
import { captureAndStore, localStorage, makeKey } from "./round-trip";

afterAll(cleanup);

/** Plants in `dir`: hooks, core.fsmonitor, a required filter, an include, a remote command, attributes. */
async function plant(dir: string, root: string, markers: string): Promise<void> {
  const script = async (name: string, body = ""): Promise<string> => {
    const file = path.join(root, `${name}.sh`);
    await writeFile(file, `#!/bin/sh\ntouch ${markers}/${name}\n${body}`);
    await chmod(file, 0o755);
    return file;
  };
  const fsmonitor = await script("fsmonitor");
  const clean = await script("filter", "cat\n");
  const included = await script("include-fsmonitor");
  const uploadpack = await script("uploadpack", 'exec git-upload-pack "$@"\n');
  for (const hook of ["post-checkout", "reference-transaction", "pre-commit", "post-index-change"]) {
    const file = path.join(dir, ".git", "hooks", hook);
    await writeFile(file, `#!/bin/sh\ntouch ${markers}/hook-${hook}\n`);
    await chmod(file, 0o755);
  }
  await git(dir, ["config", "core.fsmonitor", fsmonitor]);
  await git(dir, ["config", "filter.evil.clean", clean]);
  await git(dir, ["config", "filter.evil.smudge", clean]);
  await git(dir, ["config", "filter.evil.required", "true"]);
  await git(dir, ["config", "remote.origin.uploadpack", uploadpack]);
  const includeFile = path.join(root, "included.cfg");
  await writeFile(
    includeFile,
    `[filter "sneaky"]\n\tclean = ${included}\n[diff "sneaky"]\n\ttextconv = ${included}\n`,
  );
  await git(dir, ["config", "include.path", includeFile]);
  await git(dir, ["config", `includeIf.gitdir:${dir}/.git.path`, includeFile]);
  await writeFile(
    path.join(dir, ".git", "info", "attributes"),
    "*.txt filter=evil\n*.md filter=sneaky diff=sneaky\n",
  );
}

async function plantedRepository(): Promise<{ dir: string; markers: string; root: string; remote: Remote }> {
  const root = await tempDir();
  const remote = await makeRemote(root, { "a.txt": "one\n", "b.txt": "two\n" });
  const dir = await clone(remote, path.join(root, "work"));
  const markers = path.join(root, "markers");
  await mkdir(markers);
  await plant(dir, root, markers);
  await writeFile(path.join(dir, "a.txt"), "changed\n");
  await writeFile(path.join(dir, "c.md"), "new\n");
  return { dir, markers, root, remote };
}

async function exercise(run: (args: string[]) => Promise<unknown>): Promise<void> {
  await run(["status", "--porcelain=v2"]);
  await run(["diff-files"]);
  await run(["add", "-A"]);
  await run(["update-ref", "refs/heads/probe", "HEAD"]);
  await run(["checkout", "-q", "-b", "other"]);
  await run(["checkout", "-q", "HEAD", "--", "b.txt"]);
  await run(["ls-remote", "origin"]);
  await run(["fetch", "-q", "origin"]);
}

describe("safe git runner", () => {
  it("runs none of a planted fsmonitor, filter, hook, include or upload-pack command", async () => {
    const { dir, markers } = await plantedRepository();
    const repo = await openSafeRepository(dir);
    await exercise((args) => repo.git(args));
    expect(await readdir(markers)).toEqual([]);
    expect(repo.plantedConfig).toEqual(
      expect.arrayContaining([
        "core.fsmonitor",
        "filter.evil.clean",
        "filter.sneaky.clean",
        "diff.sneaky.textconv",
        "remote.origin.uploadpack",
        "include.path",
      ]),
    );
  });

  it("capture, verify and apply of planted repositories run none of the plants", async () => {
    const { dir, markers, root, remote } = await plantedRepository();
    // The source's attributes go (a filtered path is refused); the target keeps them, so a
    // checkout there would run the required filter.
    await rm(path.join(dir, ".git", "info", "attributes"));
    await git(dir, ["add", "c.md"]);
    await git(dir, ["commit", "-q", "-m", "unpushed"]);
    await writeFile(path.join(dir, "b.txt"), "unstaged\n");
    const target = await clone(remote, path.join(root, "target"));
    await plant(target, root, markers);
    await rm(markers, { recursive: true });
    await mkdir(markers);
    const storage = localStorage(path.join(root, "storage"));
    const key = makeKey();
    const stored = await captureAndStore(dir, storage, key);
    expect(await verifyUnchanged(dir, stored.manifest)).toMatchObject({ unchanged: true });
    const preview = await captureWorktree(dir, { base: { kind: "remote" } });
    await preview.dispose();
    await expect(
      applyPayload(target, () => open(storage, stored.storageKey, key), stored.manifest),
    ).resolves.toMatchObject({ status: "applied" });
    expect(await verifyUnchanged(target, stored.manifest)).toMatchObject({ unchanged: true });
    expect(await readdir(markers)).toEqual([]);
    expect(await readFile(path.join(target, "b.txt"), "utf8")).toBe("unstaged\n");
    expect(await readFile(path.join(target, "c.md"), "utf8")).toBe("new\n");
    // Live: plain git in the target runs them.
    await git(target, ["status", "--porcelain"]);
    await git(target, ["add", "-A"]);
    expect(await readdir(markers)).toEqual(expect.arrayContaining(["fsmonitor", "filter"]));
  });

  it("the same commands through plain git run every plant (the test can fail)", async () => {
    const { dir, markers } = await plantedRepository();
    await exercise((args) => git(dir, args));
    const ran = await readdir(markers);
    for (const name of [
      "fsmonitor",
      "filter",
      "include-fsmonitor",
      "uploadpack",
      "hook-post-checkout",
      "hook-reference-transaction",
    ]) {
      expect(ran).toContain(name);
    }
  });

  it("ignores inherited GIT_* variables and a global config", async () => {
    const root = await tempDir();
    const remote = await makeRemote(root);
    const dir = await clone(remote, path.join(root, "work"));
    const global = path.join(root, "global.cfg");
    await writeFile(global, `[core]\n\thooksPath = ${root}/nowhere\n[user]\n\tname = Planted\n`);
    const inherited = {
      ...process.env,
      GIT_DIR: path.join(root, "remote.git"),
      GIT_CONFIG_GLOBAL: global,
      GIT_CONFIG_PARAMETERS: "'core.fsmonitor'='touch x'",
      GIT_CONFIG_COUNT: "1",
      GIT_CONFIG_KEY_0: "user.name",
      GIT_CONFIG_VALUE_0: "Planted",
    };
    const repo = await openSafeRepository(dir, { inherited });
    expect(repo.worktree).toBe(dir);
    expect((await repo.text(["config", "user.name"]).catch(() => "unset")).trim()).not.toBe("Planted");
    expect((await repo.text(["rev-parse", "--absolute-git-dir"])).trim()).toBe(path.join(dir, ".git"));
    const env = remoteEnv(inherited);
    expect(Object.keys(env).filter((k) => k.startsWith("GIT_") && k === "GIT_DIR")).toEqual([]);
    const out = await runSafeGit(["config", "--get", "core.hooksPath"], { cwd: root, env });
    expect(out.stdout.toString()).not.toContain("nowhere");
  });

  it("refuses remote protocols that run commands (ext::)", async () => {
    const root = await tempDir();
    await expect(
      runSafeGit(["ls-remote", `ext::sh -c touch% ${root}/ext-marker`], { cwd: root, env: remoteEnv() }),
    ).rejects.toMatchObject({ code: "RECLAIM_ERR_GIT_COMMAND_FAILED" });
    expect(await readdir(root)).not.toContain("ext-marker");
  });
});

describe("the empty directory every command runs with (hooks path, HOME, remote commands' cwd)", () => {
  /**
   * A process started with `tmp` as its temporary folder (other tests' git commands use the
   * real one meanwhile): the empty directory it ran with; given a checkout, it commits there.
   */
  const processIn = async (tmp: string, checkout?: string): Promise<string> => {
    const child = spawn(
      process.execPath,
      ["--import", "tsx", path.join(__dirname, "empty-dir-process.ts"), ...(checkout ? [checkout] : [])],
      { env: { ...process.env, TMPDIR: tmp }, stdio: ["ignore", "pipe", "inherit"] },
    );
    let out = "";
    child.stdout!.on("data", (d: Buffer) => (out += d.toString()));
    const code = await new Promise((resolve) => child.once("exit", resolve));
    expect(code).toBe(0);
    return out.trim();
  };
  const sharedIn = (tmp: string) => path.join(tmp, `reclaim-git-empty-${process.getuid!()}`);

  it("is one directory for all of this user's processes, private: processes started one after another leave no more behind", async () => {
    const tmp = await tempDir();
    const dirs = [await processIn(tmp), await processIn(tmp), await processIn(tmp)];
    expect(new Set(dirs)).toEqual(new Set([sharedIn(tmp)]));
    // (tsx keeps its cache there too.)
    const left = (await readdir(tmp)).filter((name) => name.startsWith("reclaim-git-empty-"));
    expect(left).toEqual([path.basename(sharedIn(tmp))]);
    expect((await lstat(sharedIn(tmp))).mode & 0o777).toBe(0o700);
    expect(await readdir(sharedIn(tmp))).toEqual([]);
  });

  it("is never a directory with something planted in it, a link, or one open to others: the process makes a private one, and a hook planted there never runs", async () => {
    const [tmp, root] = [await tempDir(), await tempDir()];
    const shared = sharedIn(tmp);
    const remote = await makeRemote(root, { "a.txt": "one\n" });
    const dir = await clone(remote, path.join(root, "work"));
    const markers = path.join(root, "markers");
    await mkdir(markers);
    // A pre-commit hook in the shared directory, which would be the hooks path.
    await mkdir(shared, { mode: 0o700 });
    const hook = path.join(shared, "pre-commit");
    await writeFile(hook, `#!/bin/sh\ntouch ${markers}/planted-hook\n`);
    await chmod(hook, 0o755);
    await writeFile(path.join(dir, "a.txt"), "two\n");
    const own = await processIn(tmp, dir);
    expect(own).not.toBe(shared);
    expect(path.dirname(own)).toBe(tmp);
    expect(await readdir(markers)).toEqual([]);
    expect((await git(dir, ["log", "-1", "--format=%s"])).trim()).toBe("probe");
    // The same commit through plain git with that hooks path runs the hook (the test can fail).
    await writeFile(path.join(dir, "a.txt"), "three\n");
    await git(dir, ["-c", `core.hooksPath=${shared}`, "commit", "-q", "-a", "-m", "plain"]);
    expect(await readdir(markers)).toEqual(["planted-hook"]);
    // A link at the name (to an empty private directory), then a directory open to others.
    await rm(shared, { recursive: true });
    const elsewhere = path.join(root, "elsewhere");
    await mkdir(elsewhere, { mode: 0o700 });
    await symlink(elsewhere, shared);
    expect(await processIn(tmp)).not.toBe(shared);
    await rm(shared);
    await mkdir(shared, { mode: 0o700 });
    await chmod(shared, 0o777);
    expect(await processIn(tmp)).not.toBe(shared);
  });
});
