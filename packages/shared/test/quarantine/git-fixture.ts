/**
 * Real repositories for the quarantine tests: real git CLI, real filesystem, temporary
 * directories removed by `cleanup()`. A "blocking" clean filter holds `git add` at a known
 * point (after it has streamed the large file into a pack) without any sleep: the filter
 * announces itself through one FIFO and then waits on another that nobody writes.
 */
import { execFile } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { createReadStream } from "node:fs";
import { mkdtemp, readdir, readFile, rm, stat, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";

const execFileAsync = promisify(execFile);

/** An environment without the caller's git variables and with a fixed identity. */
export const gitEnv: NodeJS.ProcessEnv = {
  PATH: process.env.PATH,
  HOME: os.tmpdir(),
  GIT_CONFIG_NOSYSTEM: "1",
  GIT_AUTHOR_NAME: "Reclaim Test",
  GIT_AUTHOR_EMAIL: "test@reclaim.invalid",
  GIT_COMMITTER_NAME: "Reclaim Test",
  GIT_COMMITTER_EMAIL: "test@reclaim.invalid",
};

export async function git(cwd: string, args: string[], input?: string): Promise<string> {
  const running = execFileAsync("git", args, { cwd, env: gitEnv, maxBuffer: 64 * 1024 * 1024 });
  running.child.stdin?.on("error", () => undefined); // git that never reads stdin may exit first
  running.child.stdin?.end(input ?? "");
  return (await running).stdout;
}

const roots: string[] = [];

export async function tempDir(): Promise<string> {
  const dir = await mkdtemp(path.join(os.tmpdir(), "reclaim-quarantine-"));
  roots.push(dir);
  return dir;
}

export async function cleanup(): Promise<void> {
  await Promise.all(roots.splice(0).map((dir) => rm(dir, { recursive: true, force: true })));
}

export interface Repo {
  dir: string;
  objects: string;
  git(args: string[], input?: string): Promise<string>;
}

/** A work tree with one commit; bigFileThreshold small so large files stream into packs. */
export async function makeRepo(parent?: string): Promise<Repo> {
  const dir = path.join(parent ?? (await tempDir()), "repo");
  await git(os.tmpdir(), ["init", "-q", "-b", "main", dir]);
  const repo = {
    dir,
    objects: path.join(dir, ".git", "objects"),
    git: (args: string[], input?: string) => git(dir, args, input),
  };
  await repo.git(["config", "core.bigFileThreshold", "64k"]);
  await writeFile(path.join(dir, "tracked.txt"), "tracked\n");
  await repo.git(["add", "tracked.txt"]);
  await repo.git(["commit", "-q", "-m", "initial"]);
  return repo;
}

/**
 * A work tree with an untracked large file (streamed into a pack by `git add`) and two small
 * ones (loose objects). The same seed gives the same pack.
 */
export async function repoWithLargeFile(seed = 1): Promise<Repo> {
  const repo = await makeRepo();
  await writeFile(path.join(repo.dir, "a-large.bin"), bigContent(seed));
  await writeFile(path.join(repo.dir, "small-1.txt"), "one\n");
  await writeFile(path.join(repo.dir, "small-2.txt"), "two\n");
  return repo;
}

/** Deterministic incompressible content: the same seed gives the same bytes (and the same pack). */
export function bigContent(seed: number, bytes = 4 * 1024 * 1024): Buffer {
  const out = Buffer.alloc(bytes);
  let block = Buffer.from(`seed-${seed}`);
  for (let i = 0; i < bytes; i += 32) {
    block = createHash("sha256").update(block).digest();
    block.copy(out, i);
  }
  return out;
}

export function randomContent(bytes: number): Buffer {
  return randomBytes(bytes);
}

export interface Blocker {
  /** Resolves when git has started the filter, i.e. is blocked inside `git add`. */
  started: Promise<void>;
}

/**
 * Makes `git add` block on `file` (a later path than the large file, so the large file has
 * been streamed into the capture's pack by then). Returns when the filter is configured.
 */
export async function installBlockingFilter(repo: Repo, file: string): Promise<() => Blocker> {
  const fifos = await tempDir();
  const ready = path.join(fifos, "ready");
  const hold = path.join(fifos, "hold");
  await execFileAsync("mkfifo", [ready, hold]);
  await repo.git([
    "config",
    "filter.block.clean",
    `sh -c 'echo started > ${ready}; cat ${hold} >/dev/null; cat'`,
  ]);
  await writeFile(path.join(repo.dir, ".gitattributes"), `${file} filter=block\n`);
  await writeFile(path.join(repo.dir, file), "blocks git add\n");
  return () => ({
    started: new Promise<void>((resolve, reject) => {
      const stream = createReadStream(ready);
      stream.once("data", () => {
        stream.destroy();
        resolve();
      });
      stream.once("error", reject);
    }),
  });
}

/** Every file under `dir`, relative, with size: what "the object store listing" means here. */
export async function listTree(dir: string): Promise<string[]> {
  const out: string[] = [];
  async function walk(sub: string): Promise<void> {
    for (const entry of await readdir(path.join(dir, sub), { withFileTypes: true })) {
      const rel = path.join(sub, entry.name);
      if (entry.isDirectory()) {
        out.push(`${rel}/`);
        await walk(rel);
      } else out.push(`${rel} ${(await stat(path.join(dir, rel))).size}`);
    }
  }
  await walk("");
  return out.sort();
}

export async function fsckStrict(repo: Repo): Promise<void> {
  await repo.git(["fsck", "--strict", "--no-progress"]);
}

/** Bytes of the real index and HEAD, to prove a capture never touched them. */
export async function indexAndHead(repo: Repo): Promise<Buffer[]> {
  const gitDir = path.resolve(repo.dir, (await repo.git(["rev-parse", "--git-dir"])).trim());
  return Promise.all([readFile(path.join(gitDir, "index")), readFile(path.join(gitDir, "HEAD"))]);
}

export async function packsIn(objects: string): Promise<string[]> {
  return (await readdir(path.join(objects, "pack"))).sort();
}

/** An errno-carrying error as the fs module makes them. */
export function errnoError(code: string, syscall: string, target: string): NodeJS.ErrnoException {
  return Object.assign(new Error(`${code}: ${syscall} '${target}'`), { code, syscall, path: target });
}
