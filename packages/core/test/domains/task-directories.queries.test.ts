/**
 * What task directories read of Paperclip's workspace tables (directory-refs.sql): the rows
 * whose cwd is a batch's directory or below it. No index serves a path prefix in either
 * schema, so the statement reads the company's workspace rows, and must read them once a
 * batch, never once per directory of the batch. Real PostgreSQL, under every plan it can
 * use for the statement (sent unnamed: planned with its values).
 */
import { randomUUID } from "node:crypto";
import path from "node:path";
import pg from "pg";
import { poolOf, sqlFile, type Db } from "@reclaim/core";
import { fileDatabase, readsUnderEveryPlan } from "@reclaim/testkit";
import { directoryRefs } from "../../src/domains/task-directories/queries";

const SQL = path.join(__dirname, "../../src/domains/task-directories");
const file = fileDatabase();
let db: Db;
beforeAll(() => (db = file.db()));

it("reads the company's workspace rows once a batch, not once per directory, and finds each directory's rows by exact path or below it", async () => {
  const company = randomUUID();
  const root = `/srv/instance/isolated-workspaces/${company}`;
  const issues = Array.from({ length: 50 }, () => randomUUID());
  // 2,000 execution workspaces and 1,000 project workspaces of the company elsewhere, and of
  // another company; then the batch's own: the first directory exact, the second below it.
  await poolOf(db).query(
    `INSERT INTO execution_workspaces (id, company_id, mode, strategy_type, provider_type, status, cwd)
     SELECT gen_random_uuid(), c, 'isolated_workspace', 'project_primary', 'local_fs', 'active', '/srv/elsewhere/' || g
       FROM unnest(ARRAY[$1::uuid, $2::uuid]) AS c, generate_series(1, 2000) AS g`,
    [company, randomUUID()],
  );
  await poolOf(db).query(
    `INSERT INTO project_workspaces (id, company_id, project_id, cwd)
     SELECT gen_random_uuid(), c, gen_random_uuid(), '/srv/projects/' || g
       FROM unnest(ARRAY[$1::uuid, $2::uuid]) AS c, generate_series(1, 1000) AS g`,
    [company, randomUUID()],
  );
  const exact = randomUUID();
  const below = randomUUID();
  await poolOf(db).query(
    `INSERT INTO execution_workspaces (id, company_id, mode, strategy_type, provider_type, status, cwd)
     VALUES ($1, $3, 'isolated_workspace', 'project_primary', 'local_fs', 'active', $4),
            ($2, $3, 'isolated_workspace', 'project_primary', 'local_fs', 'idle', $5)`,
    [exact, below, company, `${root}/${issues[0]}`, `${root}/${issues[1]}/nested`],
  );
  const dirs = issues.map((key) => ({ key, path: `${root}/${key}` }));
  const refs = await directoryRefs(db, company, dirs);
  expect(refs.get(issues[0]!)).toEqual([expect.objectContaining({ id: exact, exact: true })]);
  expect(refs.get(issues[1]!)).toEqual([expect.objectContaining({ id: below, exact: false })]);
  expect(issues.slice(2).every((k) => refs.get(k)!.length === 0)).toBe(true);

  const plans = await readsUnderEveryPlan(poolOf(db), {
    text: sqlFile(SQL, "directory-refs.sql"),
    types: "jsonb, text",
    args: `${pg.escapeLiteral(JSON.stringify(dirs))}, '${company}'`,
    unnamed: true,
  });
  for (const { analyzed, mode, read } of plans) {
    expect({
      analyzed,
      mode,
      // Each table at most once (the company's rows through its index, or, analyzed, the
      // whole table when the company is half of it), never once per directory (50 times).
      workspacesOnce: (read.get("execution_workspaces") ?? 0) <= 4002,
      projectWorkspacesOnce: (read.get("project_workspaces") ?? 0) <= 2000,
    }).toEqual({ analyzed, mode, workspacesOnce: true, projectWorkspacesOnce: true });
  }
});
