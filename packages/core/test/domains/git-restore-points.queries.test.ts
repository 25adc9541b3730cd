/**
 * What git cache expiration reads of a batch of git worktree workspaces (git-workspaces.sql):
 * when anything last touched each workspace's issue tree, from every source the rule names, and
 * read by the batch's keys: the company's runs are read once a batch, never once per issue of
 * the batch's trees (a join on "context issue OR checkout run OR execution run" read them per
 * issue: 146-205 ms a batch of 50 workspaces at 25,000 runs a company), and the issues bound to
 * the batch's workspaces through Paperclip's index, which the mirror carries (migration
 * 20261208010000; without it, every issue of the instance). Real PostgreSQL.
 */
import { randomUUID } from "node:crypto";
import path from "node:path";
import pg from "pg";
import { poolOf, sqlFile, type Db } from "@reclaim/core";
import { fileDatabase, readsUnderEveryPlan } from "@reclaim/testkit";
import { companyWorkspaces, gitWorkspaces } from "../../src/domains/git-restore-points/queries";

const SQL = path.join(__dirname, "../../src/domains/git-restore-points");
const file = fileDatabase();
let db: Db;
beforeAll(() => (db = file.db()));

const daysAgo = (days: number) => new Date(Date.now() - days * 86_400_000);

async function workspace(company: string, root: string, lastUsedDaysAgo: number): Promise<string> {
  const id = randomUUID();
  await poolOf(db).query(
    `INSERT INTO execution_workspaces (id, company_id, source_issue_id, mode, strategy_type, provider_type, status, cwd, last_used_at)
     VALUES ($1, $2, $3, 'isolated_workspace', 'git_worktree', 'git_worktree', 'idle', $4, $5)`,
    [id, company, root, `/srv/wt/${id}`, daysAgo(lastUsedDaysAgo)],
  );
  return id;
}

async function issue(
  company: string,
  fields: { parent?: string; status?: string; updatedDaysAgo: number; boundTo?: string },
): Promise<string> {
  const id = randomUUID();
  await poolOf(db).query(
    `INSERT INTO issues (id, company_id, parent_id, status, updated_at, execution_workspace_id)
     VALUES ($1, $2, $3, $4, $5, $6)`,
    [
      id,
      company,
      fields.parent ?? null,
      fields.status ?? "done",
      daysAgo(fields.updatedDaysAgo),
      fields.boundTo ?? null,
    ],
  );
  return id;
}

async function run(company: string, finishedDaysAgo: number, contextIssue?: string): Promise<string> {
  const id = randomUUID();
  await poolOf(db).query(
    `INSERT INTO heartbeat_runs (id, company_id, status, created_at, started_at, finished_at, context_snapshot)
     VALUES ($1, $2, 'succeeded', $3, $3, $4, $5)`,
    [id, company, daysAgo(60), daysAgo(finishedDaysAgo), contextIssue ? { issueId: contextIssue } : null],
  );
  return id;
}

it("last_touch is the latest of the workspace's last use, its tree's and bound issues' updates, and their runs (by context, checkout or execution run); bound_open sees an open bound issue", async () => {
  const company = randomUUID();
  const other = randomUUID();
  const at = (id: string, m: Awaited<ReturnType<typeof gitWorkspaces>>) =>
    m.get(id)!.last_touch?.toISOString();
  // 1. its last use
  const r1 = await issue(company, { updatedDaysAgo: 50 });
  const w1 = await workspace(company, r1, 3);
  // 2. a grandchild's update
  const r2 = await issue(company, { updatedDaysAgo: 50 });
  const c2 = await issue(company, { parent: r2, updatedDaysAgo: 40 });
  await issue(company, { parent: c2, updatedDaysAgo: 4 });
  const w2 = await workspace(company, r2, 30);
  // 3. a run naming a child in its context (another company's newer run naming it does not count)
  const r3 = await issue(company, { updatedDaysAgo: 50 });
  const c3 = await issue(company, { parent: r3, updatedDaysAgo: 40 });
  await run(company, 5, c3);
  await run(other, 1, c3);
  const w3 = await workspace(company, r3, 30);
  // 4. the root's checkout run, of another issue's context
  const r4 = await issue(company, { updatedDaysAgo: 50 });
  const checkout = await run(company, 6, randomUUID());
  await poolOf(db).query(`UPDATE issues SET checkout_run_id = $1 WHERE id = $2`, [checkout, r4]);
  const w4 = await workspace(company, r4, 30);
  // 5. a bound issue's execution run; the bound issue is open
  const r5 = await issue(company, { updatedDaysAgo: 50 });
  const w5 = await workspace(company, r5, 30);
  const b5 = await issue(company, { status: "in_progress", updatedDaysAgo: 40, boundTo: w5 });
  const execution = await run(company, 7);
  await poolOf(db).query(`UPDATE issues SET execution_run_id = $1 WHERE id = $2`, [execution, b5]);

  const found = await gitWorkspaces(db, company, [w1, w2, w3, w4, w5, w1]);
  expect([...found.keys()].sort()).toEqual([w1, w2, w3, w4, w5].sort());
  const latest = async (table: string, id: string, column: string) =>
    (
      (await poolOf(db).query(`SELECT ${column} AS at FROM ${table} WHERE id = $1`, [id])).rows[0].at as Date
    ).toISOString();
  expect(at(w1, found)).toBe(await latest("execution_workspaces", w1, "last_used_at"));
  expect(at(w2, found)).toBe(
    (
      await poolOf(db).query(`SELECT updated_at AS at FROM issues WHERE parent_id = $1`, [c2])
    ).rows[0].at.toISOString(),
  );
  const ranFor = async (issueId: string) =>
    (
      await poolOf(db).query(
        `SELECT finished_at AS at FROM heartbeat_runs WHERE company_id = $1 AND context_snapshot ->> 'issueId' = $2`,
        [company, issueId],
      )
    ).rows[0].at.toISOString();
  expect(at(w3, found)).toBe(await ranFor(c3));
  expect(at(w4, found)).toBe(await latest("heartbeat_runs", checkout, "finished_at"));
  expect(at(w5, found)).toBe(await latest("heartbeat_runs", execution, "finished_at"));
  expect([w1, w2, w3, w4, w5].map((w) => found.get(w)!.bound_open)).toEqual([
    false,
    false,
    false,
    false,
    true,
  ]);
});

it("reads the batch's workspaces and issues by key and the company's runs once a batch, not once per issue of the batch's trees, planned young or analyzed, custom or generic", async () => {
  const company = randomUUID();
  // 50 workspaces, each a tree of a root and two children plus a bound issue, two runs per
  // issue naming it; 5,000 other runs of the company and 5,000 of another company.
  await poolOf(db).query(
    `WITH w AS (SELECT gen_random_uuid() AS id, gen_random_uuid() AS root, gen_random_uuid() AS a,
                       gen_random_uuid() AS b, gen_random_uuid() AS bound
                  FROM generate_series(1, 50))
     , ws AS (
       INSERT INTO execution_workspaces (id, company_id, source_issue_id, mode, strategy_type, provider_type, status, cwd, last_used_at)
       SELECT id, $1::uuid, root, 'isolated_workspace', 'git_worktree', 'git_worktree', 'idle', '/srv/wt/' || id, now() FROM w)
     , i AS (
       INSERT INTO issues (id, company_id, parent_id, status, updated_at, execution_workspace_id)
       SELECT x.id, $1::uuid, x.parent, 'done', now(), x.ws
         FROM w CROSS JOIN LATERAL (VALUES (w.root, NULL::uuid, NULL::uuid), (w.a, w.root, NULL), (w.b, w.root, NULL),
                                           (w.bound, NULL, w.id)) AS x(id, parent, ws)
       RETURNING id)
     INSERT INTO heartbeat_runs (company_id, status, created_at, finished_at, context_snapshot)
     SELECT $1::uuid, 'succeeded', now(), now(), jsonb_build_object('issueId', i.id::text)
       FROM i, generate_series(1, 2)`,
    [company],
  );
  await poolOf(db).query(
    `INSERT INTO heartbeat_runs (company_id, status, created_at, finished_at)
     SELECT c, 'succeeded', now(), now() FROM unnest(ARRAY[$1::uuid, $2::uuid]) AS c, generate_series(1, 5000)`,
    [company, randomUUID()],
  );
  // Another company's 5,000 workspaces, each with four issues (one bound to it).
  await poolOf(db).query(
    `WITH w AS (SELECT gen_random_uuid() AS id, gen_random_uuid() AS root FROM generate_series(1, 5000))
     , ws AS (
       INSERT INTO execution_workspaces (id, company_id, source_issue_id, mode, strategy_type, provider_type, status, cwd, last_used_at)
       SELECT id, $1::uuid, root, 'isolated_workspace', 'git_worktree', 'git_worktree', 'idle', '/srv/other/' || id, now() FROM w)
     INSERT INTO issues (id, company_id, parent_id, status, updated_at, execution_workspace_id)
     SELECT x.id, $1::uuid, x.parent, 'done', now(), x.ws
       FROM w CROSS JOIN LATERAL (VALUES (w.root, NULL::uuid, NULL::uuid), (gen_random_uuid(), w.root, NULL),
                                         (gen_random_uuid(), w.root, NULL), (gen_random_uuid(), NULL, w.id)) AS x(id, parent, ws)`,
    [randomUUID()],
  );
  const batch = (
    await poolOf(db).query<{ id: string }>(
      `SELECT id::text FROM execution_workspaces WHERE company_id = $1`,
      [company],
    )
  ).rows.map((r) => r.id);
  const companyRuns = 5000 + 50 * 4 * 2;
  const plans = await readsUnderEveryPlan(poolOf(db), {
    text: sqlFile(SQL, "git-workspaces.sql"),
    types: "jsonb, text",
    args: `${pg.escapeLiteral(JSON.stringify(batch))}, '${company}'`,
  });
  for (const { analyzed, mode, read } of plans) {
    // At most the company's runs once (no index has context_snapshot's issueId), never per issue.
    const runs = read.get("heartbeat_runs") ?? 0;
    const issues = read.get("issues") ?? 0;
    expect({
      analyzed,
      mode,
      atMostTheCompanysRunsOnce: runs <= companyRuns,
      // The batch's 200 issues, each looked up a few times (tree, bound, related), not the
      // instance's 20,200: the bound ones through Paperclip's (company_id,
      // execution_workspace_id) index, which the mirror has too.
      issuesByKey: issues <= 3 * 200,
      workspaces: read.get("execution_workspaces"),
    }).toEqual({
      analyzed,
      mode,
      atMostTheCompanysRunsOnce: true,
      issuesByKey: true,
      workspaces: batch.length,
    });
  }
});

it("a requested sweep's page of the company's workspaces reads its own rows after the cursor, not all of the company's (a sweep grows with the workspaces, not their square)", async () => {
  const company = randomUUID();
  // 2,000 workspaces of the company and 2,000 of another.
  await poolOf(db).query(
    `INSERT INTO execution_workspaces (id, company_id, mode, strategy_type, provider_type, status, cwd)
     SELECT gen_random_uuid(), c, 'isolated_workspace', 'git_worktree', 'git_worktree', 'active', '/srv/page/' || g
       FROM unnest(ARRAY[$1::uuid, $2::uuid]) AS c, generate_series(1, 2000) AS g`,
    [company, randomUUID()],
  );
  const all = (
    await poolOf(db).query<{ id: string }>(
      `SELECT id::text FROM execution_workspaces WHERE company_id = $1 ORDER BY id`,
      [company],
    )
  ).rows.map((r) => r.id);
  // Page after page from the first (no cursor): every workspace once, in order.
  const paged: string[] = [];
  let after: string | null = null;
  for (;;) {
    const page: string[] = await companyWorkspaces(db, company, after, 500);
    paged.push(...page);
    if (page.length < 500) break;
    after = page.at(-1)!;
  }
  expect(paged).toEqual(all);
  // A page in the middle: sent unnamed (a raw query), so planned with its values.
  const plans = await readsUnderEveryPlan(poolOf(db), {
    text: sqlFile(SQL, "company-workspaces.sql"),
    types: "text, text, integer",
    args: `'${company}', '${all[1000]}', 50`,
    unnamed: true,
  });
  for (const { analyzed, mode, read } of plans) {
    const workspaces = read.get("execution_workspaces") ?? 0;
    // Analyzed (as autovacuum leaves a table of any size): the primary key from the cursor,
    // about the page's 50 and the other company's rows among them. Never analyzed (a fresh
    // install), PostgreSQL guesses the company has few rows and reads them all through its
    // index, once. Ordered by the text of the id, every page read all 2,000, analyzed or not.
    const allowed = analyzed ? 300 : 2000;
    expect({ analyzed, mode, workspaces: workspaces <= allowed }).toEqual({
      analyzed,
      mode,
      workspaces: true,
    });
  }
});
