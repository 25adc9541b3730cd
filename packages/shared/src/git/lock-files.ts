/**
 * Git's own lock files, taken by Reclaim so that no git command can change a checkout while
 * it is captured, verified and removed (spec: "the expiration locks ... git's `index.lock`,
 * `HEAD.lock` and the current branch's ref lock in the checkout"). Git creates these files
 * with O_CREAT|O_EXCL before it writes the index, HEAD or a ref, and refuses to go on while
 * one exists ("Unable to create '.../index.lock': File exists"); taking them the same way
 * makes `git commit`, `checkout`, `reset`, `add`, `update-ref` ... of an agent fail instead of
 * interleaving. Files an agent writes directly are not stopped by them: that is what the
 * verification under these locks is for.
 *
 * Lifecycle:
 *
 *   const held = await takeGitLocks(repo);          // throws GitLocksBusy naming the lock in use
 *   try { ... capture, verify ... } finally { await held.release(); }
 *
 * Each file Reclaim creates holds a marker line and its holder's process identity
 * (process-identity.ts), so a lock left behind by a killed worker is recognised and broken by
 * the next attempt (`takeGitLocks` does it first): a holder that is dead, or that cannot be
 * judged from here (another PID namespace) and is older than `staleAfterMs`. A lock file
 * without the marker is git's own (a command is running, or git itself crashed): it is never
 * touched, and the attempt is busy. `release` removes only files that still carry its token.
 *
 * Paths are never followed through a symbolic link: the lock files are created with
 * O_EXCL (which refuses an existing name, link or not), the ref lock's directories are
 * checked to be real directories below the common directory, and a marker is read with
 * O_NOFOLLOW and a size limit.
 */
import { randomUUID } from "node:crypto";
import { constants } from "node:fs";
import { lstat, mkdir, open, readFile, unlink } from "node:fs/promises";
import path from "node:path";
import { errnoCode } from "../errors";
import {
  currentProcess,
  isThisProcess,
  livenessOf,
  type ProcessIdentity,
} from "../quarantine/process-identity";
import type { SafeRepository } from "./safe-git";

export const GIT_LOCK_MARKER = "reclaim-git-lock v1";
const MAX_MARKER_BYTES = 4096;
/** A holder that cannot be judged from here counts as dead after this long. */
export const DEFAULT_STALE_AFTER_MS = 2 * 3600 * 1000;

/** Tokens of the lock sets this process holds now (a record of ours not in here is left over). */
const heldHere = new Set<string>();

export class GitLocksBusy extends Error {
  constructor(
    readonly lockFile: string,
    readonly holder: "git" | "reclaim",
  ) {
    super(`${lockFile} is held by ${holder === "git" ? "a git command" : "another Reclaim job"}`);
    this.name = "GitLocksBusy";
  }
}

export interface HeldGitLocks {
  readonly token: string;
  /** The lock files, absolute. */
  readonly files: readonly string[];
  release(): Promise<void>;
}

interface LockRecord extends ProcessIdentity {
  token: string;
  createdAt: number;
}

/**
 * The lock files of a checkout: `index.lock` and `HEAD.lock` in its git directory (per
 * worktree for a linked worktree), and `<ref>.lock` in the common directory for the branch
 * HEAD names (none when HEAD is detached).
 */
export function gitLockFiles(
  repo: Pick<SafeRepository, "gitDir" | "commonDir">,
  headRef: string | null,
): string[] {
  const files = [path.join(repo.gitDir, "index.lock"), path.join(repo.gitDir, "HEAD.lock")];
  if (headRef !== null) {
    if (
      !/^refs\/heads\/[^\0]+$/.test(headRef) ||
      headRef.split("/").some((p) => p === ".." || p === "." || p === "")
    ) {
      throw new Error(`BUG: ${headRef} is not a branch ref`);
    }
    files.push(path.join(repo.commonDir, `${headRef}.lock`));
  }
  return files;
}

/** The branch HEAD names, read from the HEAD file itself (no git command: git may be locked out). */
export async function headRefOf(repo: Pick<SafeRepository, "git">): Promise<string | null> {
  const symbolic = await repo.git(["symbolic-ref", "-q", "HEAD"], { okCodes: [0, 1] });
  return symbolic.code === 0 ? symbolic.stdout.toString().trim() : null;
}

export interface TakeOptions {
  /** The branch whose ref is locked (default: what HEAD names now). */
  headRef?: string | null;
  staleAfterMs?: number;
  now?: () => number;
}

/** Takes the checkout's lock files, breaking Reclaim's own leftovers first. */
export async function takeGitLocks(
  repo: Pick<SafeRepository, "gitDir" | "commonDir" | "git">,
  options: TakeOptions = {},
): Promise<HeldGitLocks> {
  const headRef = options.headRef === undefined ? await headRefOf(repo) : options.headRef;
  const files = gitLockFiles(repo, headRef);
  const now = options.now ?? Date.now;
  const token = randomUUID();
  const record: LockRecord = { ...currentProcess(), token, createdAt: now() };
  const body = `${GIT_LOCK_MARKER}\n${JSON.stringify(record)}\n`;
  const taken: string[] = [];
  heldHere.add(token);
  const release = async (): Promise<void> => {
    for (const file of [...taken].reverse()) await unlinkIfOurs(file, token);
    heldHere.delete(token);
  };
  try {
    for (const file of files) {
      await realDirectoriesBelow(file === files[2] ? repo.commonDir : repo.gitDir, path.dirname(file));
      if (!(await createExclusive(file, body))) {
        const stale = await leftOver(file, options.staleAfterMs ?? DEFAULT_STALE_AFTER_MS, now());
        if (stale === "git" || stale === "reclaim") throw new GitLocksBusy(file, stale);
        await unlink(file).catch((error: unknown) => {
          if (errnoCode(error) !== "ENOENT") throw error;
        });
        if (!(await createExclusive(file, body))) throw new GitLocksBusy(file, "git");
      }
      taken.push(file);
    }
  } catch (error) {
    await release();
    throw error;
  }
  return { token, files, release };
}

/** Removes Reclaim's lock files at `files` whose holders are gone (a later sweep's cleanup). */
export async function breakLeftoverGitLocks(
  files: readonly string[],
  staleAfterMs = DEFAULT_STALE_AFTER_MS,
  now = Date.now(),
): Promise<string[]> {
  const broken: string[] = [];
  for (const file of files) {
    if ((await leftOver(file, staleAfterMs, now)) !== "dead") continue;
    await unlink(file).then(
      () => broken.push(file),
      (error: unknown) => {
        if (errnoCode(error) !== "ENOENT") throw error;
      },
    );
  }
  return broken;
}

async function createExclusive(file: string, body: string): Promise<boolean> {
  let handle;
  try {
    handle = await open(
      file,
      constants.O_CREAT | constants.O_EXCL | constants.O_WRONLY | constants.O_NOFOLLOW,
      0o644,
    );
  } catch (error) {
    if (errnoCode(error) === "EEXIST") return false;
    throw error;
  }
  try {
    await handle.writeFile(body);
  } finally {
    await handle.close();
  }
  return true;
}

/** Every directory from `top` down to `dir` exists (created if missing) and is no symlink. */
async function realDirectoriesBelow(top: string, dir: string): Promise<void> {
  const rel = path.relative(top, dir);
  if (rel.startsWith("..") || path.isAbsolute(rel)) throw new Error(`BUG: ${dir} is not below ${top}`);
  let current = top;
  for (const part of rel === "" ? [] : rel.split(path.sep)) {
    current = path.join(current, part);
    const stat = await lstat(current).catch((error: unknown) => {
      if (errnoCode(error) === "ENOENT") return null;
      throw error;
    });
    if (stat === null) await mkdir(current);
    else if (!stat.isDirectory()) throw new GitLocksBusy(current, "git");
  }
}

async function readRecord(file: string): Promise<LockRecord | null | "absent"> {
  let handle;
  try {
    handle = await open(file, constants.O_RDONLY | constants.O_NOFOLLOW);
  } catch (error) {
    if (errnoCode(error) === "ENOENT") return "absent";
    if (errnoCode(error) === "ELOOP") return null;
    throw error;
  }
  try {
    const buffer = Buffer.alloc(MAX_MARKER_BYTES);
    const { bytesRead } = await handle.read(buffer, 0, MAX_MARKER_BYTES, 0);
    const [marker, json] = buffer.subarray(0, bytesRead).toString("utf8").split("\n");
    if (marker !== GIT_LOCK_MARKER || !json) return null;
    const record = JSON.parse(json) as LockRecord;
    return typeof record.token === "string" && typeof record.pid === "number" ? record : null;
  } catch {
    return null;
  } finally {
    await handle.close();
  }
}

/** Who holds an existing lock file: git, a live Reclaim job, or nobody any more ("dead"). */
async function leftOver(
  file: string,
  staleAfterMs: number,
  now: number,
): Promise<"git" | "reclaim" | "dead" | "absent"> {
  const record = await readRecord(file);
  if (record === "absent") return "absent";
  if (record === null) return "git";
  if (isThisProcess(record)) return heldHere.has(record.token) ? "reclaim" : "dead";
  const liveness = await livenessOf(record, (f) => readFile(f, "utf8"));
  if (liveness === "unknown") return now - record.createdAt > staleAfterMs ? "dead" : "reclaim";
  return liveness === "dead" ? "dead" : "reclaim";
}

async function unlinkIfOurs(file: string, token: string): Promise<void> {
  const record = await readRecord(file);
  if (record === "absent" || record === null || record.token !== token) return;
  await unlink(file).catch((error: unknown) => {
    if (errnoCode(error) !== "ENOENT") throw error;
  });
}
