/**
 * The retention worker's batch queries read index ranges, so a company with a big backlog
 * (100,000 restore points to delete after a company deletion) costs each batch what a small
 * one does. The plans are PostgreSQL's own (EXPLAIN) on a real database; sequential scans are
 * priced out so that a query the index cannot serve shows as one. The figures at 100,000
 * rows are bench/restore-points/deletion-backlog.ts's.
 */
import { randomUUID } from "node:crypto";
import path from "node:path";
import pg from "pg";
import { sqlFile } from "@reclaim/core/src/db/sql";
import { createTestDatabase, type TestDatabase } from "@reclaim/testkit";

const SQL_DIR = path.join(__dirname, "../../src/domains/restore-point-retention");
const WORK_DUE_INDEX = "execution_workspace_restore_points_company_id_work_due_idx";

let database: TestDatabase;
let client: pg.Client;
const company = randomUUID();
beforeAll(async () => {
  database = await createTestDatabase();
  client = new pg.Client({ connectionString: database.url });
  await client.connect();
  await client.query(
    `INSERT INTO execution_workspace_restore_points
       (company_id, execution_workspace_id, source_issue_id, generation, kind, storage_provider,
        storage_key, status, retry_at, created_at, updated_at)
     SELECT $1::uuid, gen_random_uuid(), gen_random_uuid(), 1, 'worktree', 'local_disk',
            'k-' || gen_random_uuid(), (ARRAY['expiring', 'superseded', 'delete_requested'])[1 + n % 3],
            CASE WHEN n % 10 = 0 THEN now() + interval '15 minutes' END,
            now() - interval '1 day', now() - interval '1 day' + n * interval '1 second'
       FROM generate_series(1, 2000) AS n`,
    [company],
  );
  await client.query("ANALYZE execution_workspace_restore_points");
});
afterAll(async () => {
  await client?.end();
  await database?.drop();
});

/** The plan of one of the domain's .sql files, sequential scans priced out. */
async function planOf(file: string, params: unknown[]): Promise<string> {
  await client.query("BEGIN");
  try {
    await client.query("SET LOCAL enable_seqscan = off");
    const { rows } = await client.query<{ "QUERY PLAN": string }>(
      `EXPLAIN (COSTS OFF) ${sqlFile(SQL_DIR, file)}`,
      params,
    );
    return rows.map((r) => r["QUERY PLAN"]).join("\n");
  } finally {
    await client.query("ROLLBACK");
  }
}

describe("hooks and deletions of a company", () => {
  const now = new Date();
  const pendingBefore = new Date(now.getTime() - 3600_000);

  it("are found oldest first in the partial index, without sorting the backlog (due-work.sql)", async () => {
    const plan = await planOf("due-work.sql", [company, now, pendingBefore, 50]);
    expect(plan).toContain(`Index Scan using ${WORK_DUE_INDEX}`);
    expect(plan).not.toMatch(/Seq Scan/);
    // The only sort keyed by their due time would be one over the whole backlog.
    expect(plan).not.toMatch(/Sort Key: \(COALESCE\(rp_\d+\.retry_at, rp_\d+\.updated_at\)\)/);
  });

  it("are known due, and their next retry found, from the partial index (next-due.sql)", async () => {
    const plan = await planOf("next-due.sql", [company, now, pendingBefore]);
    expect(plan.match(new RegExp(`Index Scan using ${WORK_DUE_INDEX}`, "g"))).toHaveLength(2);
    expect(plan).not.toMatch(/Seq Scan/);
  });
});
