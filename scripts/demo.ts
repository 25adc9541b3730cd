/**
 * `npm run demo`: Reclaim doing real work on a sample Paperclip instance.
 *
 * After scripts/bootstrap.sh (dependencies, PostgreSQL, Redis, Prisma client) it:
 *  1. migrates a fresh demo database (RECLAIM_DEMO_DATABASE_URL, default .../reclaim_demo;
 *     scripts/demo.sh passes it as DATABASE_URL); one that exists without the demo's mark
 *     is never dropped;
 *  2. creates a sample instance directory (native workspace sync folders, an orphan, a
 *     symlink, the shared generations cache) and the Paperclip rows behind it;
 *  3. starts the scheduler and one worker as real processes;
 *  4. sends events over HTTP, asks for a dry-run diagnosis, lets the deadline jobs run;
 *  5. prints what was reclaimed and what was kept, with reasons;
 *  6. stops the services and removes the sample instance (scripts/demo.sh then stops the
 *     PostgreSQL and Redis that the bootstrap had to start, if any).
 */
import { spawn, type ChildProcess } from "node:child_process";
import { randomBytes, randomUUID } from "node:crypto";
import { mkdir, mkdtemp, rm, symlink, utimes, writeFile } from "node:fs/promises";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { Redis } from "ioredis";
import pg from "pg";
import { applyMigrations, REPO_ROOT } from "../packages/core/src/db/migrate";

const DATABASE_URL = process.env.DATABASE_URL ?? "postgresql://postgres@127.0.0.1:5432/reclaim_demo";
const REDIS_URL = process.env.REDIS_URL ?? "redis://127.0.0.1:6379";
const TOKEN = `demo-${randomBytes(16).toString("hex")}`;
const PREFIX = `reclaim-demo-${process.pid}`;
const DAY = 86_400_000;

const say = (line = "") => process.stdout.write(line + "\n");
const mib = (bytes: number) => `${(bytes / 1048576).toFixed(1)} MiB`;

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const server = createServer().listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/** Marks a database as the demo's own: only such a database is ever dropped. */
const DEMO_MARK = "reclaim demo database: dropped and recreated by npm run demo";

async function freshDatabase(): Promise<void> {
  const url = new URL(DATABASE_URL);
  const name = decodeURIComponent(url.pathname.slice(1));
  url.pathname = "/postgres";
  const admin = new pg.Client({ connectionString: url.toString() });
  await admin.connect();
  try {
    const { rows } = await admin.query<{ mark: string | null }>(
      "SELECT shobj_description(oid, 'pg_database') AS mark FROM pg_database WHERE datname = $1",
      [name],
    );
    if (rows.length > 0 && rows[0]!.mark !== DEMO_MARK) {
      throw new Error(
        `database "${name}" exists and is not a demo database: refusing to drop it ` +
          "(set RECLAIM_DEMO_DATABASE_URL to a database name the demo may own)",
      );
    }
    await admin.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
    await admin.query(`CREATE DATABASE "${name}"`);
    await admin.query(`COMMENT ON DATABASE "${name}" IS '${DEMO_MARK}'`);
  } finally {
    await admin.end();
  }
  await applyMigrations(DATABASE_URL);
}

async function folder(root: string, name: string, ageDays: number, seedMiB: number): Promise<void> {
  const dir = path.join(root, "native-workspace-sync", name);
  await mkdir(path.join(dir, "seeds"), { recursive: true });
  await writeFile(path.join(dir, "descriptor.json"), JSON.stringify({ runId: name }));
  await writeFile(path.join(dir, "manifest.json"), "{}");
  await writeFile(path.join(dir, "seeds", "workspace.tar"), randomBytes(seedMiB * 1048576));
  const when = new Date(Date.now() - ageDays * DAY);
  for (const p of ["descriptor.json", "manifest.json", "seeds/workspace.tar", "seeds", "."]) {
    await utimes(path.join(dir, p), when, when);
  }
}

interface Sample {
  company: string;
  label: Map<string, string>;
  newRun: string;
}

async function sampleInstance(root: string): Promise<Sample> {
  const db = new pg.Client({ connectionString: DATABASE_URL });
  await db.connect();
  const company = randomUUID();
  const label = new Map<string, string>();
  await db.query("INSERT INTO companies (id, name) VALUES ($1, 'Acme Agents')", [company]);
  const run = async (
    what: string,
    status: string,
    finishedDaysAgo: number | null,
    ageDays: number,
    extra?: string,
  ) => {
    const id = randomUUID();
    label.set(id, what);
    await db.query(
      `INSERT INTO heartbeat_runs (id, company_id, status, started_at, finished_at, runner_profile_json)
       VALUES ($1, $2, $3, now() - interval '12 days', $4, $5)`,
      [
        id,
        company,
        status,
        finishedDaysAgo === null ? null : new Date(Date.now() - finishedDaysAgo * DAY),
        // Paperclip's workspace sync reference (docs/paperclip-tables.md).
        extra
          ? {
              nativeWorkspaceSync: {
                schema: "paperclip.native-workspace-sync/v1",
                state: "finalized",
                leaseId: randomUUID(),
              },
            }
          : null,
      ],
    );
    if (extra === "export") {
      // A workspace export is Paperclip's recovery action naming the run.
      await db.query(
        `INSERT INTO issue_recovery_actions (company_id, source_issue_id, status, cause, evidence)
         VALUES ($1, gen_random_uuid(), 'active', 'native_workspace_sync_out_unsafe_archive', $2)`,
        [company, { runId: id }],
      );
    }
    if (extra === "committed") {
      await db.query(
        "INSERT INTO native_run_finalizations (run_id, company_id, issue_id, phase) VALUES ($1, $2, gen_random_uuid(), 'committed')",
        [id, company],
      );
    }
    await folder(root, id, ageDays, 4);
    return id;
  };
  await run("run succeeded 9 days ago", "succeeded", 9, 10);
  await run("run failed 12 days ago, finalization committed", "failed", 12, 12, "committed");
  await run("run still running", "running", null, 10);
  await run("run finished 2 days ago", "succeeded", 2, 2);
  await run("run with an active board export", "succeeded", 9, 10, "export");
  const orphan = randomUUID();
  label.set(orphan, "orphan folder (no run row)");
  await folder(root, orphan, 11, 2);
  const linked = randomUUID();
  label.set(linked, "symlink named like a run");
  await mkdir(path.join(root, "precious"), { recursive: true });
  await symlink(path.join(root, "precious"), path.join(root, "native-workspace-sync", linked));
  await folder(root, "generations", 30, 1);
  // A run that starts now and will create its folder while Reclaim is running.
  const newRun = randomUUID();
  label.set(newRun, "new run (folder created during the demo)");
  await db.query(
    "INSERT INTO heartbeat_runs (id, company_id, status, started_at) VALUES ($1, $2, 'running', now())",
    [newRun, company],
  );
  await db.end();
  return { company, label, newRun };
}

function start(service: "scheduler" | "worker", env: Record<string, string>): ChildProcess {
  const child = spawn(
    process.execPath,
    ["--import", "tsx", path.join(REPO_ROOT, `apps/${service}/src/main.ts`)],
    {
      cwd: REPO_ROOT,
      env: { ...process.env, ...env },
      stdio: ["ignore", "pipe", "inherit"],
    },
  );
  child.stdout!.resume(); // JSON logs; the demo prints its own summary
  return child;
}

async function until<T>(
  what: string,
  probe: () => Promise<T | null | undefined | false>,
  timeoutMs = 60_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe().catch(() => null);
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`demo: timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

type Api = (method: string, url: string, body?: unknown) => Promise<{ status: number; body: any }>; // eslint-disable-line @typescript-eslint/no-explicit-any

interface Entry {
  id: string;
  outcome: string;
  reason?: string;
  bytes?: number;
}

/** Every entry of the reports newer than `since`, with each folder's final outcome. */
async function outcomes(api: Api, since: number): Promise<Map<string, Entry>> {
  const listed = await api("GET", "/v1/reports?domain=native-workspace-sync&limit=100");
  const recent = listed.body.reports
    .filter((r: { finishedAt: string }) => Date.parse(r.finishedAt) >= since)
    .reverse();
  const seen = new Map<string, Entry>();
  for (const r of recent) {
    const full = await api("GET", `/v1/reports/${r.id}`);
    for (const e of full.body.report.entries as Entry[]) seen.set(e.id.split("/").pop()!, e);
  }
  return seen;
}

async function main(): Promise<void> {
  say("Reclaim demo");
  say(`  database ${DATABASE_URL}`);
  await freshDatabase();
  const root = await mkdtemp(path.join(tmpdir(), "paperclip-instance-"));
  const sample = await sampleInstance(root);
  say(`  sample Paperclip instance at ${root}: ${sample.label.size} run folders and a generations cache`);

  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const env = {
    DATABASE_URL,
    REDIS_URL,
    RECLAIM_API_TOKEN: TOKEN,
    RECLAIM_PORT: String(port),
    RECLAIM_HOST: "127.0.0.1",
    RECLAIM_QUEUE_PREFIX: PREFIX,
    PAPERCLIP_INSTANCE_ROOT: root,
  };
  const api: Api = async (method, url, body) => {
    const response = await fetch(base + url, {
      method,
      headers: { authorization: `Bearer ${TOKEN}`, ...(body ? { "content-type": "application/json" } : {}) },
      body: body ? JSON.stringify(body) : undefined,
    });
    return { status: response.status, body: await response.json() };
  };
  const label = (id: string) => sample.label.get(id) ?? id;
  let children: ChildProcess[] = [];
  const stopAll = async () => {
    for (const child of children) child.kill("SIGTERM");
    await Promise.all(
      children.map(
        (c) => new Promise((resolve) => (c.exitCode !== null ? resolve(null) : c.once("exit", resolve))),
      ),
    );
    children = [];
  };
  const startAll = async (extra: Record<string, string>) => {
    children = [start("scheduler", { ...env, ...extra }), start("worker", { ...env, ...extra })];
    await until("the scheduler to be ready", async () => (await fetch(`${base}/readyz`)).ok);
  };
  const settled = (since: number, count: number) =>
    until("the batches", async () => {
      const r = await api("GET", "/v1/reports?domain=native-workspace-sync&limit=100");
      const mine = r.body.reports.filter((x: { finishedAt: string }) => Date.parse(x.finishedAt) >= since);
      const domains = await api("GET", "/v1/domains");
      const q = domains.body.domains.find((d: { id: string }) => d.id === "native-workspace-sync").queue;
      return mine.length >= count && q.waiting === 0 && q.active === 0;
    });

  try {
    say("\n1. Roll out with dry run: PAPERCLIP_NATIVE_WORKSPACE_SYNC_RETENTION_DRY_RUN=true");
    let since = Date.now();
    await startAll({ PAPERCLIP_NATIVE_WORKSPACE_SYNC_RETENTION_DRY_RUN: "true" });
    say(`   scheduler ${base} and one worker started; start-up discovery runs`);
    await settled(since, 2);
    for (const [id, e] of await outcomes(api, since)) {
      say(
        `   ${e.outcome === "candidate" ? "would remove" : "would keep  "}  ${label(id)}${e.outcome === "candidate" ? ` (${mib(e.bytes ?? 0)})` : ` (${e.reason})`}`,
      );
    }
    await stopAll();

    say("\n2. Candidates look right: enable removal and restart (the ledger survives restarts)");
    since = Date.now();
    await startAll({});
    await settled(since, 2);
    let freed = 0;
    const after = await outcomes(api, since);
    for (const [id, e] of after) {
      if (e.outcome === "removed") freed += e.bytes ?? 0;
      say(
        `   ${e.outcome === "removed" ? "removed " : "kept    "}  ${label(id)}${e.outcome === "removed" ? ` (${mib(e.bytes ?? 0)})` : ` (${e.reason})`}`,
      );
    }
    say("   kept      the shared generations cache (never looked at)");
    say(`   freed ${mib(freed)} of allocated disk`);

    say("\n3. A run creates its sync folder: POST /v1/events native_workspace_sync.folder_created");
    await folder(root, sample.newRun, 0, 1);
    since = Date.now();
    const events = await api("POST", "/v1/events", {
      events: [
        { type: "native_workspace_sync.folder_created", companyId: sample.company, runId: sample.newRun },
      ],
    });
    say(`   -> ${events.status} ${JSON.stringify(events.body)}`);
    await settled(since, 1);
    for (const [id, e] of await outcomes(api, since)) say(`   kept      ${label(id)} (${e.reason})`);

    const deadlines = await api("GET", "/v1/deadlines?domain=native-workspace-sync");
    say("\nScheduled next (GET /v1/deadlines); nothing else runs until then:");
    for (const d of deadlines.body.deadlines) say(`   ${d.dueAt}  ${d.companyId ?? "instance"}  ${d.reason}`);
    say(`\nOperators: ${base}/admin/queues (dashboard), ${base}/metrics, ${base}/docs (OpenAPI)`);
  } finally {
    await stopAll();
    const redis = new Redis(REDIS_URL);
    const keys = await redis.keys(`${PREFIX}:*`);
    if (keys.length) await redis.del(...keys);
    redis.disconnect();
    await rm(root, { recursive: true, force: true });
    say("\nStopped the scheduler and the worker, removed the sample instance.");
  }
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : error);
  process.exit(1);
});
