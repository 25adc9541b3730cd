/**
 * Directory snapshots: a deterministic, streamed archive of a tree (files with their modes,
 * directories, symbolic links as links) that restores byte for byte, for restore points of
 * task directories and of a git worktree's untracked and ignored files.
 *
 * Lifecycle:
 *
 *  1. `planTree(root, {selection, limits})` lstats the selection without following any link
 *     and without reading file contents; it refuses special files
 *     (`unsupported_filesystem_entry`) and the caller's limits (`too_many_files`,
 *     `file_too_large`, `too_large`) before a byte is stored, and knows the exact encoded size.
 *  2. `encodeSnapshot(plan)` streams the snapshot (same tree, same bytes) in constant memory;
 *     pass `stream` to `seal()` with `plaintextSize: plan.encodedSize`. A file that changes
 *     while it is read errors the stream (`changed_during_capture`).
 *  3. `validateSnapshot(open(...), {limits, expectedTreeDigest})` reads a stored snapshot
 *     back completely and proves it restorable (`invalid_snapshot` otherwise), before the
 *     original is removed.
 *  4. `restoreSnapshot(stream, staging, ...)` writes it into a directory without replacing
 *     anything (`restore_target_exists`) or following links; `digestTree(staging, ...)` then
 *     gives the tree digest to compare with the recorded one.
 *  5. `digestTree(root, ...)` is also the "has anything changed" check before a removal:
 *     its `stateDigest` equals the plan's only if nothing was written, touched or renamed.
 *
 * Example (a task directory):
 *
 *   const selection = { kind: "walk", exclude: excludeNodeModulesBesidePackageJson } as const;
 *   const plan = await planTree(dir, { selection, limits });
 *   const { stream, summary } = encodeSnapshot(plan);
 *   const sealed = await seal(stream, { instanceKey, storage, storageKey, plaintextSize: plan.encodedSize });
 *   const { treeDigest } = await summary;
 *   await validateSnapshot(await open(storage, storageKey, instanceKey), { limits, expectedTreeDigest: treeDigest });
 *   const now = await digestTree(dir, { selection, limits });
 *   if (now.stateDigest !== plan.stateDigest || now.treeDigest !== treeDigest) keep(dir);
 */
export { TreeSnapshotError, isTreeSnapshotError, type TreeSnapshotReason } from "./errors";
export { type TreeSnapshotLimits, type EntryKind as TreeEntryKind } from "./format";
export {
  planTree,
  excludeNodeModulesBesidePackageJson,
  type TreePlan,
  type PlannedEntry,
  type PlanOptions,
  type RootIdentity,
  type TreeSelection,
  type ExcludeRule,
  type ExcludeCandidate,
} from "./plan";
export { encodeSnapshot, type EncodedSnapshot, type SnapshotSummary } from "./encode";
export { validateSnapshot, type DecodeOptions } from "./decode";
export { restoreSnapshot, type RestoreOptions } from "./restore";
export { digestTree, type TreeDigestResult } from "./digest";
