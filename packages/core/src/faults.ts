/**
 * Fault points: named places in a protocol (after a rename, before a commit) where a test
 * can crash or stop the process, to prove that the next sweep finishes or undoes the work.
 *
 * Off in production: a FaultPoints instance built from the environment honours
 * RECLAIM_FAULT_POINTS only when NODE_ENV is "test", and throws at start-up if the variable
 * is set under NODE_ENV=production. In-process tests pass their own handlers.
 *
 *   RECLAIM_FAULT_POINTS="native-workspace-sync.after-rename=kill"
 * Actions: `kill` (SIGKILL self, as a crash), `throw` (an error at that point),
 * `hang` (stop there until killed), `pause` (wait RECLAIM_FAULT_PAUSE_MS, default 3000,
 * then go on: a slow step). Before acting, the process appends the point's name to
 * RECLAIM_FAULT_MARKER (a file), so a test knows it got there.
 */
import { appendFileSync } from "node:fs";
import type { Env } from "./config";
import { ConfigError } from "./errors";

export type FaultAction = "kill" | "throw" | "hang" | "pause";
export type FaultHandler = (point: string) => void | Promise<void>;

export class InjectedFault extends Error {
  constructor(readonly point: string) {
    super(`injected fault at ${point}`);
    this.name = "InjectedFault";
  }
}

export class FaultPoints {
  constructor(private readonly handlers: ReadonlyMap<string, FaultHandler> = new Map()) {}

  static none(): FaultPoints {
    return new FaultPoints();
  }

  static of(handlers: Record<string, FaultHandler>): FaultPoints {
    return new FaultPoints(new Map(Object.entries(handlers)));
  }

  static fromEnv(env: Env = process.env): FaultPoints {
    const spec = env.RECLAIM_FAULT_POINTS?.trim();
    if (!spec) return FaultPoints.none();
    if (env.NODE_ENV === "production") {
      throw new ConfigError("RECLAIM_FAULT_POINTS", "fault injection is refused when NODE_ENV=production");
    }
    if (env.NODE_ENV !== "test") return FaultPoints.none();
    const marker = env.RECLAIM_FAULT_MARKER;
    const handlers = new Map<string, FaultHandler>();
    for (const item of spec.split(",")) {
      const [point, action] = item.split("=").map((s) => s.trim()) as [string, string | undefined];
      if (!["kill", "throw", "hang", "pause"].includes(action ?? "")) {
        throw new ConfigError(
          "RECLAIM_FAULT_POINTS",
          `unknown action "${action}" for ${point} (kill, throw, hang or pause)`,
        );
      }
      const pauseMs = Number(env.RECLAIM_FAULT_PAUSE_MS ?? 3000);
      handlers.set(point, (name) => {
        if (marker) appendFileSync(marker, `${name}\n`);
        if (action === "kill") process.kill(process.pid, "SIGKILL");
        if (action === "throw") throw new InjectedFault(name);
        if (action === "pause") return new Promise<void>((resolve) => setTimeout(resolve, pauseMs));
        return new Promise<void>(() => undefined);
      });
    }
    return new FaultPoints(handlers);
  }

  async hit(point: string): Promise<void> {
    const handler = this.handlers.get(point);
    if (handler) await handler(point);
  }
}
