import { spawn } from "node:child_process";
import { QuarantineError } from "../errors";

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
export function runGit(args: string[], options: GitRunOptions): Promise<string> {
  const { signal } = options;
  if (signal?.aborted) return Promise.reject(signal.reason);
  return new Promise((resolve, reject) => {
    const child = spawn("git", args, {
      cwd: options.cwd,
      env: options.env,
      detached: true,
      stdio: [options.input === undefined ? "ignore" : "pipe", "pipe", "pipe"],
    });
    const stdout: Buffer[] = [];
    let stderr = "";
    child.stdout!.on("data", (chunk: Buffer) => stdout.push(chunk));
    child.stderr!.on("data", (chunk: Buffer) => {
      stderr = (stderr + chunk.toString()).slice(-4000);
    });
    const kill = (): void => {
      if (child.pid === undefined) return;
      try {
        process.kill(-child.pid, "SIGKILL");
      } catch {
        // already gone
      }
    };
    signal?.addEventListener("abort", kill, { once: true });
    if (options.input !== undefined) {
      child.stdin!.on("error", () => undefined); // git may exit before reading it all
      child.stdin!.end(options.input);
    }
    child.on("error", (error) => {
      signal?.removeEventListener("abort", kill);
      reject(
        new QuarantineError("RECLAIM_ERR_QUARANTINE_GIT_FAILED", `git ${args.join(" ")}: ${error.message}`, {
          cause: error,
        }),
      );
    });
    child.on("close", (code, killedBy) => {
      signal?.removeEventListener("abort", kill);
      if (signal?.aborted) reject(signal.reason);
      else if (code === 0) resolve(Buffer.concat(stdout).toString("utf8"));
      else {
        const how = killedBy ? `killed by ${killedBy}` : `exit ${code}`;
        reject(
          new QuarantineError(
            "RECLAIM_ERR_QUARANTINE_GIT_FAILED",
            `git ${args.join(" ")}: ${how}: ${stderr.trim()}`,
          ),
        );
      }
    });
  });
}
