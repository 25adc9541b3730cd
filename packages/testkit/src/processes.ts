/**
 * Reclaim services as real child processes (`node --import tsx apps/<service>/src/main.ts`),
 * for tests that kill, signal or restart them.
 */
import { spawn, type ChildProcess } from "node:child_process";
import path from "node:path";
import { REPO_ROOT } from "@reclaim/core/src/db/migrate";
import { waitFor } from "./wait";

export interface ServiceProcess {
  child: ChildProcess;
  output(): string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  waitForOutput(pattern: RegExp, timeoutMs?: number): Promise<void>;
  kill(signal?: NodeJS.Signals): void;
}

export function spawnService(service: "scheduler" | "worker", env: Record<string, string>): ServiceProcess {
  const child = spawn(
    process.execPath,
    ["--import", "tsx", path.join(REPO_ROOT, `apps/${service}/src/main.ts`)],
    {
      cwd: REPO_ROOT,
      env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "/root", ...env },
      stdio: ["ignore", "pipe", "pipe"],
    },
  );
  let output = "";
  child.stdout!.on("data", (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on("data", (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on("exit", (code, signal) => resolve({ code, signal })),
  );
  return {
    child,
    output: () => output,
    exited,
    waitForOutput: (pattern, timeoutMs = 30_000) =>
      waitFor(() => pattern.test(output), { timeoutMs, what: `${service} output ${pattern}` }).then(
        () => undefined,
      ),
    kill: (signal = "SIGTERM") => {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
    },
  };
}
