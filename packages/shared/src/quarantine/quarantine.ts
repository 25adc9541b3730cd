/**
 * Object quarantine for git object writes (restore-point capture, bundle import, worktree
 * moves): new objects go to a private directory and reach the repository's object store only
 * when the whole operation succeeded, the way `git receive-pack` quarantines a push.
 *
 * Lifecycle:
 *
 *  1. `withObjectQuarantine(repo, purpose, fn)` creates
 *     `<objects>/tmp_objdir-reclaim-<purpose>-<uuid>` (the `tmp_objdir-` prefix lets
 *     `git gc`/`git prune` remove one left by a crash once it is two weeks old) with a `pack/`
 *     directory, inside the real object store so publication is a same-filesystem link.
 *  2. `fn(ctx)` runs git with `ctx.env` (or through `ctx.git`): GIT_OBJECT_DIRECTORY is the
 *     quarantine, GIT_ALTERNATE_OBJECT_DIRECTORIES the caller's alternates plus the real store
 *     (quoted as git requires), GIT_QUARANTINE_PATH set (git refuses ref updates inside it)
 *     and GIT_INDEX_FILE a private index inside the quarantine. The real index, HEAD and refs
 *     are never touched. Ref changes are queued with `ctx.updateRefAfterPublish`.
 *  3. After `fn` resolves, publication runs to completion without checking for abort: loose
 *     objects, then each pack's `.keep`, `.pack`, `.rev`, `.idx` (see publish.ts), hard links
 *     that never replace an existing file. Then the queued refs are updated in one
 *     `git update-ref --stdin` transaction, with their old values checked.
 *  4. The quarantine is removed: after success, failure, timeout, abort and SIGTERM alike.
 *
 * Failure behaviour:
 *
 *  - `fn` throws, times out (`timeoutMs`), or is aborted (`signal`, SIGTERM): `ctx.signal`
 *    aborts, `ctx.git` kills its process groups, and once `fn` has settled the quarantine is
 *    removed. Nothing reached the object store, including any `tmp_pack_*` a killed `git add`
 *    was streaming a large file into: it was inside the quarantine. Rejects with
 *    RECLAIM_ERR_QUARANTINE_TIMEOUT / _ABORTED, or with `fn`'s error.
 *  - `fn` must stop its own child processes when `ctx.signal` aborts (`ctx.git` does): the
 *    quarantine is removed only after `fn` settles, so no git process can recreate it.
 *  - Publication fails (ENOSPC, EIO): RECLAIM_ERR_QUARANTINE_PUBLISH_FAILED; the files of any
 *    pack whose index was not published are removed again, never a file that existed before
 *    or a pack another capture may use (ownership records, pack-ownership.ts); refs are not
 *    updated. A capture killed outright mid-publication (SIGKILL, power loss) leaves its
 *    ownership record; the next publication in the repository removes the pack files it
 *    left without an index (pack-recovery.ts). That recovery is best effort per pack: one
 *    that fails is reported in `published.recoveryFailures` and left for a later
 *    publication; it fails nothing else.
 *  - Another live capture keeps the same pack past `packBusyTimeoutMs`:
 *    RECLAIM_ERR_QUARANTINE_PACK_BUSY, retryable; nothing was published of that pack.
 *  - A ref whose old value changed: RECLAIM_ERR_QUARANTINE_REF_UPDATE_FAILED; the published
 *    objects stay, unreferenced, for gc.
 *  - Misuse (a bad purpose, not a repository) fails before anything is created.
 *
 * Example:
 *
 *   const { value: commit } = await withObjectQuarantine(worktree, "capture", async (ctx) => {
 *     await ctx.git(["read-tree", "HEAD"]);
 *     await ctx.git(["add", "-A"]);
 *     const tree = (await ctx.git(["write-tree"])).trim();
 *     const commit = (await ctx.git(["commit-tree", tree, "-m", "restore point"])).trim();
 *     ctx.updateRefAfterPublish("refs/reclaim/restore-points/42", commit);
 *     return commit;
 *   }, { timeoutMs: 30_000, signal });
 */
import { randomUUID } from "node:crypto";
import { mkdir } from "node:fs/promises";
import path from "node:path";
import { ConfigError, QuarantineError } from "../errors";
import { runGit } from "./git-command";
import { quarantineEnv, repositoryEnv } from "./git-env";
import { publishQuarantine, type PublishedObjects } from "./publish";
import { realPublishFs, type PublishFs } from "./publish-fs";
import { inspectRepository } from "./repository";
import { registerLiveCapture } from "./termination";
import { systemClock, type Clock } from "../clock";
import { systemTimer, type Timer } from "./timing";

export interface QuarantineContext {
  /** Absolute path of the quarantine directory. */
  readonly path: string;
  /** The private index file (inside the quarantine); absent until git writes it. */
  readonly indexFile: string;
  /** Environment for every git child process of the capture. */
  readonly env: NodeJS.ProcessEnv;
  /** Aborted on timeout, on the caller's signal and on SIGTERM: pass it to child processes. */
  readonly signal: AbortSignal;
  /**
   * Runs `git <args>` in the repository with `env` and `signal`, resolves with stdout;
   * on abort it kills git's whole process group and waits for it to exit.
   */
  git(args: string[], options?: { input?: string | Buffer; cwd?: string }): Promise<string>;
  /**
   * Queues `ref` to be set to `newOid` after publication, only if it still has `oldOid`
   * (omit for "any value"; all zeros for "must not exist").
   */
  updateRefAfterPublish(ref: string, newOid: string, oldOid?: string): void;
}

export interface QuarantineOptions {
  /** Aborts the capture. Default: none. */
  signal?: AbortSignal;
  /** Milliseconds until the capture is aborted with RECLAIM_ERR_QUARANTINE_TIMEOUT. Default: no limit. */
  timeoutMs?: number;
  /** Environment the child processes start from. Default `process.env`. */
  env?: NodeJS.ProcessEnv;
  /**
   * Milliseconds to wait, in all, for other live captures (of this process or another) that
   * are publishing the same pack (each holds it for a few link(2) calls) before retryable
   * RECLAIM_ERR_QUARANTINE_PACK_BUSY. Default 30000.
   */
  packBusyTimeoutMs?: number;
  /**
   * Age in ms after which a pack ownership record counts as abandoned when its holder cannot
   * be checked: a process in another PID namespace (another container) or on another machine
   * (a network store), or an unreadable record (a crash between its creation and its write).
   * Records of this kernel and PID namespace are judged by whether their process still runs,
   * never by age. Default 600000 (10 min).
   */
  packOwnerStaleAfterMs?: number;
  /** Time source and timer for the timeout and pack waits. Default: the system's. */
  clock?: Clock;
  timer?: Timer;
  /**
   * Test hooks, never set in production: a filesystem for publication (to inject ENOSPC or
   * EPERM at an exact step) and a callback when a pack is found owned by another capture.
   */
  testHooks?: { fs?: PublishFs; onPackBusy?: (packName: string) => void };
}

export interface QuarantineResult<T> {
  value: T;
  published: PublishedObjects;
}

export const QUARANTINE_PREFIX = "tmp_objdir-reclaim-";
const PURPOSE = /^[a-z0-9][a-z0-9-]{0,31}$/;

export async function withObjectQuarantine<T>(
  repo: string,
  purpose: string,
  fn: (ctx: QuarantineContext) => Promise<T>,
  options: QuarantineOptions = {},
): Promise<QuarantineResult<T>> {
  if (!PURPOSE.test(purpose)) {
    throw new ConfigError(
      "purpose",
      `must be 1 to 32 of [a-z0-9-], starting with a letter or digit (got ${JSON.stringify(purpose)})`,
    );
  }
  const timeoutMs = options.timeoutMs;
  if (timeoutMs !== undefined && (!Number.isFinite(timeoutMs) || timeoutMs <= 0)) {
    throw new ConfigError("timeoutMs", `must be a positive number of milliseconds (got ${timeoutMs})`);
  }
  const baseEnv = options.env ?? process.env;
  const clock = options.clock ?? systemClock;
  const timer = options.timer ?? systemTimer;
  const fs = options.testHooks?.fs ?? realPublishFs;
  const cwd = path.resolve(repo);
  const { objectsDir, shared } = await inspectRepository(cwd, baseEnv);

  const captureId = randomUUID();
  const quarantine = path.join(objectsDir, `${QUARANTINE_PREFIX}${purpose}-${captureId}`);
  const indexFile = path.join(quarantine, "index");
  const env = quarantineEnv(baseEnv, { quarantine, objectsDir, indexFile });
  const refUpdates: string[] = [];

  const controller = new AbortController();
  const abort = (reason: QuarantineError): void => {
    if (!controller.signal.aborted) controller.abort(reason);
  };
  const onCallerAbort = (): void =>
    abort(
      new QuarantineError("RECLAIM_ERR_QUARANTINE_ABORTED", "the caller's signal", {
        cause: options.signal?.reason,
      }),
    );
  if (options.signal?.aborted) onCallerAbort();
  options.signal?.addEventListener("abort", onCallerAbort, { once: true });
  const timeout =
    timeoutMs === undefined
      ? undefined
      : timer.setTimeout(
          () => abort(new QuarantineError("RECLAIM_ERR_QUARANTINE_TIMEOUT", `after ${timeoutMs} ms`)),
          timeoutMs,
        );
  let settle!: () => void;
  registerLiveCapture({ abort, settled: new Promise<void>((resolve) => (settle = resolve)) });

  const ctx: QuarantineContext = {
    path: quarantine,
    indexFile,
    env,
    signal: controller.signal,
    git: (args, gitOptions = {}) =>
      runGit(args, { cwd: gitOptions.cwd ?? cwd, env, signal: controller.signal, input: gitOptions.input }),
    updateRefAfterPublish: (ref, newOid, oldOid) => {
      if (
        /\s/.test(ref) ||
        !/^[0-9a-f]{40,64}$/.test(newOid) ||
        (oldOid !== undefined && !/^[0-9a-f]{40,64}$/.test(oldOid))
      ) {
        throw new ConfigError(
          "updateRefAfterPublish",
          `needs a ref name and hex object ids (got ${ref} ${newOid} ${oldOid ?? ""})`,
        );
      }
      refUpdates.push(oldOid === undefined ? `update ${ref} ${newOid}` : `update ${ref} ${newOid} ${oldOid}`);
    },
  };

  let publishing = false;
  try {
    if (controller.signal.aborted) throw controller.signal.reason;
    await mkdir(path.join(quarantine, "pack"), { recursive: true, mode: 0o700 });
    const value = await fn(ctx);
    // fn may have swallowed the abort; an aborted capture is never published.
    if (controller.signal.aborted) throw controller.signal.reason;
    // From here on nothing checks the signal: publication and the ref update run to the end.
    publishing = true;
    const published = await publishQuarantine(quarantine, objectsDir, {
      fs,
      shared,
      ownership: {
        fs,
        clock,
        timer,
        shared,
        captureId,
        busyTimeoutMs: options.packBusyTimeoutMs ?? 30_000,
        staleAfterMs: options.packOwnerStaleAfterMs ?? 600_000,
        onBusy: options.testHooks?.onPackBusy,
      },
    });
    if (refUpdates.length > 0) await updateRefs(cwd, baseEnv, refUpdates);
    return { value, published };
  } catch (error) {
    // A capture failure caused by the abort (git killed, fn gave up) reports the abort itself.
    throw controller.signal.aborted && !publishing ? controller.signal.reason : error;
  } finally {
    if (timeout !== undefined) timer.clearTimeout(timeout);
    options.signal?.removeEventListener("abort", onCallerAbort);
    await fs.removeTree(quarantine);
    settle();
  }
}

async function updateRefs(cwd: string, env: NodeJS.ProcessEnv, updates: string[]): Promise<void> {
  // One transaction: all refs move or none. Outside the quarantine environment, since git
  // refuses ref updates while GIT_QUARANTINE_PATH is set.
  const input = ["start", ...updates, "prepare", "commit", ""].join("\n");
  try {
    await runGit(["update-ref", "--stdin"], { cwd, env: repositoryEnv(env), input });
  } catch (error) {
    throw new QuarantineError("RECLAIM_ERR_QUARANTINE_REF_UPDATE_FAILED", String((error as Error).message), {
      cause: error,
    });
  }
}
