/**
 * The real S3 server for tests: a Ceph RADOS Gateway started by `scripts/s3-rgw.sh` (see its
 * header for the recipe and cost: ~12 s and ~350 MB RAM, plus ~17 s of apt-get on a clean
 * machine). The Jest global setup starts it once per run, or reuses one already running.
 * Each run holds a lease (`<state dir>/leases/<pid>`) while it uses the gateway; the last
 * run to finish stops a gateway that test runs started, so two runs on one machine (two
 * worktrees) share one gateway without one stopping it under the other. A gateway started by
 * hand (`scripts/s3-rgw.sh start`) is never stopped by tests.
 *
 * A failure to start does not abort the run: the variables below carry the error instead, so
 * suites that do not use S3 still run and every S3 suite fails with the reason.
 */
import { execFileSync } from "node:child_process";
import { mkdirSync, readdirSync, rmSync, writeFileSync, existsSync } from "node:fs";
import path from "node:path";

const SCRIPT = path.resolve(__dirname, "../../../../scripts/s3-rgw.sh");
/** Same default as the script's RECLAIM_RGW_DIR. */
const STATE_DIR = process.env.RECLAIM_RGW_DIR ?? "/tmp/reclaim-rgw";
const LEASES = path.join(STATE_DIR, "leases");
const STARTED_BY_TESTS = path.join(STATE_DIR, "started-by-tests");

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
  if (!running) writeFileSync(STARTED_BY_TESTS, "");
  mkdirSync(LEASES, { recursive: true });
  writeFileSync(path.join(LEASES, String(process.pid)), "");
  process.env.RECLAIM_TEST_S3_LEASE = String(process.pid);
}

/** Drops this run's lease; stops the gateway when test runs started it and no run still uses it. */
export function stopTestS3(): void {
  const lease = process.env.RECLAIM_TEST_S3_LEASE;
  if (!lease) return;
  rmSync(path.join(LEASES, lease), { force: true });
  const others = existsSync(LEASES) ? readdirSync(LEASES).filter((pid) => alive(Number(pid))) : [];
  if (others.length === 0 && existsSync(STARTED_BY_TESTS)) runScript("stop");
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
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
