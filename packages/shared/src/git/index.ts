/**
 * Git restore-point payloads: capture what a worktree's remote cannot reproduce, verify the
 * worktree is unchanged, apply it back. No database, no queue: every git domain calls this.
 * See capture.ts, verify.ts and apply.ts for each contract, safe-git.ts for how git is run.
 */
export {
  captureWorktree,
  UPLOAD_LIMITS,
  LOCAL_TRANSFER_LIMITS,
  type Capture,
  type CapturePreview,
  type CaptureOptions,
  type BaseSource,
  type RestoreLimits,
} from "./capture";
export { verifyUnchanged, type VerifyResult, type Difference, type DifferenceKind } from "./verify";
export { applyPayload, renamedManifest, type ApplyResult, type ApplyOptions } from "./apply";
export {
  MANIFEST_SCHEMA,
  serializeManifest,
  parseManifest,
  type RestoreManifest,
  type HistoryDigests,
} from "./manifest";
export { GitRestoreError, CaptureRefusedError, type GitRestoreErrorCode, type RefusalReason } from "./errors";
export { REGENERABLE_DIRECTORIES, isEnvFile, isLeftOutOfIgnored } from "./exclusions";
export { openSafeRepository, remoteEnv, runSafeGit, type SafeRepository } from "./safe-git";
export type { CaptureScope } from "./worktree-state";
export {
  takeGitLocks,
  breakLeftoverGitLocks,
  gitLockFiles,
  headRefOf,
  GitLocksBusy,
  GIT_LOCK_MARKER,
  type HeldGitLocks,
  type TakeOptions as GitLockOptions,
} from "./lock-files";
