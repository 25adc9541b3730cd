/**
 * The real S3 server for tests: a Ceph RADOS Gateway started by `scripts/s3-rgw.sh` (see its
 * header for the recipe and cost: ~12 s and ~350 MB RAM, plus ~17 s of apt-get on a clean
 * machine). The Jest global setup starts it once per run, or reuses one already running, and
 * the teardown stops it only when this run started it.
 *
 * A failure to start does not abort the run: the variables below carry the error instead, so
 * suites that do not use S3 still run and every S3 suite fails with the reason.
 */
import { execFileSync } from "node:child_process";
import path from "node:path";

const SCRIPT = path.resolve(__dirname, "../../../../scripts/s3-rgw.sh");

export interface TestS3Server {
  endpoint: string;
  accessKey: string;
  secretKey: string;
  region: string;
}

/** Starts (or reuses) the gateway and exports its settings to this process's environment. */
export function startTestS3(): void {
  if (process.env.RECLAIM_TEST_S3_ENDPOINT) return; // pointed at a server by the caller
  const running = runScript("status") !== null;
  const out = runScript("start");
  if (out === null) {
    process.env.RECLAIM_TEST_S3_ERROR = lastError;
    return;
  }
  for (const line of out.split("\n")) {
    const match = /^export (RECLAIM_TEST_S3_[A-Z_]+)=(.*)$/.exec(line.trim());
    if (match) process.env[match[1]!] = match[2]!;
  }
  if (!running) process.env.RECLAIM_TEST_S3_STARTED_BY_RUN = "1";
}

/** Stops the gateway if `startTestS3` started it in this run. */
export function stopTestS3(): void {
  if (process.env.RECLAIM_TEST_S3_STARTED_BY_RUN === "1") runScript("stop");
}

/** The server's settings inside a test; throws the start-up failure when there is none. */
export function testS3Server(): TestS3Server {
  const env = process.env;
  if (!env.RECLAIM_TEST_S3_ENDPOINT) {
    throw new Error(
      `no S3 test server: ${env.RECLAIM_TEST_S3_ERROR ?? "the Jest global setup did not start one"}`,
    );
  }
  return {
    endpoint: env.RECLAIM_TEST_S3_ENDPOINT,
    accessKey: env.RECLAIM_TEST_S3_ACCESS_KEY ?? "",
    secretKey: env.RECLAIM_TEST_S3_SECRET_KEY ?? "",
    region: env.RECLAIM_TEST_S3_REGION ?? "us-east-1",
  };
}

let lastError = "";

function runScript(command: "start" | "stop" | "status"): string | null {
  try {
    return execFileSync("bash", [SCRIPT, command], {
      encoding: "utf8",
      stdio: ["ignore", "pipe", "pipe"],
      timeout: 300_000,
    });
  } catch (error) {
    const stderr = (error as { stderr?: string }).stderr ?? "";
    lastError = `scripts/s3-rgw.sh ${command} failed: ${stderr.trim() || String(error)}`;
    return null;
  }
}
