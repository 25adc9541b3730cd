import { spawn } from "node:child_process";

export interface GitProcessResult {
  stdout: Buffer;
  stderr: string;
  code: number;
}

export interface GitProcessOptions {
  cwd: string;
  env: NodeJS.ProcessEnv;
  /** Aborting kills git and everything it started (filters, hooks) with SIGKILL. */
  signal?: AbortSignal;
  input?: string | Buffer;
  /** Exit codes that resolve instead of rejecting (default only 0). */
  okCodes?: number[];
}

/**
 * The one way shared starts git: `git <args>` (never through a shell) in its own process
 * group. On abort the whole group is killed and the promise settles only after git has
 * exited, so nothing is still writing (a clean or smudge filter would otherwise outlive a
 * killed `git add`). Another exit code rejects with `fail(detail)`, the caller's error;
 * an abort rejects with the signal's reason.
 */
export function spawnGit(
  args: string[],
  options: GitProcessOptions,
  fail: (detail: string, cause?: Error) => Error,
): Promise<GitProcessResult> {
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
      try {
        if (child.pid !== undefined) process.kill(-child.pid, "SIGKILL");
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
      reject(fail(error.message, error));
    });
    child.on("close", (code, killedBy) => {
      signal?.removeEventListener("abort", kill);
      if (signal?.aborted) reject(signal.reason);
      else if ((options.okCodes ?? [0]).includes(code ?? -1))
        resolve({ stdout: Buffer.concat(stdout), stderr, code: code ?? -1 });
      else {
        const how = killedBy ? `killed by ${killedBy}` : `exit ${code}`;
        reject(fail(`${how}: ${stderr.trim()}`));
      }
    });
  });
}
