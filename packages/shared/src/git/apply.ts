/**
 * Apply: puts a restore point back into a fresh clone or a fresh worktree of a shared clone.
 *
 * Lifecycle:
 *
 *  1. Read the target. Already exactly the captured state: `already_applied`, nothing done.
 *  2. Fail closed, target untouched, on a target that diverged (RECLAIM_ERR_GIT_APPLY_DIVERGED,
 *     retryable): tracked changes or untracked files, or a HEAD or branch whose commit is on
 *     no remote-tracking ref and is neither the captured one nor (checked once the bundle's
 *     objects are readable, before any is published) an ancestor of where apply moves it.
 *     The target is a fresh clone, or a fresh worktree of a shared clone (`scope`, and
 *     `renameRef` for branches that take the worktree's prefix there).
 *  3. Read the whole payload into a staging directory inside the target's git dir. A payload
 *     that is missing, cut off, tampered with or sealed with another key rejects here with
 *     the seal's (or storage's) error, before anything in the target changed; so does a
 *     payload that is not the manifest's (bundle hash, section hashes, tree digests).
 *  4. `git bundle verify` (the base must be there: RECLAIM_ERR_GIT_APPLY_BASE_MISSING), then
 *     `git bundle unbundle` inside `withObjectQuarantine`, publishing the objects and, in one
 *     checked transaction, the scope's branches. Killed, timed out, aborted or out of disk
 *     before publication, it leaves the repository's objects and refs as they were.
 *  5. `git read-tree -u --reset <saved commit>`, HEAD set to the saved branch (or detached).
 *  6. Tracked changes and deletions, then untracked files (tree-snapshot restore: never
 *     replaces, never follows links), then ignored files: restored into staging and linked in
 *     one by one; an ignored file that already exists is kept, never overwritten (reported).
 *  7. The index exactly (entries, modes, stages, intent-to-add), written through
 *     `index.lock`, then refreshed; the HEAD reflog (with its reflog-only commits), ORIG_HEAD
 *     and the branches' reflogs written back.
 *  8. The target is read again and must match the manifest (remote-tracking refs aside);
 *     otherwise RECLAIM_ERR_GIT_APPLY_FAILED with the differences.
 */
import { createReadStream } from "node:fs";
import { mkdir, rm, unlink } from "node:fs/promises";
import path from "node:path";
import type { Readable } from "node:stream";
import { withObjectQuarantine } from "../quarantine/quarantine";
import { restoreSnapshot } from "../tree-snapshot";
import {
  checkStaged,
  linkInWithoutReplacing,
  READ_LIMITS,
  writeHistory,
  writeIndexFile,
} from "./apply-staged";
import { GitRestoreError } from "./errors";
import type { RestoreManifest } from "./manifest";
import { stagePayload } from "./payload";
import { makeStaging, sweepStaleStaging } from "./staging-dir";
import { openSafeRepository, quarantineBaseEnv, runSafeGit, type SafeRepository } from "./safe-git";
import { compareReading, readLive, type Difference } from "./verify";
import type { CaptureScope, WorktreeState } from "./worktree-state";
import { ignoreErrno } from "../errors";

export type ApplyResult = { status: "already_applied" } | { status: "applied"; keptIgnored: string[] };

export interface ApplyOptions {
  inherited?: NodeJS.ProcessEnv;
  signal?: AbortSignal;
  timeoutMs?: number;
  /**
   * What belongs to the target (default: the capture's scope). A fresh worktree of a shared
   * clone that receives a standalone clone's restore point (nested-clone conversion) is
   * `{ kind: "worktree", branchPrefix: "paperclip/<id>/" }`.
   */
  scope?: CaptureScope;
  /**
   * The target's name for each captured branch or tag (`refs/heads/x` ->
   * `refs/heads/paperclip/<id>/x`), or null to leave one out (its tip is on the shared clone's
   * remote-tracking refs). Default: the same name. The checked-out branch must keep a name.
   */
  renameRef?: (name: string) => string | null;
}

const ZERO = "0000000000000000000000000000000000000000";

function diverged(detail: string): GitRestoreError {
  return new GitRestoreError("RECLAIM_ERR_GIT_APPLY_DIVERGED", detail);
}

/** The manifest as the target should read after apply: branches under their target names. */
export function renamedManifest(
  manifest: RestoreManifest,
  rename: (name: string) => string | null,
): RestoreManifest {
  const byName = <T extends { name: string; oid?: string; peeled?: string }>(list: T[]): T[] =>
    list
      .flatMap((item): T[] => {
        const name = rename(item.name);
        if (name === null) return [];
        // A tag that becomes a branch points at the tagged commit.
        if (item.peeled !== undefined && !name.startsWith("refs/tags/")) {
          const { peeled, ...rest } = item;
          return [{ ...rest, name, oid: peeled } as T];
        }
        return [{ ...item, name }];
      })
      .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  let ref = manifest.head.ref;
  if (ref !== null) {
    ref = rename(ref);
    if (ref === null)
      throw new GitRestoreError("RECLAIM_ERR_GIT_APPLY_FAILED", `renameRef dropped ${manifest.head.ref}`);
  }
  return {
    ...manifest,
    head: { ...manifest.head, ref },
    refs: byName(manifest.refs),
    history: { ...manifest.history, refReflogs: byName(manifest.history.refReflogs) },
  };
}

/**
 * `payload` is the opened (decrypted) stream, or a function that opens it (so a missing
 * object fails inside, after the target was checked).
 */
export async function applyPayload(
  target: string,
  payload: Readable | (() => Promise<Readable>),
  captured: RestoreManifest,
  options: ApplyOptions = {},
): Promise<ApplyResult> {
  const repo = await openSafeRepository(target, options);
  const worktree = repo.worktree;
  if (worktree === undefined)
    throw new GitRestoreError("RECLAIM_ERR_GIT_NOT_A_REPOSITORY", `${target} is bare`);
  const rename = options.renameRef ?? ((name: string) => name);
  const manifest = renamedManifest(captured, rename);
  const rules = { scope: options.scope ?? captured.scope, nested: captured.nested };

  const live = await readLive(repo, rules);
  if ("kind" in live) throw diverged(live.detail);
  if (compareReading(manifest, live, { remoteTracking: true }).length === 0) {
    if (typeof payload !== "function") payload.destroy();
    return { status: "already_applied" };
  }
  const mustBeAncestors = await refuseDiverged(repo, live.state, manifest);

  await sweepStaleStaging(repo.gitDir);
  const staging = await makeStaging(repo.gitDir);
  try {
    const stream = typeof payload === "function" ? await payload() : payload;
    await stagePayload(stream, staging);
    const sections = await checkStaged(staging, captured);

    if (manifest.bundle) {
      const file = path.join(staging, "bundle");
      const verified = await repo.git(["bundle", "verify", "-q", file], { okCodes: [0, 1, 128] });
      if (verified.code !== 0) {
        throw new GitRestoreError("RECLAIM_ERR_GIT_APPLY_BASE_MISSING", verified.stderr.trim());
      }
    }
    // The refs as read at the start: the ref transaction checks each old value again.
    const currentRefs = new Map(live.state.allRefs.map((r) => [r.name, r.oid]));
    await withObjectQuarantine(
      worktree,
      "restore-apply",
      async (ctx) => {
        if (manifest.bundle) await ctx.git(["bundle", "unbundle", path.join(staging, "bundle")]);
        // A commit that no remote-tracking ref holds moves only forward (rehome, conversion:
        // the branch's earlier tip), checked with the imported objects before any is published.
        for (const { oid, to } of mustBeAncestors) {
          const check = await runSafeGit(["merge-base", "--is-ancestor", oid, to], {
            cwd: worktree,
            env: ctx.env,
            signal: ctx.signal,
            okCodes: [0, 1],
          });
          if (check.code !== 0)
            throw diverged(`${oid} is on no remote-tracking ref and not an ancestor of ${to}`);
        }
        for (const ref of manifest.refs) {
          const old = currentRefs.get(ref.name);
          if (old !== ref.oid) ctx.updateRefAfterPublish(ref.name, ref.oid, old ?? ZERO);
        }
      },
      { env: quarantineBaseEnv(repo), signal: options.signal, timeoutMs: options.timeoutMs },
    );

    await repo.git(["read-tree", "-u", "--reset", manifest.head.oid]);
    if (manifest.head.ref) {
      if (live.state.head.ref !== manifest.head.ref)
        await repo.git(["symbolic-ref", "HEAD", manifest.head.ref]);
    } else await repo.git(["update-ref", "--no-deref", "HEAD", manifest.head.oid]);

    const snapshotOptions = { limits: READ_LIMITS, durable: false };
    const { tracked, deleted, untrackedFromHead = [] } = sections.index;
    for (const file of [...tracked, ...deleted, ...untrackedFromHead]) {
      await unlink(path.join(worktree, file)).catch(ignoreErrno("ENOENT"));
    }
    await restoreSnapshot(createReadStream(path.join(staging, "tracked")), worktree, {
      ...snapshotOptions,
      expectedTreeDigest: manifest.tracked.treeDigest,
    });
    await restoreSnapshot(createReadStream(path.join(staging, "untracked")), worktree, {
      ...snapshotOptions,
      expectedTreeDigest: manifest.untracked.treeDigest,
    });
    const ignoredTree = path.join(staging, "ignored-tree");
    await mkdir(ignoredTree, { mode: 0o700 });
    await restoreSnapshot(createReadStream(path.join(staging, "ignored")), ignoredTree, {
      ...snapshotOptions,
      expectedTreeDigest: manifest.ignored.treeDigest,
    });
    const keptIgnored: string[] = [];
    await linkInWithoutReplacing(ignoredTree, worktree, "", keptIgnored);

    await writeIndexFile(repo, sections.index.entries);
    await repo.git(["update-index", "-q", "--refresh"], { okCodes: [0, 1] });
    const created = new Set(manifest.refs.filter((r) => !currentRefs.has(r.name)).map((r) => r.name));
    await writeHistory(repo, sections.history, rename, created);

    const after = await readLive(repo, rules);
    const differences: Difference[] =
      "kind" in after
        ? [after]
        : compareReading(manifest, after, { remoteTracking: true, ignored: keptIgnored.length > 0 });
    if (differences.length > 0) {
      throw new GitRestoreError(
        "RECLAIM_ERR_GIT_APPLY_FAILED",
        `the restored worktree differs: ${differences.map((d) => d.detail).join("; ")}`,
      );
    }
    return { status: "applied", keptIgnored };
  } finally {
    await rm(staging, { recursive: true, force: true });
  }
}

/** A commit the target holds that moving a ref away from could lose. */
async function atRisk(
  repo: SafeRepository,
  oid: string,
  manifest: RestoreManifest,
  state: WorktreeState,
): Promise<boolean> {
  if (oid === manifest.head.oid || manifest.refs.some((r) => r.oid === oid)) return false;
  if (state.allRefs.some((r) => r.oid === oid && r.name.startsWith("refs/remotes/"))) return false;
  const onRemote = await repo.text(["for-each-ref", "--count=1", "--contains", oid, "refs/remotes/"]);
  return onRemote.trim() === "";
}

/**
 * Fails closed on local changes; returns the commits at risk (HEAD, or a branch the apply
 * moves) that must turn out to be ancestors of where the apply puts them.
 */
async function refuseDiverged(
  repo: SafeRepository,
  state: WorktreeState,
  manifest: RestoreManifest,
): Promise<{ oid: string; to: string }[]> {
  if (state.trackedStatus.length > 0) throw diverged(`tracked changes (${state.trackedStatus.length})`);
  if (state.untracked.length > 0)
    throw diverged(`untracked files: ${state.untracked.slice(0, 5).join(", ")}`);
  const checks: { oid: string; to: string }[] = [];
  if (await atRisk(repo, state.head.oid, manifest, state))
    checks.push({ oid: state.head.oid, to: manifest.head.oid });
  const current = new Map(state.allRefs.map((r) => [r.name, r.oid]));
  for (const ref of manifest.refs) {
    const oid = current.get(ref.name);
    if (oid !== undefined && oid !== ref.oid && (await atRisk(repo, oid, manifest, state)))
      checks.push({ oid, to: ref.oid });
  }
  return checks;
}
