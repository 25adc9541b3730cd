/** Starts publish-process.ts as a real second process and follows what it reports. */
import { spawn } from "node:child_process";
import path from "node:path";
import { createInterface } from "node:readline";
import { gitEnv, type Repo } from "./git-fixture";
import type { Script } from "./publish-process";

export interface Publisher {
  pid: number;
  /** Resolves with the first stdout line that starts with `prefix` (rejects if the process ends first). */
  line(prefix: string): Promise<string>;
  /** The exit signal, or the exit code. */
  exited: Promise<NodeJS.Signals | number | null>;
  stderr(): string;
  kill(signal: NodeJS.Signals): void;
  /** Writes `line` to its stdin and closes it (what action "await-line" waits for). */
  send(line: string): void;
}

const running = new Set<() => void>();

/** Kills every publisher still running (a failed test may leave one waiting): for afterEach. */
export function stopPublishers(): void {
  for (const kill of running) kill();
}

/**
 * Starts the publisher, through `wrapper` (a command that runs the rest of its arguments,
 * e.g. `unshare ...`) when given; stdin stays open only for action "await-line".
 */
export function startPublisher(repo: Repo, script: Script, wrapper: string[] = []): Publisher {
  const command = [
    ...wrapper,
    process.execPath,
    "--import",
    "tsx",
    path.join(__dirname, "publish-process.ts"),
    repo.dir,
    JSON.stringify(script),
  ];
  const child = spawn(command[0]!, command.slice(1), {
    cwd: path.resolve(__dirname, "../../../.."),
    env: { ...process.env, ...gitEnv },
    stdio: "pipe",
  });
  if (script.action !== "await-line") child.stdin.end();
  const killHard = (): void => void child.kill("SIGKILL");
  running.add(killHard);
  child.on("exit", () => running.delete(killHard));
  const lines: string[] = [];
  const waiters: { prefix: string; resolve: (line: string) => void; reject: (e: Error) => void }[] = [];
  let stderr = "";
  let ended = false;
  child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  createInterface({ input: child.stdout }).on("line", (line) => {
    lines.push(line);
    for (const waiter of waiters.filter((w) => line.startsWith(w.prefix))) {
      waiters.splice(waiters.indexOf(waiter), 1);
      waiter.resolve(line);
    }
  });
  // "close", not "exit": by then every line the process wrote has been read.
  const exited = new Promise<NodeJS.Signals | number | null>((resolve) =>
    child.on("close", (code, signal) => resolve(signal ?? code)),
  );
  void exited.then(() => {
    ended = true;
    for (const waiter of waiters.splice(0)) {
      waiter.reject(new Error(`publisher ended before "${waiter.prefix}": ${stderr}`));
    }
  });
  return {
    pid: child.pid!,
    line: (prefix) => {
      const seen = lines.find((l) => l.startsWith(prefix));
      if (seen !== undefined) return Promise.resolve(seen);
      if (ended) return Promise.reject(new Error(`publisher ended before "${prefix}": ${stderr}`));
      return new Promise((resolve, reject) => waiters.push({ prefix, resolve, reject }));
    },
    exited,
    stderr: () => stderr,
    kill: (signal) => child.kill(signal),
    send: (line) => child.stdin.end(`${line}\n`),
  };
}
