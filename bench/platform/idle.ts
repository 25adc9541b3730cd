/**
 * Idle cost: the scheduler and the worker (the real services, every domain as configured by
 * default, in this process) over an empty database and an empty instance root, with nothing
 * due. Once the start-up work has settled (no job waiting or active for 12 s), for `--minutes`:
 *  - PostgreSQL transactions: xact_commit + xact_rollback of the bench's own database
 *    (pg_stat_database, read from another database after the services stopped, so every
 *    backend has reported), and the statements the services sent, by their first line;
 *  - Redis commands the services sent, by command (BullMQ's scripts by name), counted in this
 *    process (the shared Redis's INFO commandstats also counts other sessions' tests);
 *  - jobs run, by domain and reason;
 * each per hour, with its source. Anything beyond BullMQ's own blocking waits and stalled
 * checks, the finished-job followers' blocking reads and the domains' own schedule (hourly
 * sweeps, start-up checks) is a defect.
 *   npx tsx bench/platform/idle.ts [--minutes N]   (default 10)
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import pg from "pg";
import { createLogger } from "../../packages/core/src";
import { createScheduler } from "../../apps/scheduler/src/service";
import { createWorkerService } from "../../apps/worker/src/service";
import { ADMIN_URL, benchEnv, REDIS_URL, report, tallyRedisCommands, tallyStatements } from "../support";
import { BENCH_TOKEN } from "./fleet";

const minutesArg = process.argv.indexOf("--minutes");
const MINUTES = minutesArg > 0 ? Number(process.argv[minutesArg + 1]) : 10;
/**
 * Nothing waiting or active for this long before the window opens: more than PostgreSQL's
 * 10 s after which an idle backend reports its transactions, so the start-up's are not
 * counted in the window.
 */
const SETTLE_MS = 12_000;

const statements = tallyStatements();
const commands = tallyRedisCommands();
const snapshot = (counts: ReadonlyMap<string, number>) => new Map(counts);
const delta = (now: ReadonlyMap<string, number>, before: ReadonlyMap<string, number>) =>
  new Map([...now].map(([k, v]) => [k, v - (before.get(k) ?? 0)] as const).filter(([, v]) => v > 0));
const sum = (counts: ReadonlyMap<string, number>) => [...counts.values()].reduce((a, b) => a + b, 0);

async function transactions(database: string): Promise<number> {
  const client = new pg.Client({ connectionString: ADMIN_URL });
  await client.connect();
  // This backend's own statistics are not part of the bench database's.
  const { rows } = await client.query<{ n: string }>(
    "SELECT (xact_commit + xact_rollback)::text AS n FROM pg_stat_database WHERE datname = $1",
    [database],
  );
  await client.end();
  return Number(rows[0]!.n);
}

async function main(): Promise<void> {
  const env = await benchEnv();
  const database = new URL(env.databaseUrl).pathname.slice(1);
  const root = await mkdtemp(path.join(tmpdir(), "reclaim-bench-idle-"));
  const jobs = new Map<string, number>();
  const complaints: string[] = [];
  const log = createLogger("info", {}, (line) => {
    const entry = JSON.parse(line) as { msg: string; level: string; domain?: string; reasons?: string[] };
    if (entry.msg === "job.finished") {
      const key = `${entry.domain} (${entry.reasons?.join(", ") || "no claimed reason"})`;
      jobs.set(key, (jobs.get(key) ?? 0) + 1);
    }
    if (entry.level === "warn" || entry.level === "error") complaints.push(line);
  });
  const serviceEnv = {
    DATABASE_URL: env.databaseUrl,
    REDIS_URL,
    RECLAIM_QUEUE_PREFIX: env.prefix,
    RECLAIM_API_TOKEN: BENCH_TOKEN,
    PAPERCLIP_INSTANCE_ROOT: root,
  };
  const worker = createWorkerService({ env: serviceEnv, log });
  await worker.start();
  const scheduler = await createScheduler({ env: serviceEnv, log });
  await scheduler.started;
  try {
    // The start-up checks run first; the window starts once nothing has run for SETTLE_MS.
    for (let quiet = 0; quiet < SETTLE_MS; quiet += 500) {
      const counts = await Promise.all(
        worker.domains.map((d) => scheduler.deps.queues.queue(d).getJobCounts("waiting", "active")),
      );
      if (counts.some((c) => (c.waiting ?? 0) + (c.active ?? 0) > 0)) quiet = -500;
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
    const jobsAtStart = snapshot(jobs);
    const xactsAtStart = await transactions(database);
    const statementsAtStart = snapshot(statements);
    const commandsAtStart = snapshot(commands);
    const started = Date.now();
    await new Promise((resolve) => setTimeout(resolve, MINUTES * 60_000));
    const sent = delta(statements, statementsAtStart);
    const issued = delta(commands, commandsAtStart);
    const ran = delta(jobs, jobsAtStart);
    const hours = (Date.now() - started) / 3_600_000;
    const beforeStop = snapshot(statements);
    await scheduler.stop();
    await worker.stop();
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const xacts = (await transactions(database)) - xactsAtStart;
    const atStop = sum(delta(statements, beforeStop));

    const perHour = (n: number) => `${(n / hours).toFixed(0)}/h (${n} in ${(hours * 60).toFixed(1)} min)`;
    const listed = (counts: Map<string, number>) =>
      Object.fromEntries([...counts].sort((a, b) => b[1] - a[1]).map(([k, v]) => [k, perHour(v)]));
    // BullMQ Workers: one per enabled domain and the reopen worker; each waits for a job with
    // a blocking BZPOPMIN of at most 5 s (drainDelay) and checks for stalled jobs every
    // RECLAIM_STALLED_INTERVAL_MS (30 s). The scheduler follows each enabled domain's event
    // stream with blocking XREADs of at most 10 s.
    const workers = worker.domains.length + 1;
    report(
      `idle: scheduler + worker, ${worker.domains.length} domains enabled (${worker.domains.join(", ")})`,
      {
        "measured for": `${(hours * 60).toFixed(1)} min (after the start-up checks settled)`,
        "start-up (before the window)": `${sum(statementsAtStart)} statements, ${sum(commandsAtStart)} Redis commands, ${sum(jobsAtStart)} jobs`,
        "PostgreSQL transactions": `${perHour(xacts)}, the services' stop included (${atStop} statements)`,
        "SQL statements sent": perHour(sum(sent)),
        "Redis commands sent": perHour(sum(issued)),
        "jobs run": perHour(sum(ran)),
        "BullMQ blocking waits (BZPOPMIN)": `${perHour(issued.get("bzpopmin") ?? 0)}; ${workers} workers x one per 5 s: ${workers * 720}/h`,
        "BullMQ stalled checks": `${perHour(issued.get("evalsha moveStalledJobsToWait") ?? 0)}; ${workers} workers x one per 30 s: ${workers * 120}/h`,
        "finished-job followers (XREAD)": `${perHour(issued.get("xread") ?? 0)}; ${worker.domains.length} streams x one per 10 s: ${worker.domains.length * 360}/h`,
        "warnings and errors logged": complaints.length,
      },
    );
    report("jobs, by domain (claimed reasons)", listed(ran));
    report("SQL statements, by first line", listed(sent));
    report("Redis commands, by command", listed(issued));
    for (const line of complaints.slice(0, 5)) process.stdout.write(`  ${line}\n`);
  } finally {
    await rm(root, { recursive: true, force: true });
    await env.cleanup();
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
