import { QuarantineError } from "../errors";
import { spawnGit } from "../git-process";

export interface GitRunOptions {
  cwd: string;
  env: NodeJS.ProcessEnv;
  /** Aborting kills git and everything it started (filters, hooks) with SIGKILL. */
  signal?: AbortSignal;
  input?: string | Buffer;
}

/**
 * Runs `git <args>` (never through a shell) in its own process group and resolves with its
 * stdout. On abort the whole group is killed and the promise settles only after git has
 * exited, so nothing is still writing into a quarantine when the caller removes it.
 * A clean or smudge filter started by git would otherwise outlive a killed `git add`.
 *
 * @throws QuarantineError RECLAIM_ERR_QUARANTINE_GIT_FAILED on a non-zero exit (with the end
 *   of stderr), or the signal's reason when aborted.
 */
export async function runGit(args: string[], options: GitRunOptions): Promise<string> {
  const result = await spawnGit(
    args,
    options,
    (detail, cause) =>
      new QuarantineError(
        "RECLAIM_ERR_QUARANTINE_GIT_FAILED",
        `git ${args.join(" ")}: ${detail}`,
        cause ? { cause } : undefined,
      ),
  );
  return result.stdout.toString("utf8");
}
