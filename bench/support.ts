/**
 * Shared by the benchmarks: a fresh migrated database and a Redis prefix for one run,
 * removed afterwards. Benchmarks print ratios against a baseline measured in the same run
 * (the machine is noisy); they are not part of the test suite.
 */
import { randomBytes } from "node:crypto";
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { Session } from "node:inspector/promises";
import path from "node:path";
import { Redis } from "ioredis";
import pg from "pg";
import { sentStatement, statementFirstLine, type SentStatement } from "@reclaim/testkit";
import { applyMigrations } from "../packages/core/src/db/migrate";

export const ADMIN_URL =
  process.env.RECLAIM_BENCH_ADMIN_URL ?? "postgresql://postgres@127.0.0.1:5432/postgres";
export const REDIS_URL = process.env.REDIS_URL ?? "redis://127.0.0.1:6379";

export interface BenchEnv {
  databaseUrl: string;
  prefix: string;
  cleanup(): Promise<void>;
}

async function admin(adminUrl: string, sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

/**
 * A fresh database per run, dropped by cleanup(); or, with `keep`, the database of that name
 * (created when missing, pending migrations applied), left in place so a later run reuses its
 * data. On the server of ADMIN_URL, or of `adminUrl` (a private server, private-postgres.ts).
 */
export async function benchEnv(options: { keep?: string; adminUrl?: string } = {}): Promise<BenchEnv> {
  const adminUrl = options.adminUrl ?? ADMIN_URL;
  const name =
    options.keep ?? `reclaim_bench_${Math.floor(Date.now() / 1000)}_${randomBytes(3).toString("hex")}`;
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  await applyMigrations(url.toString());
  const prefix = `reclaim-bench-${randomBytes(4).toString("hex")}`;
  return {
    databaseUrl: url.toString(),
    prefix,
    async cleanup() {
      const redis = new Redis(REDIS_URL);
      let cursor = "0";
      do {
        const [next, keys] = await redis.scan(cursor, "MATCH", `${prefix}:*`, "COUNT", 1000);
        cursor = next;
        if (keys.length) await redis.del(...keys);
      } while (cursor !== "0");
      redis.disconnect();
      if (!options.keep) await admin(adminUrl, `DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
    },
  };
}

export function time<T>(fn: () => Promise<T>): Promise<{ ms: number; value: T }> {
  const started = process.hrtime.bigint();
  return fn().then((value) => ({ ms: Number(process.hrtime.bigint() - started) / 1e6, value }));
}

/**
 * `fn`; with BENCH_CPU_PROFILE=<dir>, a CPU profile of this process around it alone, written to
 * `<dir>/<label>.cpuprofile` (chrome://inspect reads it): the benchmark's set-up, such as seeding
 * ten thousand folders, stays out of the profile.
 */
export async function profiled<T>(label: string, fn: () => Promise<T>): Promise<T> {
  const dir = process.env.BENCH_CPU_PROFILE;
  if (!dir) return fn();
  const session = new Session();
  session.connect();
  await session.post("Profiler.enable");
  await session.post("Profiler.start");
  try {
    return await fn();
  } finally {
    const { profile } = await session.post("Profiler.stop");
    session.disconnect();
    mkdirSync(dir, { recursive: true });
    writeFileSync(path.join(dir, `${label}.cpuprofile`), JSON.stringify(profile));
  }
}

export function report(name: string, fields: Record<string, string | number>): void {
  process.stdout.write(`${name}\n`);
  for (const [k, v] of Object.entries(fields)) process.stdout.write(`  ${k.padEnd(34)} ${v}\n`);
}

/**
 * Every SQL statement this process sends (BEGIN, locks and COMMIT included) is counted, by
 * wrapping pg's Client#query; the statements asked for are timed.
 */
let statements = 0;
/** Statements sent, by their first line (at most 100 characters), once `tallyStatements` was called. */
let byFirstLine: Map<string, number> | null = null;
/** Statements whose text starts with one of these (a .sql file's first line) are timed. */
const timed = new Map<string, number[]>();
/** The statements sent since recordStatements() (null: none is recording). */
let recording: SentStatement[] | null = null;

const query = pg.Client.prototype.query;
pg.Client.prototype.query = function countedQuery(this: pg.Client, ...args: unknown[]) {
  statements += 1;
  if (recording) {
    const sent = sentStatement(args);
    if (sent) recording.push(sent);
  }
  const first = timed.size > 0 || byFirstLine ? statementFirstLine(args) : undefined;
  const samples = first === undefined ? undefined : timed.get(first);
  if (byFirstLine && first !== undefined) {
    // At most 100 characters (a Prisma query's first line can be its whole text).
    const line = first.slice(0, 100);
    byFirstLine.set(line, (byFirstLine.get(line) ?? 0) + 1);
  }
  const t0 = performance.now();
  const result = (query as (...a: unknown[]) => unknown).apply(this, args);
  if (samples && result instanceof Promise) {
    result.then(
      () => samples.push(performance.now() - t0),
      () => undefined,
    );
  }
  return result;
} as typeof pg.Client.prototype.query;

/** The median (of an even count: the mean of the middle two). */
export const median = (xs: number[]): number => {
  const sorted = [...xs].sort((a, b) => a - b);
  const mid = sorted.length / 2;
  return Number.isInteger(mid) ? (sorted[mid - 1]! + sorted[mid]!) / 2 : sorted[Math.floor(mid)]!;
};

/** SQL statements sent so far by this process. */
export const statementsSent = () => statements;

/** Records every statement this process sends from now until stop(), in order, in `sent`. */
export function recordStatements(): { sent: SentStatement[]; stop(): void } {
  const sent: SentStatement[] = [];
  recording = sent;
  return {
    sent,
    stop() {
      if (recording === sent) recording = null;
    },
  };
}

/** Times every run of the statement that starts with `firstLine`; the durations (ms) so far. */
export function timeStatements(firstLine: string): number[] {
  const samples: number[] = [];
  timed.set(firstLine, samples);
  return samples;
}

/** From now on, every statement this process sends is counted by its first line; the counts so far. */
export function tallyStatements(): ReadonlyMap<string, number> {
  byFirstLine ??= new Map();
  return byFirstLine;
}

/**
 * From now on, every Redis command this process sends (pipelined ones and BullMQ's scripts
 * included) is counted, by name; a script by the name its client defined it under
 * (`evalsha moveStalledJobsToWait`). The counts so far.
 */
export function tallyRedisCommands(): ReadonlyMap<string, number> {
  if (redisCommands) return redisCommands;
  const counts = (redisCommands = new Map<string, number>());
  const scripts = new Map<string, string>();
  type Sent = { name: string; args: unknown[] };
  type Send = (this: Redis, command: Sent, ...rest: unknown[]) => unknown;
  const send = Redis.prototype.sendCommand as unknown as Send;
  (Redis.prototype as unknown as { sendCommand: Send }).sendCommand = function tallied(command, ...rest) {
    let name = command.name.toLowerCase();
    if (name === "evalsha" || name === "eval") {
      const sha = String(command.args[0]);
      if (!scripts.has(sha)) {
        const defined = (this as unknown as { scriptsSet: Record<string, { sha: string }> }).scriptsSet;
        // BullMQ defines its scripts as `<name>:<version>`.
        for (const [script, { sha: known }] of Object.entries(defined))
          scripts.set(known, script.split(":")[0]!);
      }
      name = `${name} ${scripts.get(sha) ?? "(unknown script)"}`;
    }
    counts.set(name, (counts.get(name) ?? 0) + 1);
    return send.call(this, command, ...rest);
  };
  return counts;
}
let redisCommands: Map<string, number> | null = null;

/**
 * CPU time (µs) used so far by the processes named `name` (Linux /proc), with what their
 * ended children used (a PostgreSQL backend's time goes to the postmaster when it exits).
 * The difference of two readings is what the servers did meanwhile; every server of that
 * name on the machine counts (a private PostgreSQL too). 0 where /proc cannot be read.
 */
export function processCpu(name: string): number {
  const ticks = 1_000_000 / 100;
  let total = 0;
  let pids: string[] = [];
  try {
    pids = readdirSync("/proc").filter((p) => /^\d+$/.test(p));
  } catch {
    return 0;
  }
  for (const pid of pids) {
    try {
      if (readFileSync(`/proc/${pid}/comm`, "utf8").trim() !== name) continue;
      const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      // utime, stime, cutime, cstime (fields 14-17 of stat; 11-14 after the name).
      total += (Number(fields[11]) + Number(fields[12]) + Number(fields[13]) + Number(fields[14])) * ticks;
    } catch {
      // Ended meanwhile: its time is its parent's now.
    }
  }
  return total;
}
