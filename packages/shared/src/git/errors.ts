/**
 * Errors of the git restore-point library. Like the package catalog (`../errors.ts`): a
 * stable `code`, a `permanent` flag, the cause kept. Refusals carry a `reason` in the spec's
 * words (`submodule`, `special_git_state`, ...), which callers log as their skip reason.
 * Sealing failures while applying are not wrapped: they keep the seal's own error and code.
 */
const CATALOG = {
  RECLAIM_ERR_GIT_NOT_A_REPOSITORY: { permanent: true, message: "Not a git work tree" },
  RECLAIM_ERR_GIT_COMMAND_FAILED: { permanent: false, message: "A git command failed" },
  RECLAIM_ERR_GIT_CAPTURE_REFUSED: { permanent: false, message: "The worktree cannot be captured" },
  RECLAIM_ERR_GIT_CAPTURE_CHANGED: {
    permanent: false,
    message: "The worktree changed while it was captured",
  },
  RECLAIM_ERR_GIT_PAYLOAD_INVALID: { permanent: true, message: "The restore-point payload is invalid" },
  RECLAIM_ERR_GIT_PAYLOAD_SCHEMA: { permanent: true, message: "Unknown restore-point payload schema" },
  RECLAIM_ERR_GIT_APPLY_DIVERGED: {
    permanent: false,
    message: "The target diverged from the restore point; it was left untouched",
  },
  RECLAIM_ERR_GIT_APPLY_BASE_MISSING: {
    permanent: false,
    message: "The target lacks commits the restore point's bundle needs",
  },
  RECLAIM_ERR_GIT_APPLY_FAILED: { permanent: false, message: "Applying the restore point failed" },
} as const satisfies Record<string, { permanent: boolean; message: string }>;

export type GitRestoreErrorCode = keyof typeof CATALOG;

export class GitRestoreError extends Error {
  readonly code: GitRestoreErrorCode;
  readonly permanent: boolean;

  constructor(code: GitRestoreErrorCode, detail?: string, options?: { cause?: unknown }) {
    super(detail ? `${CATALOG[code].message}: ${detail}` : CATALOG[code].message, options);
    this.code = code;
    this.permanent = CATALOG[code].permanent;
  }

  override get name(): string {
    return this.constructor.name;
  }
}

/** Why a worktree cannot be captured, in the spec's words where it has them. */
export type RefusalReason =
  | "submodule"
  | "special_git_state"
  | "hidden_index_flags"
  | "shallow_history"
  | "untracked_nested_repository"
  | "ignored_nested_repository"
  | "special_file"
  | "filtered_path"
  | "stash"
  | "nested_clone_has_stash"
  | "commit_message_draft"
  | "unsupported_refs"
  | "unsupported_index"
  | "no_remote_base"
  | "other_branch_unpushed"
  | "unique_branch_reflog_commits"
  | "unreachable_objects"
  | "restore_point_too_many_files"
  | "restore_point_file_too_large"
  | "restore_point_too_large"
  | "restore_point_bundle_too_large"
  | "restore_point_too_many_commits";

export class CaptureRefusedError extends GitRestoreError {
  readonly reason: RefusalReason;
  /** Up to five paths, refs or commits that caused the refusal. */
  readonly paths: string[];

  constructor(reason: RefusalReason, paths: string[] = [], detail?: string) {
    super(
      "RECLAIM_ERR_GIT_CAPTURE_REFUSED",
      `${reason}${paths.length ? ` (${paths.slice(0, 5).join(", ")})` : ""}${detail ? `: ${detail}` : ""}`,
    );
    this.reason = reason;
    this.paths = paths.slice(0, 5);
  }
}
