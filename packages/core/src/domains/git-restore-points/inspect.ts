/**
 * Whether a checkout's remote reproduces it exactly, and if not, whether a restore point can
 * save what the remote lacks: one capture (`captureWorktree`, against the remote read fresh
 * at the workspace's repository URL) answers both. The capture is returned open, so the
 * caller seals it (restore-point mode) or disposes of it (strict mode, or reproducible).
 *
 * Reproducible: no commit beyond what the remote holds (the bundle carries only the index's
 * blobs, if anything), no tracked change, no untracked file, no ignored file the restore
 * point would save (`.env` files and regenerable directories aside), no history-only commit.
 *
 * Nested checkouts follow the spec's extra rules (scope: their own branch and `paperclip/<id>/`
 * prefix for a worktree of a shared clone, everything for a standalone clone). The capture
 * applies them (`nested: true`: other branches or tags ahead of the remote, reflog-only
 * commits outside the bundled history, unreachable objects, `COMMIT_EDITMSG` drafts,
 * remote-tracking history saved as history-only objects); one more is the domain's: ignored
 * files other than `.env` (outside regenerable directories) keep the workspace
 * (`nested_checkout_ignored_files`; spec: "Submodules, special git state and ignored files
 * other than `.env` still keep a worktree from expiring").
 */
import {
  captureWorktree,
  CaptureRefusedError,
  type Capture,
  type CapturePreview,
  type CaptureScope,
  type RefusalReason,
  type RestoreManifest,
} from "@reclaim/shared";
import type { CheckoutSurvey } from "./survey";

export type Inspection =
  | { verdict: "reproducible" | "unreproducible"; capture: Capture }
  | { verdict: "blocked"; reason: RefusalReason | NestedReason; paths: string[]; detail: string };

export type NestedReason = "nested_checkout_ignored_files";

export interface InspectOptions {
  /** The repository URL the remote is read from (the workspace row's, never the checkout's config). */
  remoteUrl: string;
  nested: boolean;
  /** The manifest of the restore point the checkout was last restored from (manifests.ts). */
  restoredFrom?: RestoreManifest;
  tmpDir?: string;
  signal?: AbortSignal;
}

/** The capture scope: a worktree's own branch and `paperclip/<id>/` prefix, or the whole clone. */
export function scopeOf(checkout: Pick<CheckoutSurvey, "kind" | "headRef">): CaptureScope {
  if (checkout.kind === "clone") return { kind: "clone" };
  const match = /^refs\/heads\/(paperclip\/[^/]+\/)/.exec(checkout.headRef ?? "");
  return match ? { kind: "worktree", branchPrefix: match[1] } : { kind: "worktree" };
}

/**
 * The capture of `checkout`, judged. A refusal is `blocked` with its reason; any other error
 * (the remote cannot be read, git failed) is thrown, for a retry.
 */
export async function inspectCheckout(
  checkout: CheckoutSurvey,
  options: InspectOptions,
): Promise<Inspection> {
  let capture: Capture;
  try {
    capture = await captureWorktree(checkout.path, {
      base: { kind: "remote", url: options.remoteUrl },
      scope: scopeOf(checkout),
      nested: options.nested,
      restoredFrom: options.restoredFrom,
      tmpDir: options.tmpDir,
      signal: options.signal,
    });
  } catch (error) {
    if (error instanceof CaptureRefusedError) {
      return { verdict: "blocked", reason: error.reason, paths: error.paths, detail: error.message };
    }
    throw error;
  }
  const blocked = options.nested ? await nestedBlock(capture.preview) : null;
  if (blocked) {
    await capture.dispose();
    return blocked;
  }
  return { verdict: isReproducible(capture.preview) ? "reproducible" : "unreproducible", capture };
}

/** The remote reproduces the capture exactly (see the header). */
export function isReproducible(preview: CapturePreview): boolean {
  return (
    preview.commits === 0 &&
    preview.tracked === 0 &&
    preview.deleted === 0 &&
    preview.untracked === 0 &&
    preview.ignored === 0
  );
}

async function nestedBlock(preview: CapturePreview): Promise<Inspection | null> {
  if (preview.ignored === 0) return null;
  return {
    verdict: "blocked",
    reason: "nested_checkout_ignored_files",
    paths: [],
    detail: `${preview.ignored} ignored files`,
  };
}
