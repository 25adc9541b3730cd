/**
 * Real repositories for the git restore-point tests: a bare remote on disk, clones of it,
 * the plain git CLI (as an agent would run it) with a fixed identity and clock.
 */
import { execFile } from "node:child_process";
import { mkdir, mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";

const execFileAsync = promisify(execFile);

export const agentEnv: NodeJS.ProcessEnv = {
  PATH: process.env.PATH,
  HOME: os.tmpdir(),
  GIT_CONFIG_NOSYSTEM: "1",
  GIT_CONFIG_GLOBAL: "/dev/null",
  GIT_AUTHOR_NAME: "Agent",
  GIT_AUTHOR_EMAIL: "agent@reclaim.invalid",
  GIT_COMMITTER_NAME: "Agent",
  GIT_COMMITTER_EMAIL: "agent@reclaim.invalid",
  GIT_AUTHOR_DATE: "2026-01-01T00:00:00Z",
  GIT_COMMITTER_DATE: "2026-01-01T00:00:00Z",
};

/** Plain git as an agent runs it (hooks, filters, fsmonitor all live). */
export async function git(cwd: string, args: string[], input?: string): Promise<string> {
  const running = execFileAsync("git", args, { cwd, env: agentEnv, maxBuffer: 256 * 1024 * 1024 });
  running.child.stdin?.on("error", () => undefined);
  running.child.stdin?.end(input ?? "");
  return (await running).stdout;
}

const roots: string[] = [];

export async function tempDir(prefix = "reclaim-git-"): Promise<string> {
  const dir = await mkdtemp(path.join(os.tmpdir(), prefix));
  roots.push(dir);
  return dir;
}

export async function cleanup(): Promise<void> {
  await Promise.all(roots.splice(0).map((dir) => rm(dir, { recursive: true, force: true })));
}

export interface Remote {
  /** The bare repository (its path is the clone URL). */
  bare: string;
  /** A scratch clone that pushed the initial history. */
  seed: string;
}

/** A bare remote with `main` holding `files` in one commit (plus a second commit). */
export async function makeRemote(
  root: string,
  files: Record<string, string> = { "README.md": "hello\n" },
): Promise<Remote> {
  const bare = path.join(root, "remote.git");
  const seed = path.join(root, "seed");
  await git(root, ["init", "-q", "--bare", "-b", "main", bare]);
  await git(root, ["init", "-q", "-b", "main", seed]);
  const { writeFile } = await import("node:fs/promises");
  for (const [name, body] of Object.entries(files)) {
    await mkdir(path.dirname(path.join(seed, name)), { recursive: true });
    await writeFile(path.join(seed, name), body);
  }
  await git(seed, ["add", "-A"]);
  await git(seed, ["commit", "-q", "-m", "initial"]);
  await git(seed, ["remote", "add", "origin", bare]);
  await git(seed, ["push", "-q", "origin", "main"]);
  return { bare, seed };
}

export async function clone(remote: Remote, dir: string): Promise<string> {
  await mkdir(path.dirname(dir), { recursive: true });
  await git(path.dirname(dir), ["clone", "-q", remote.bare, dir]);
  return dir;
}
