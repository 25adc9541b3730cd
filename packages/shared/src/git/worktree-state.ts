/**
 * One reading of a worktree, shared by capture, verify and apply: HEAD, the index, which
 * tracked paths differ from HEAD (and which of them are gone), untracked and ignored files
 * (with the exclusions), history (HEAD reflog, ORIG_HEAD, the scope's branches and their
 * reflogs) and remote-tracking refs. Everything that makes a worktree uncapturable is refused
 * here, with the spec's reason, so verify sees a refusal appear too.
 *
 * Classification is one `git status --porcelain=v2 -z --untracked-files=all
 * --ignored=matching --no-renames` (content based: git re-hashes stat-dirty files in memory,
 * and GIT_OPTIONAL_LOCKS=0 keeps it from writing the index).
 */
import { lstat, readdir, readFile } from "node:fs/promises";
import path from "node:path";
import { CaptureRefusedError, GitRestoreError } from "./errors";
import { isEnvFile, isLeftOutOfIgnored, NESTED_CHECKOUTS_DIRECTORY } from "./exclusions";
import { parseIndex, type IndexEntry } from "./index-file";
import type { SafeRepository } from "./safe-git";
import { errnoCode } from "../errors";

/** What belongs to the capture (spec, "Nested project repository worktrees"). */
export type CaptureScope =
  /** A standalone clone: every local branch and tag is the checkout's own. */
  | { kind: "clone" }
  /**
   * A worktree of a shared clone: its HEAD, HEAD reflog, ORIG_HEAD, per-worktree index, its
   * checked-out branch and every branch under `branchPrefix` (`paperclip/<id>/`).
   */
  | { kind: "worktree"; branchPrefix?: string };

export interface RefValue {
  name: string;
  oid: string;
  /** For an annotated tag: the object it tags. */
  peeled?: string;
}

export interface WorktreeState {
  head: { oid: string; ref: string | null };
  index: { version: number; entries: IndexEntry[] };
  /** Normalized `git status` records of tracked paths that differ from HEAD or the index. */
  trackedStatus: string[];
  /** Tracked paths (changed from HEAD) present in the worktree: saved as files. */
  trackedPresent: string[];
  /** Tracked paths (in HEAD or the index) that are gone from the worktree. */
  deleted: string[];
  /** Paths HEAD has that the index dropped but the worktree keeps: saved as untracked or ignored. */
  untrackedFromHead: string[];
  untracked: string[];
  ignored: string[];
  headReflog: Buffer;
  origHead: string | null;
  /** The scope's branches (and, for a clone, tags), sorted. */
  refs: RefValue[];
  refReflogs: { name: string; log: Buffer }[];
  /**
   * refs/remotes/*, sorted, and their reflogs; `null` for a worktree of a shared clone, whose
   * remote-tracking refs belong to the shared clone (they stay there and never block).
   */
  remoteTracking: RefValue[] | null;
  remoteTrackingReflogs: { name: string; log: Buffer }[];
  /** Every branch and tag of the repository (for the nested-checkout rules). */
  allRefs: RefValue[];
}

export interface ReadOptions {
  scope: CaptureScope;
  /** Nested `.paperclip-repositories` checkout rules (COMMIT_EDITMSG drafts). */
  nested?: boolean;
}

const SPECIAL_STATE = [
  "MERGE_HEAD",
  "CHERRY_PICK_HEAD",
  "REVERT_HEAD",
  "BISECT_LOG",
  "BISECT_START",
  "rebase-merge",
  "rebase-apply",
  "sequencer",
];

export const ZERO_OID = /^0+$/;
const OID = /^[0-9a-f]{40}([0-9a-f]{24})?$/;

/** The commits a reflog names (old and new side of every entry), in order, with repeats. */
export function reflogOids(log: Buffer | string): string[] {
  const oids: string[] = [];
  for (const line of log.toString().split("\n")) {
    const [oldOid, newOid] = line.split(" ", 2);
    for (const oid of [oldOid, newOid]) if (oid && OID.test(oid) && !ZERO_OID.test(oid)) oids.push(oid);
  }
  return oids;
}

async function exists(file: string): Promise<boolean> {
  return lstat(file).then(
    () => true,
    () => false,
  );
}

async function readOptional(file: string): Promise<Buffer | null> {
  return readFile(file).catch((error: unknown) => {
    if (errnoCode(error) === "ENOENT") return null;
    throw error;
  });
}

export async function readWorktreeState(repo: SafeRepository, options: ReadOptions): Promise<WorktreeState> {
  const worktree = repo.worktree;
  if (worktree === undefined)
    throw new GitRestoreError("RECLAIM_ERR_GIT_NOT_A_REPOSITORY", `${repo.gitDir} is bare`);

  const special: string[] = [];
  for (const name of SPECIAL_STATE) if (await exists(path.join(repo.gitDir, name))) special.push(name);
  if (special.length > 0) throw new CaptureRefusedError("special_git_state", special);
  if (await exists(path.join(repo.commonDir, "shallow"))) throw new CaptureRefusedError("shallow_history");

  // HEAD
  // One call: the commit, then the branch HEAD names ("HEAD" when detached).
  const resolved = await repo.git(["rev-parse", "HEAD^{commit}", "--symbolic-full-name", "HEAD"], {
    okCodes: [0, 128],
  });
  const [oid, name] = resolved.stdout.toString().split("\n");
  if (resolved.code !== 0 || !oid)
    throw new CaptureRefusedError("unsupported_refs", ["HEAD"], "HEAD has no commit");
  const head = { oid, ref: name && name !== "HEAD" ? name : null };

  // Index
  const indexData = await readOptional(path.join(repo.gitDir, "index"));
  const index = indexData
    ? parseIndex(indexData, repo.objectFormat)
    : { version: 2, entries: [], extensions: [] };
  const unsupported = index.extensions.filter((sig) => sig === "link" || sig === "sdir");
  if (unsupported.length > 0)
    throw new CaptureRefusedError("unsupported_index", unsupported, "split or sparse index");
  const hidden = index.entries.filter((e) => e.assumeValid || e.skipWorktree).map((e) => e.path);
  if (hidden.length > 0) throw new CaptureRefusedError("hidden_index_flags", hidden);
  const gitlinks = index.entries.filter((e) => e.mode === 0o160000).map((e) => e.path);
  if (gitlinks.length > 0) throw new CaptureRefusedError("submodule", gitlinks);

  // Working tree
  const status = await repo.git([
    "status",
    "--porcelain=v2",
    "-z",
    "--untracked-files=all",
    "--ignored=matching",
    "--no-renames",
    "--ignore-submodules=none",
  ]);
  const trackedStatus: string[] = [];
  const changed: string[] = [];
  const untracked: string[] = [];
  const ignoredEntries: string[] = [];
  const nestedRepos: string[] = [];
  for (const record of status.stdout.toString("utf8").split("\0")) {
    if (record === "") continue;
    const type = record[0];
    if (type === "1" || type === "u") {
      const fields = type === "1" ? 8 : 10;
      let at = 0;
      for (let i = 0; i < fields; i++) at = record.indexOf(" ", at) + 1;
      const file = record.slice(at);
      const sub = record.split(" ", 3)[2]!;
      if (sub.startsWith("S")) throw new CaptureRefusedError("submodule", [file]);
      trackedStatus.push(record);
      changed.push(file);
    } else if (type === "?") {
      const file = record.slice(2);
      if (file.endsWith("/")) {
        if (file.split("/")[0] !== NESTED_CHECKOUTS_DIRECTORY) nestedRepos.push(file);
        continue;
      }
      if (!isEnvFile(file)) untracked.push(file);
    } else if (type === "!") {
      ignoredEntries.push(record.slice(2));
    } else if (type === "2") {
      throw new GitRestoreError("RECLAIM_ERR_GIT_COMMAND_FAILED", `unexpected rename record ${record}`);
    }
  }
  if (nestedRepos.length > 0) throw new CaptureRefusedError("untracked_nested_repository", nestedRepos);

  const ignored = await expandIgnored(worktree, ignoredEntries);
  // A path removed from the index (`git rm --cached`) but still on disk is saved once, as
  // the untracked or ignored file it now is.
  const elsewhere = new Set([...untracked, ...ignored]);
  const trackedPresent: string[] = [];
  const deleted: string[] = [];
  const untrackedFromHead: string[] = [];
  for (const file of changed) {
    if (await exists(path.join(worktree, file))) {
      (elsewhere.has(file) ? untrackedFromHead : trackedPresent).push(file);
    } else deleted.push(file);
  }
  trackedPresent.push(...(await oddModes(worktree, index.entries, new Set(changed))));
  trackedPresent.sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)));

  // History and refs
  const headReflog = (await readOptional(path.join(repo.gitDir, "logs", "HEAD"))) ?? Buffer.alloc(0);
  const origRaw = await readOptional(path.join(repo.gitDir, "ORIG_HEAD"));
  const origHead = origRaw ? origRaw.toString("utf8").trim() || null : null;
  const allRefs = await listRefs(repo);
  const stash = allRefs.filter((r) => r.name === "refs/stash");
  if (stash.length > 0) throw new CaptureRefusedError("stash", ["refs/stash"]);
  const refs = allRefs.filter((r) => inScope(r.name, head.ref, options.scope));
  // Notes, replacements and other namespaces change what a checkout means (or belong to
  // nobody): in a standalone clone and in a shared clone alike they keep the worktree.
  const odd = allRefs.filter(
    (r) =>
      !r.name.startsWith("refs/heads/") &&
      !r.name.startsWith("refs/tags/") &&
      !r.name.startsWith("refs/remotes/"),
  );
  if (odd.length > 0)
    throw new CaptureRefusedError(
      "unsupported_refs",
      odd.map((r) => r.name),
    );
  const refReflogs = await reflogsOf(repo, refs);
  const remoteTracking =
    options.scope.kind === "clone" ? allRefs.filter((r) => r.name.startsWith("refs/remotes/")) : null;
  const remoteTrackingReflogs = remoteTracking ? await reflogsOf(repo, remoteTracking) : [];

  if (options.nested) await refuseCommitDraft(repo);

  return {
    head,
    index: { version: index.version, entries: index.entries },
    trackedStatus,
    trackedPresent,
    deleted,
    untrackedFromHead,
    untracked,
    ignored,
    headReflog,
    origHead,
    refs,
    refReflogs,
    remoteTracking,
    remoteTrackingReflogs,
    allRefs,
  };
}

function inScope(name: string, headRef: string | null, scope: CaptureScope): boolean {
  if (name === headRef) return true;
  if (scope.kind === "clone") return name.startsWith("refs/heads/") || name.startsWith("refs/tags/");
  return scope.branchPrefix !== undefined && name.startsWith(`refs/heads/${scope.branchPrefix}`);
}

async function listRefs(repo: SafeRepository): Promise<RefValue[]> {
  // Ref names cannot hold a space; the peeled oid of an annotated tag comes first so the
  // name can be the rest of the line.
  const out = await repo.text(["for-each-ref", "--format=%(objectname) %(*objectname) %(refname)"]);
  return out
    .split("\n")
    .filter(Boolean)
    .map((line): RefValue => {
      const [oid, peeled, ...name] = line.split(" ");
      return peeled ? { name: name.join(" "), oid: oid!, peeled } : { name: name.join(" "), oid: oid! };
    })
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

async function reflogsOf(repo: SafeRepository, refs: RefValue[]): Promise<{ name: string; log: Buffer }[]> {
  const logs: { name: string; log: Buffer }[] = [];
  for (const ref of refs) {
    const log = await readOptional(path.join(repo.commonDir, "logs", ref.name));
    if (log && log.length > 0) logs.push({ name: ref.name, log });
  }
  return logs;
}

/**
 * Unchanged tracked files whose permission bits are not what a checkout writes (0644, or
 * 0755 for an executable entry): git records only the executable bit, so such a file is saved
 * with its bytes and mode like a changed one.
 */
async function oddModes(worktree: string, entries: IndexEntry[], changed: Set<string>): Promise<string[]> {
  const out: string[] = [];
  const candidates = entries.filter(
    (e) => e.stage === 0 && !changed.has(e.path) && (e.mode & 0o170000) === 0o100000,
  );
  for (let i = 0; i < candidates.length; i += 64) {
    const batch = candidates.slice(i, i + 64);
    const stats = await Promise.all(batch.map((e) => lstat(path.join(worktree, e.path)).catch(() => null)));
    batch.forEach((entry, j) => {
      const stat = stats[j];
      if (stat?.isFile() && (stat.mode & 0o7777) !== (entry.mode & 0o111 ? 0o755 : 0o644))
        out.push(entry.path);
    });
  }
  return out;
}

/** Ignored entries as files and links, directories expanded, exclusions applied. */
async function expandIgnored(worktree: string, entries: string[]): Promise<string[]> {
  const out: string[] = [];
  const nested: string[] = [];
  const walk = async (rel: string): Promise<void> => {
    const items = await readdir(path.join(worktree, rel), { withFileTypes: true });
    for (const item of items) {
      const child = `${rel}/${item.name}`;
      if (item.name === ".git") {
        nested.push(`${rel}/`);
        continue;
      }
      if (item.isDirectory()) {
        if (!isLeftOutOfIgnored(child, true)) await walk(child);
      } else if (!isLeftOutOfIgnored(child, false)) out.push(child);
    }
  };
  for (const entry of entries) {
    if (entry.endsWith("/")) {
      const dir = entry.slice(0, -1);
      if (isLeftOutOfIgnored(dir, true)) continue;
      const stat = await lstat(path.join(worktree, dir));
      if (stat.isDirectory()) await walk(dir);
      else if (!isLeftOutOfIgnored(dir, false)) out.push(dir);
    } else if (!isLeftOutOfIgnored(entry, false)) out.push(entry);
  }
  if (nested.length > 0) throw new CaptureRefusedError("ignored_nested_repository", nested);
  return out.sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)));
}

/** A `COMMIT_EDITMSG` draft that matches no commit in the checkout's history. */
async function refuseCommitDraft(repo: SafeRepository): Promise<void> {
  const draft = await readOptional(path.join(repo.gitDir, "COMMIT_EDITMSG"));
  if (!draft) return;
  const stripped = (await repo.text(["stripspace", "--strip-comments"], { input: draft })).trim();
  if (stripped === "") return;
  const messages = await repo.git(["log", "--all", "--reflog", "--format=%B%x00", "--max-count=100000"]);
  const known = messages.stdout
    .toString("utf8")
    .split("\0")
    .map((m) => m.trim());
  if (!known.includes(stripped)) throw new CaptureRefusedError("commit_message_draft", ["COMMIT_EDITMSG"]);
}
