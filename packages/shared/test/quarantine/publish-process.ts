/**
 * Run by the tests as a separate process: one capture of the repository given as argument,
 * with a point in its publication where it reports to the test and then acts.
 *
 *   node --import tsx publish-process.ts <repo> '<json Script>'
 *
 * stdout, one line each: `commit <oid>` once the capture's commit exists; `busy` the first
 * time the pack is held by someone else; `at <file>` when publication reaches `at`;
 * `recovered <pack,...>` and `done` after the capture resolved. stderr: the error it
 * rejected with, if any (exit 1).
 */
import path from "node:path";
import { createInterface } from "node:readline";
import { realPublishFs, type PublishFs } from "../../src";
import { capture, type CaptureOptions } from "./capture";
import { makeRepoHandle } from "./repo-handle";

export interface Script {
  ref?: string;
  packBusyTimeoutMs?: number;
  packing?: CaptureOptions["packing"];
  /** A pack file extension: stop when publication is about to link that file. */
  at?: string;
  /**
   * At `at`: "kill" itself with SIGKILL, "await-sigterm" until SIGTERM aborted the capture, or
   * "await-line" until a line arrives on stdin.
   */
  action?: "kill" | "await-sigterm" | "await-line";
}

const script = JSON.parse(process.argv[3]!) as Script;
let signal: AbortSignal | undefined;
let reportedBusy = false;

const fs: PublishFs = {
  ...realPublishFs,
  link: async (from, to) => {
    if (script.at && path.basename(path.dirname(to)) === "pack" && to.endsWith(`.${script.at}`)) {
      process.stdout.write(`at ${path.basename(to)}\n`);
      if (script.action === "kill") process.kill(process.pid, "SIGKILL");
      if (script.action === "await-sigterm" && !signal!.aborted) {
        const keepAlive = setInterval(() => undefined, 60_000); // a pending promise alone would let node exit
        await new Promise((resolve) => signal!.addEventListener("abort", resolve, { once: true }));
        clearInterval(keepAlive);
      }
      if (script.action === "await-line") await lineOnStdin();
    }
    return realPublishFs.link(from, to);
  },
};

function lineOnStdin(): Promise<void> {
  return new Promise((resolve) => {
    const lines = createInterface({ input: process.stdin });
    lines.once("line", () => {
      lines.close();
      resolve();
    });
  });
}

capture(makeRepoHandle(process.argv[2]!), {
  ref: script.ref,
  packing: script.packing,
  packBusyTimeoutMs: script.packBusyTimeoutMs,
  onCommit: (commit, ctx) => {
    signal = ctx.signal;
    process.stdout.write(`commit ${commit}\n`);
  },
  testHooks: {
    fs,
    onPackBusy: () => {
      if (!reportedBusy) process.stdout.write("busy\n");
      reportedBusy = true;
    },
  },
}).then(
  ({ published }) => process.stdout.write(`recovered ${published.recoveredPacks.join(",")}\ndone\n`),
  (error: unknown) => {
    process.stderr.write(`${String(error)}\n`);
    process.exitCode = 1;
  },
);
