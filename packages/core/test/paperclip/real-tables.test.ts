/**
 * Paperclip's real tables: a database built as Paperclip defines them
 * (packages/testkit/fixtures/paperclip-public-schema.sql, then paperclip-current-schema.sql,
 * both derived from paperclipai/paperclip packages/db/src/schema), migrated by Reclaim, and
 * every domain run against it through the real check code (scheduler API, BullMQ worker).
 * docs/paperclip-tables.md maps each table and column.
 */
import { randomUUID } from "node:crypto";
import { existsSync } from "node:fs";
import { mkdir, writeFile } from "node:fs/promises";
import { readFileSync } from "node:fs";
import path from "node:path";
import pg from "pg";
import { IMPLEMENTED_DOMAINS } from "@reclaim/core";
import { applyMigrations, REPO_ROOT } from "../../src/db/migrate";
import {
  createEmptyDatabase,
  daysAgo,
  startStack,
  sweepDomain,
  writeTree,
  type Stack,
} from "@reclaim/testkit";
import { makeFolder, reasonOf } from "@reclaim/testkit/src/fixtures/native-workspace-sync";

const FIXTURES = path.join(REPO_ROOT, "packages/testkit/fixtures");

async function paperclipDatabase() {
  const db = await createEmptyDatabase();
  const client = new pg.Client({ connectionString: db.url });
  await client.connect();
  try {
    for (const file of ["paperclip-public-schema.sql", "paperclip-current-schema.sql"])
      await client.query(readFileSync(path.join(FIXTURES, file), "utf8"));
  } finally {
    await client.end();
  }
  await applyMigrations(db.url);
  return db;
}

async function paperclipStack(env: Record<string, string> = {}): Promise<Stack> {
  // Task directories and git cache expiration are off by default (the spec); here every domain runs.
  const on = {
    PAPERCLIP_TASK_DIRECTORY_RETENTION_ENABLED: "true",
    PAPERCLIP_GIT_CACHE_EXPIRATION_ENABLED: "true",
  };
  return startStack({ database: await paperclipDatabase(), env: { ...on, ...env } });
}

const sql = (stack: Stack, text: string, ...params: unknown[]) => stack.db.$executeRawUnsafe(text, ...params);

/** A native run as Paperclip writes it (agent, runtime mode, runner profile). */
async function nativeRun(
  stack: Stack,
  companyId: string,
  opts: { syncLeaseId?: string } = {},
): Promise<string> {
  const id = randomUUID();
  const profile =
    opts.syncLeaseId === undefined
      ? null
      : {
          nativeWorkspaceSync: {
            schema: "paperclip.native-workspace-sync/v1",
            state: "finalized",
            descriptorSha256: "0".repeat(64),
            baselineSha256: "1".repeat(64),
            finalHostSha256: null,
            workspaceId: randomUUID(),
            leaseId: opts.syncLeaseId,
            providerLeaseId: "sandbox-1",
            remoteCwd: "/work",
            resourceDisposition: null,
          },
        };
  await sql(
    stack,
    `INSERT INTO heartbeat_runs (id, company_id, agent_id, status, started_at, finished_at, runtime_mode,
                                 runner_profile_json, context_snapshot)
     VALUES ($1::uuid, $2::uuid, gen_random_uuid(), 'succeeded', $3, $4, 'native', $5::jsonb, $6::jsonb)`,
    id,
    companyId,
    daysAgo(12),
    daysAgo(9),
    profile === null ? null : JSON.stringify(profile),
    JSON.stringify({ issueId: randomUUID() }),
  );
  return id;
}

async function lease(stack: Stack, companyId: string, status: string): Promise<string> {
  const id = randomUUID();
  await sql(
    stack,
    `INSERT INTO environment_leases (id, company_id, status, provider) VALUES ($1::uuid, $2::uuid, $3, 'e2b')`,
    id,
    companyId,
    status,
  );
  return id;
}

async function finalization(stack: Stack, companyId: string, runId: string, phase: string) {
  await sql(
    stack,
    `INSERT INTO native_run_finalizations (run_id, company_id, issue_id, phase) VALUES ($1::uuid, $2::uuid, gen_random_uuid(), $3)`,
    runId,
    companyId,
    phase,
  );
}

describe("Paperclip's real tables", () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await paperclipStack();
  });
  afterAll(async () => stack?.stop());

  it("migrate keeps Paperclip's native_run_finalizations and records only the tables it created", async () => {
    const columns = await stack.db.$queryRawUnsafe<{ column_name: string }[]>(
      `SELECT column_name::text FROM information_schema.columns WHERE table_name = 'native_run_finalizations' ORDER BY ordinal_position`,
    );
    expect(columns.map((c) => c.column_name)).toEqual([
      "run_id",
      "company_id",
      "issue_id",
      "phase",
      "attempt",
      "lease_owner",
      "lease_expires_at",
      "result_id",
      "assessment_id",
      "decision_id",
      "failure_code",
      "failure_detail",
      "next_attempt_at",
      "created_at",
      "updated_at",
    ]);
    const created = (await stack.db.reclaimCreatedTable.findMany()).map((t) => t.tableName).sort();
    expect(created).toEqual([
      "company_skill_agent_pins",
      "company_skill_recovery_pins",
      "company_skill_run_pins",
      "company_skill_version_packages",
      "historical_recovery_adoptions",
      "retained_workspace_recoveries",
    ]);
  });

  it("every domain runs on them, instance and company scope, without an error", async () => {
    const company = randomUUID();
    for (const domain of IMPLEMENTED_DOMAINS) {
      for (const scope of [null, company]) {
        const report = await sweepDomain(stack, domain.id, scope);
        expect([domain.id, scope, report.error]).toEqual([domain.id, scope, null]);
      }
    }
  });

  it("native workspace sync reads Paperclip's columns, and keeps as source_unavailable what only Reclaim's tables could tell", async () => {
    const c = randomUUID();
    // No sync reference in runner_profile_json: settled and removable on Paperclip's rows alone.
    const plain = await nativeRun(stack, c);
    await finalization(stack, c, plain, "committed");
    // A valid reference, a committed finalization, an open workspace export (Paperclip's
    // issue_recovery_actions, evidence.runId): kept for the export.
    const exported = await nativeRun(stack, c, { syncLeaseId: await lease(stack, c, "released") });
    await finalization(stack, c, exported, "committed");
    await sql(
      stack,
      `INSERT INTO issue_recovery_actions (company_id, source_issue_id, kind, status, cause, fingerprint, evidence, next_action)
       VALUES ($1::uuid, gen_random_uuid(), 'active_run_watchdog', 'escalated', 'native_workspace_sync_out_unsafe_archive',
               'f', $2::jsonb, 'retry the export')`,
      c,
      JSON.stringify({ runId: exported }),
    );
    // A valid reference and nothing Paperclip records pending: whether a retained workspace
    // recovery is pending only Reclaim's own (unwritten) table could say.
    const blind = await nativeRun(stack, c, { syncLeaseId: await lease(stack, c, "released") });
    await finalization(stack, c, blind, "committed");
    // An owned finalization (lease_owner) keeps the folder whatever else holds.
    const owned = await nativeRun(stack, c);
    await sql(
      stack,
      `INSERT INTO native_run_finalizations (run_id, company_id, issue_id, phase, lease_owner)
       VALUES ($1::uuid, $2::uuid, gen_random_uuid(), 'finalizing', 'server-2')`,
      owned,
      c,
    );
    for (const run of [plain, exported, blind, owned]) await makeFolder(stack, run);

    const report = await sweepDomain(stack, "native-workspace-sync", c);
    expect(reasonOf(report, plain)).toBe("removed");
    expect(reasonOf(report, exported)).toBe("workspace_export_active");
    expect(reasonOf(report, blind)).toBe("source_unavailable");
    expect(reasonOf(report, owned)).toBe("finalization_owner_receipt");
    expect(existsSync(path.join(stack.instanceRoot, "native-workspace-sync", blind))).toBe(true);
  });

  it("native session backups read Paperclip's runs, issues, finalizations and task sessions", async () => {
    const c = randomUUID();
    const scope = randomUUID().replace(/-/g, "");
    const sessionId = `codex-${randomUUID()}`;
    const issue = randomUUID();
    await sql(
      stack,
      `INSERT INTO issues (id, company_id, title, status, completed_at, updated_at) VALUES ($1::uuid, $2::uuid, 't', 'done', $3, $3)`,
      issue,
      c,
      daysAgo(10),
    );
    const run = randomUUID();
    await sql(
      stack,
      `INSERT INTO heartbeat_runs (id, company_id, agent_id, status, finished_at, session_id_after, runtime_mode, context_snapshot)
       VALUES ($1::uuid, $2::uuid, gen_random_uuid(), 'succeeded', $3, $4, 'native', $5::jsonb)`,
      run,
      c,
      daysAgo(9),
      sessionId,
      JSON.stringify({ issueId: issue }),
    );
    await finalization(stack, c, run, "committed");
    await sql(
      stack,
      `INSERT INTO agent_task_sessions (company_id, agent_id, adapter_type, task_key, session_params_json)
       VALUES ($1::uuid, gen_random_uuid(), 'codex_local', $2, $3::jsonb)`,
      c,
      `issue:${issue}`,
      JSON.stringify({ sessionId }),
    );
    const dir = path.join(stack.instanceRoot, "runtime/paperclip-runner/durable-sessions", scope);
    await mkdir(dir, { recursive: true });
    await writeFile(path.join(dir, "control-plane.json"), JSON.stringify({ companyId: c, sessionId }));
    await writeTree(
      path.join(dir, "failover-backups", "current"),
      {
        "manifest.json": JSON.stringify({ completedAt: daysAgo(9).toISOString() }),
        "codex-home/state.json": "{}",
      },
      daysAgo(9),
    );
    const live = await stack.api("POST", "/v1/events", {
      events: [{ type: "native_sessions.live", sessions: [], reportedAt: new Date().toISOString() }],
    });
    expect(live.status).toBe(202);

    const report = await sweepDomain(stack, "native-session-backups", null);
    const id = `runtime/paperclip-runner/durable-sessions/${scope}/failover-backups/current`;
    expect(report.entries.filter((e) => e.id === id).at(-1)?.outcome).toBe("removed");
    const left = await stack.db.$queryRawUnsafe<{ n: number }[]>(
      `SELECT count(*)::int AS n FROM agent_task_sessions WHERE company_id = $1::uuid`,
      c,
    );
    expect(left[0]!.n).toBe(0);
  });

  it("skill version caches keep every version as source_unavailable: Paperclip records no run, recovery or agent pins", async () => {
    const c = randomUUID();
    const skill = randomUUID();
    const [old, current] = [randomUUID(), randomUUID()];
    await sql(
      stack,
      `INSERT INTO company_skills (id, company_id, key, slug, name, markdown, current_version_id)
       VALUES ($1::uuid, $2::uuid, 'k', 's', 'n', '# skill', $3::uuid)`,
      skill,
      c,
      current,
    );
    for (const [i, v] of [old, current].entries())
      await sql(
        stack,
        `INSERT INTO company_skill_versions (id, company_id, company_skill_id, revision_number) VALUES ($1::uuid, $2::uuid, $3::uuid, $4)`,
        v,
        c,
        skill,
        i + 1,
      );
    const dir = path.join(stack.instanceRoot, "skills", c, "__versions__", skill, old);
    await writeTree(dir, { "SKILL.md": "# skill" }, daysAgo(2));
    const marker = path.join(stack.instanceRoot, "skills", c, "__version_access__", ".observation-started");
    await writeTree(path.dirname(marker), { ".observation-started": "" }, daysAgo(2));

    const report = await sweepDomain(stack, "skill-version-caches", c);
    const id = `skills/${c}/__versions__/${skill}/${old}`;
    expect(report.entries.filter((e) => e.id === id).at(-1)).toMatchObject({
      outcome: "skipped",
      reason: "source_unavailable",
    });
    expect(existsSync(dir)).toBe(true);
  });
});

describe("an operator's opt-out per rule (..._ASSUME_EMPTY)", () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await paperclipStack({
      RECLAIM_NATIVE_WORKSPACE_SYNC_ASSUME_EMPTY: "retained_recoveries,historical_adoptions",
    });
  });
  afterAll(async () => stack?.stop());

  it("reads the Reclaim-created tables of the listed rules as the truth", async () => {
    const c = randomUUID();
    const run = await nativeRun(stack, c, { syncLeaseId: await lease(stack, c, "released") });
    await finalization(stack, c, run, "committed");
    await makeFolder(stack, run);
    expect(reasonOf(await sweepDomain(stack, "native-workspace-sync", c), run)).toBe("removed");
  });

  it("refuses an unknown rule name", async () => {
    const { readConfigOf } = await import("@reclaim/core");
    expect(() =>
      readConfigOf("native-workspace-sync", {
        RECLAIM_NATIVE_WORKSPACE_SYNC_ASSUME_EMPTY: "retained_recovery",
      }),
    ).toThrow(/RECLAIM_NATIVE_WORKSPACE_SYNC_ASSUME_EMPTY/);
  });
});
