/**
 * The benchmark data set for restore points (not runnable itself): a fresh database with
 * Reclaim's migrations and
 *   - 10,000 issue trees of 10 issues each (a root, 3 children, 2 grandchildren under each
 *     child: 100,000 issues, depth 3), spread over `companies` companies (default 100);
 *   - one active restore point per issue: 100,000 restore points;
 *   - even trees closed (every issue done 10 days ago), odd trees open (root in progress);
 *   - every restore point due for review (delete_after = now), as right after the trigger
 *     marked them all.
 * Built with set-based SQL in a few seconds. `drop()` removes the database.
 */
import pg from "pg";
import { applyMigrations } from "../../packages/core/src/db/migrate";
import { createEmptyDatabase, type TestDatabase } from "../../packages/testkit/src/postgres";

export const TREES = 10_000;
export const ISSUES_PER_TREE = 10;

export interface Dataset extends TestDatabase {
  client: pg.Client;
  companies: string[];
  /** One grandchild (leaf) per tree, with its tree number and company. */
  leaves: { id: string; tree: number; companyId: string }[];
}

const sql = (companies: number) => `
CREATE TEMP TABLE bench_issues AS
WITH trees AS (
  SELECT t, md5('company-' || (t % ${companies}))::uuid AS company_id, (t % 2 = 0) AS closed
    FROM generate_series(0, ${TREES - 1}) AS t
)
SELECT md5('root-' || t)::uuid AS id, company_id, NULL::uuid AS parent_id, t, 0 AS depth, closed FROM trees
UNION ALL
SELECT md5('child-' || t || '-' || j)::uuid, company_id, md5('root-' || t)::uuid, t, 1, closed
  FROM trees, generate_series(0, 2) AS j
UNION ALL
SELECT md5('leaf-' || t || '-' || j || '-' || k)::uuid, company_id, md5('child-' || t || '-' || j)::uuid, t, 2, closed
  FROM trees, generate_series(0, 2) AS j, generate_series(0, 1) AS k;

INSERT INTO issues (id, company_id, parent_id, title, status, completed_at, created_at, updated_at)
SELECT id, company_id, parent_id, 'bench',
       CASE WHEN closed THEN 'done' WHEN depth = 0 THEN 'in_progress' ELSE 'todo' END,
       CASE WHEN closed THEN now() - interval '10 days' END,
       now() - interval '30 days', now() - interval '10 days'
  FROM bench_issues;

INSERT INTO execution_workspace_restore_points
  (company_id, execution_workspace_id, source_issue_id, generation, kind, storage_provider, storage_key,
   sha256, byte_size, format_version, key_fingerprint, status, delete_after, activated_at, created_at, updated_at)
SELECT company_id, md5('ws-' || id)::uuid, id, 1, 'worktree', 'local_disk',
       'companies/' || company_id || '/git-restore-points/' || md5('ws-' || id)::uuid || '/1/worktree/' || id,
       repeat('0', 64), 1024, 1, repeat('ab', 32), 'active', now(), now() - interval '10 days',
       now() - interval '10 days', now()
  FROM bench_issues;
`;

export async function createDataset(companyCount = 100): Promise<Dataset> {
  const db = await createEmptyDatabase();
  await applyMigrations(db.url);
  const client = new pg.Client({ connectionString: db.url });
  await client.connect();
  await client.query(sql(companyCount));
  await client.query("ANALYZE");
  const companies = (
    await client.query<{ id: string }>("SELECT DISTINCT company_id::text AS id FROM bench_issues ORDER BY 1")
  ).rows.map((r) => r.id);
  const leaves = (
    await client.query<{ id: string; t: number; company_id: string }>(
      `SELECT DISTINCT ON (t) id::text AS id, t, company_id::text AS company_id
         FROM bench_issues WHERE depth = 2 ORDER BY t, id`,
    )
  ).rows.map((r) => ({ id: r.id, tree: r.t, companyId: r.company_id }));
  return {
    ...db,
    client,
    companies,
    leaves,
    async drop() {
      await client.end().catch(() => undefined);
      await db.drop();
    },
  };
}

/** Median and 95th percentile of a sample, in the sample's unit. */
export function percentiles(values: number[]): { p50: number; p95: number; mean: number } {
  const sorted = [...values].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
  return { p50: at(0.5), p95: at(0.95), mean: values.reduce((a, b) => a + b, 0) / values.length };
}

/** `--name value` from the command line, as a number. */
export function numberArg(name: string, fallback: number): number {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? Number(process.argv[i + 1]) : fallback;
}
