/**
 * Why a tree cannot be captured, validated or restored. Callers branch on `reason` (the
 * task-directory domain maps them to its skip reasons); the message only says where.
 *
 *   unsupported_filesystem_entry  a socket, device, FIFO or other special file, or a name
 *                                 that is not valid UTF-8 (it could not be restored as is)
 *   too_many_files                more entries than `limits.maxFiles`
 *   file_too_large                one file over `limits.maxFileBytes`
 *   too_large                     all files together over `limits.maxTotalBytes`
 *   unsafe_root                   the root is missing, a symbolic link or not a directory
 *   unsafe_path                   a listed path is absolute, has `..`, or a parent is a link
 *   changed_during_capture        an entry changed type, identity or size while it was read
 *   invalid_snapshot              the stream is not a well-formed snapshot (tampered, cut
 *                                 off, out of order, over the limits it declares)
 *   restore_target_exists         restoring would replace an existing entry
 */
export type TreeSnapshotReason =
  | "unsupported_filesystem_entry"
  | "too_many_files"
  | "file_too_large"
  | "too_large"
  | "unsafe_root"
  | "unsafe_path"
  | "changed_during_capture"
  | "invalid_snapshot"
  | "restore_target_exists";

export class TreeSnapshotError extends Error {
  constructor(
    readonly reason: TreeSnapshotReason,
    /** The relative path concerned ("" for the root), when there is one. */
    readonly entryPath: string | null,
    detail: string,
    options?: { cause?: unknown },
  ) {
    super(`${reason}${entryPath === null ? "" : ` at '${entryPath}'`}: ${detail}`, options);
    this.name = "TreeSnapshotError";
  }
}

export function isTreeSnapshotError(error: unknown, reason?: TreeSnapshotReason): error is TreeSnapshotError {
  return error instanceof TreeSnapshotError && (reason === undefined || error.reason === reason);
}
