/**
 * The records of confirmed `.retiring-*` copies (reclaim_confirmed_retirements) are read by key:
 * a batch's `failover-backups/` folders as ranges of the path index, each listed name by primary
 * key, whatever the records of other folders (confirmed-retirements.sql read the whole table for
 * every batch that finished leftovers: ~250 ms at 20,000 records), and forgotten by primary key
 * (forget-retirements.sql). The facts of a batch of sessions (session-facts.sql) read runs,
 * issues and finalizations by key and the other tables once a batch among the batch's
 * companies' rows (its joins read every row of each table). Real PostgreSQL.
 */
import { randomUUID } from "node:crypto";
import path from "node:path";
import pg from "pg";
import { poolOf, prismaTransaction, sqlFile, type Db } from "@reclaim/core";
import { fileDatabase, readsUnderEveryPlan } from "@reclaim/testkit";
import { confirmedRetirementsIn, forgetRetirements } from "../../src/domains/native-session-backups/queries";

const SQL = path.join(__dirname, "../../src/domains/native-session-backups");
const file = fileDatabase();
let db: Db;
beforeAll(() => (db = file.db()));

/** `folders` failover-backups folders of `perFolder` records each; their paths by folder. */
async function records(folders: number, perFolder: number): Promise<Map<string, string[]>> {
  const byFolder = new Map<string, string[]>();
  for (let f = 0; f < folders; f++) {
    const folder = `${randomUUID()}/failover-backups/`;
    byFolder.set(
      folder,
      Array.from({ length: perFolder }, () => `${folder}.retiring-${randomUUID()}`),
    );
  }
  await poolOf(db).query(`INSERT INTO reclaim_confirmed_retirements (path) SELECT unnest($1::text[])`, [
    [...byFolder.values()].flat(),
  ]);
  return byFolder;
}

it("a batch's folders: the listed names' records come back, the folder's records of names no longer listed are forgotten, other folders' records stay", async () => {
  const byFolder = await records(3, 4);
  const [a, b, c] = [...byFolder.keys()];
  const [a0, a1, a2, a3] = byFolder.get(a!)!;
  // A folder whose name is a prefix of another's ends at its slash: the other keeps its records.
  const nested = `${a!.slice(0, -1)}x/`;
  await poolOf(db).query(`INSERT INTO reclaim_confirmed_retirements (path) VALUES ($1)`, [
    `${nested}.retiring-1`,
  ]);
  const listed = [a0!, a1!, `${a}.retiring-${randomUUID()}`]; // the last has no record
  const found = await prismaTransaction(db, (tx) =>
    confirmedRetirementsIn(tx, [
      { folder: a!, retiring: listed },
      { folder: b!, retiring: [] },
    ]),
  );
  expect([...found].sort()).toEqual([a0, a1].sort());
  const left = (
    await poolOf(db).query<{ path: string }>(`SELECT path FROM reclaim_confirmed_retirements`)
  ).rows.map((r) => r.path);
  expect(left.sort()).toEqual([a0, a1, ...byFolder.get(c!)!, `${nested}.retiring-1`].sort());
  expect(left).not.toContain(a2);
  expect(left).not.toContain(a3);
  await forgetRetirements(db, [a0!]);
  expect(
    (
      await poolOf(db).query(`SELECT path FROM reclaim_confirmed_retirements WHERE path = ANY($1)`, [
        [a0, a1],
      ])
    ).rows,
  ).toEqual([{ path: a1 }]);
});

it("reads only the batch's folders' records and the listed names, whatever the other folders hold, planned young or analyzed, custom or generic", async () => {
  const byFolder = await records(200, 100); // 20,000 records
  const batch = [...byFolder.entries()].slice(10, 13).map(([folder, paths]) => ({
    folder,
    retiring: paths.slice(0, 50),
  }));
  const plans = await readsUnderEveryPlan(poolOf(db), {
    text: sqlFile(SQL, "confirmed-retirements.sql"),
    types: "jsonb",
    args: pg.escapeLiteral(JSON.stringify(batch)),
    writes: true,
  });
  for (const { analyzed, mode, read } of plans) {
    // Each folder's 100 records by range, each of its 50 listed names by key.
    expect({ analyzed, mode, read: read.get("reclaim_confirmed_retirements") }).toEqual({
      analyzed,
      mode,
      read: 3 * 100 + 3 * 50,
    });
  }
  const forget = await readsUnderEveryPlan(poolOf(db), {
    text: sqlFile(SQL, "forget-retirements.sql"),
    types: "jsonb",
    args: pg.escapeLiteral(JSON.stringify(batch.flatMap((f) => f.retiring))),
    writes: true,
  });
  for (const { analyzed, mode, read } of forget) {
    expect({ analyzed, mode, read: read.get("reclaim_confirmed_retirements") }).toEqual({
      analyzed,
      mode,
      read: 150,
    });
  }
});

it("the facts of a batch of sessions read runs, issues and finalizations by key, and the other tables no further than the batch's companies, planned young or analyzed, custom or generic", async () => {
  // 10 companies x 50 sessions, 4 runs each (session_id_before or _after, a context issue), a
  // finalization, a recovery action, a lease naming the copy and a task session per session;
  // and 10,000 rows in each table of 40 other companies.
  // One connection for the fixture's temporary tables and the reads of them.
  const client = await poolOf(db).connect();
  await client.query(`
    CREATE TEMP TABLE s AS
      SELECT c, k, gen_random_uuid() AS company_id, 'sess-' || c || '-' || k AS session_id,
             'scope-' || c || '-' || k AS scope, gen_random_uuid() AS issue_id
        FROM generate_series(1, 10) c, generate_series(1, 50) k;
    UPDATE s SET company_id = (SELECT company_id FROM s t WHERE t.c = s.c AND t.k = 1);
    CREATE TEMP TABLE r AS SELECT s.*, j, gen_random_uuid() AS run_id FROM s, generate_series(0, 3) j;
    INSERT INTO issues (id, company_id, title, status, updated_at) SELECT issue_id, company_id, 'i', 'done', now() FROM s;
    INSERT INTO heartbeat_runs (id, company_id, status, finished_at, session_id_before, session_id_after, context_snapshot)
      SELECT run_id, company_id, 'succeeded', now(), CASE WHEN j % 2 = 0 THEN session_id END,
             CASE WHEN j % 2 = 1 THEN session_id END, jsonb_build_object('issueId', issue_id::text) FROM r;
    INSERT INTO native_run_finalizations (run_id, company_id, issue_id, phase)
      SELECT run_id, company_id, issue_id, 'committed' FROM r WHERE j = 0;
    INSERT INTO issue_recovery_actions (company_id, source_issue_id, status, evidence, cause)
      SELECT company_id, issue_id, 'resolved', jsonb_build_object('runId', run_id::text), 'native_workspace_export' FROM r WHERE j = 1;
    INSERT INTO environment_leases (company_id, status, provider, metadata)
      SELECT company_id, 'destroyed', 'local', jsonb_build_object('nativeHarnessBackup', jsonb_build_object('sessionScopeId', scope)) FROM s;
    INSERT INTO agent_task_sessions (company_id, task_key, session_params_json)
      SELECT company_id, 't' || k, jsonb_build_object('sessionId', session_id) FROM s;
    -- 10,000 rows of each table of 40 other companies, naming nothing of the batch.
    CREATE TEMP TABLE o AS SELECT gen_random_uuid() AS company_id, gen_random_uuid() AS id, n
      FROM generate_series(1, 40) c, generate_series(1, 250) n;
    INSERT INTO issues (id, company_id, title, status, updated_at) SELECT id, company_id, 'o', 'done', now() FROM o;
    INSERT INTO heartbeat_runs (id, company_id, status, finished_at, session_id_before)
      SELECT id, company_id, 'succeeded', now(), 'other-' || n FROM o;
    INSERT INTO native_run_finalizations (run_id, company_id, issue_id, phase) SELECT id, company_id, id, 'committed' FROM o;
    INSERT INTO issue_recovery_actions (company_id, source_issue_id, status, evidence, cause)
      SELECT company_id, id, 'active', jsonb_build_object('runId', id::text), 'other' FROM o;
    INSERT INTO environment_leases (company_id, status, provider, metadata) SELECT company_id, 'active', 'local', '{}'::jsonb FROM o;
    INSERT INTO agent_task_sessions (company_id, task_key, session_params_json)
      SELECT company_id, 'o' || n, jsonb_build_object('sessionId', 'other-' || n) FROM o;
  `);
  // The batch: 20 sessions of each of 2 companies, each listing one run and its issue.
  const { rows: batch } = await client.query(
    `SELECT scope, company_id::text AS "companyId", session_id AS "sessionId",
            jsonb_build_array((SELECT run_id::text FROM r WHERE r.c = s.c AND r.k = s.k AND r.j = 0)) AS "runIds",
            jsonb_build_array(issue_id::text) AS "issueIds"
       FROM s WHERE c <= 2 AND k <= 20 ORDER BY c, k`,
  );
  const count = async (sql: string) => Number((await client.query(sql)).rows[0].n);
  // What each table holds for the batch's two companies (the most a read by company may take).
  const ofCompanies = async (table: string) =>
    count(`SELECT count(*) AS n FROM ${table} WHERE company_id IN (SELECT company_id FROM s WHERE c <= 2)`);
  const companies = {
    heartbeat_runs: await ofCompanies("heartbeat_runs"),
    issue_recovery_actions: await ofCompanies("issue_recovery_actions"),
    environment_leases: await ofCompanies("environment_leases"),
    agent_task_sessions: await ofCompanies("agent_task_sessions"),
  };
  client.release();
  const plans = await readsUnderEveryPlan(poolOf(db), {
    text: sqlFile(SQL, "session-facts.sql"),
    types: "jsonb",
    args: pg.escapeLiteral(JSON.stringify(batch)),
  });
  for (const { analyzed, mode, read } of plans) {
    expect({
      analyzed,
      mode,
      // By key: each session's issue (from its runs' context and its list) and its runs' finalizations.
      issues: (read.get("issues") ?? 0) <= 2 * batch.length,
      finalizations: (read.get("native_run_finalizations") ?? 0) <= 4 * batch.length,
      // Once a batch among the batch's companies' rows (runs: by either session column; the listed ones by key).
      runs: (read.get("heartbeat_runs") ?? 0) <= companies.heartbeat_runs + batch.length,
      actions: (read.get("issue_recovery_actions") ?? 0) <= companies.issue_recovery_actions,
      leases: (read.get("environment_leases") ?? 0) <= companies.environment_leases,
      taskSessions: (read.get("agent_task_sessions") ?? 0) <= 2 * companies.agent_task_sessions,
    }).toEqual({
      analyzed,
      mode,
      issues: true,
      finalizations: true,
      runs: true,
      actions: true,
      leases: true,
      taskSessions: true,
    });
  }
});
