/**
 * The runs behind a batch of sync folders (run-state.sql) are read by key: each run by its
 * primary key, and the rows of the other tables the rules read through the run (or the lease
 * its sync reference names), whatever the number of rows of the instance, under custom and
 * generic plans, on a database whose tables were never analyzed (a young one, as a fresh
 * install's) and on an analyzed one. A join was planned as a scan of every run of the instance
 * for each batch (bench/platform/sync-folders.ts: 4-6 ms of a batch of 50 folders at
 * 3,000-10,000 runs), and the rules' EXISTS as hashed subplans reading environment_leases whole
 * five times a batch (17-27 ms at 20,000 leases).
 * And a company job finds its first runs in name order (companyRunsInOrder). Real PostgreSQL.
 */
import { randomUUID } from "node:crypto";
import path from "node:path";
import pg from "pg";
import { poolOf, prismaTransaction, sqlFile, type Db } from "@reclaim/core";
import { fileDatabase, readsUnderEveryPlan } from "@reclaim/testkit";
import { companyRunsInOrder, runStates } from "../../src/domains/native-workspace-sync/queries";
import { SOURCES, type SourceRule } from "../../src/domains/native-workspace-sync/rules";

const SQL = path.join(__dirname, "../../src/domains/native-workspace-sync");
const file = fileDatabase();
let db: Db;
beforeAll(() => (db = file.db()));

it("reads each run of the batch by its primary key, and only the batch's rows of the tables its rules read, however many the instance holds, planned young or analyzed, custom or generic", async () => {
  const runs = Array.from({ length: 3000 }, () => randomUUID());
  const leases = runs.map(() => randomUUID());
  const company = randomUUID();
  // Every run references its own lease, destroyed; each has a finalization, a retained
  // recovery and an adoption (all settled): rows the rules read for the batch's runs, and
  // 2,950 of each they must not.
  await poolOf(db).query(
    `WITH r AS (SELECT * FROM unnest($1::uuid[], $3::uuid[]) AS r(id, lease))
     , runs AS (
       INSERT INTO heartbeat_runs (id, company_id, status, finished_at, runner_profile_json)
       SELECT r.id, $2::uuid, 'succeeded', now() - interval '9 days',
              jsonb_build_object('nativeWorkspaceSync', jsonb_build_object(
                'schema', 'paperclip.native-workspace-sync/v1', 'state', 'finalized', 'leaseId', r.lease::text))
         FROM r)
     , l AS (
       INSERT INTO environment_leases (id, company_id, heartbeat_run_id, status, provider)
       SELECT r.lease, $2::uuid, r.id, 'destroyed', 'local' FROM r)
     , f AS (
       INSERT INTO native_run_finalizations (run_id, company_id, issue_id, phase)
       SELECT r.id, $2::uuid, gen_random_uuid(), 'committed' FROM r)
     , w AS (
       INSERT INTO retained_workspace_recoveries (company_id, heartbeat_run_id, status)
       SELECT $2::uuid, r.id, 'completed' FROM r)
     INSERT INTO historical_recovery_adoptions (company_id, heartbeat_run_id, status)
     SELECT $2::uuid, r.id, 'completed' FROM r`,
    [runs, company, leases],
  );
  const batch = runs.slice(1000, 1050);
  const plans = await readsUnderEveryPlan(poolOf(db), {
    text: sqlFile(SQL, "run-state.sql"),
    types: "jsonb, text[]",
    args: `${pg.escapeLiteral(JSON.stringify(batch))}, '{native_run_finalizations}'`,
  });
  for (const { analyzed, mode, read } of plans) {
    expect({ analyzed, mode, read: Object.fromEntries(read) }).toEqual({
      analyzed,
      mode,
      read: {
        heartbeat_runs: batch.length,
        // Each run's lease by its run, and the one its reference names by its key.
        environment_leases: 2 * batch.length,
        native_run_finalizations: batch.length,
        retained_workspace_recoveries: batch.length,
        historical_recovery_adoptions: batch.length,
        issue_recovery_actions: 0,
        reclaim_created_tables: expect.any(Number),
      },
    });
  }
  // Which names are runs, and of which company; a company's first runs among the names.
  for (const [file, types, args] of [
    ["run-owners.sql", "jsonb", pg.escapeLiteral(JSON.stringify(batch))],
    ["company-runs.sql", "jsonb, uuid, int", `${pg.escapeLiteral(JSON.stringify(batch))}, '${company}', 201`],
  ] as const) {
    for (const { analyzed, mode, read } of await readsUnderEveryPlan(poolOf(db), {
      text: sqlFile(SQL, file),
      types,
      args,
    })) {
      expect({ file, analyzed, mode, runs: read.get("heartbeat_runs") }).toEqual({
        file,
        analyzed,
        mode,
        runs: batch.length,
      });
    }
  }
});

it("a company job's folders are the company's first runs in name order: names without a run, other companies' runs and runs gone are passed over, and a run that appears for a name seen without one is found", async () => {
  const [company, other] = [randomUUID(), randomUUID()];
  const ids = Array.from({ length: 60 }, () => randomUUID()).sort();
  // Every third name is the company's run, every third another company's, the rest no run.
  const owner = (i: number) => [company, other, null][i % 3];
  const insert = (list: string[], companyId: string) =>
    poolOf(db).query(
      `INSERT INTO heartbeat_runs (id, company_id, status) SELECT r, $2::uuid, 'running' FROM unnest($1::uuid[]) AS r`,
      [list, companyId],
    );
  await insert(
    ids.filter((_, i) => owner(i) === company),
    company,
  );
  await insert(
    ids.filter((_, i) => owner(i) === other),
    other,
  );
  const mine = ids.filter((_, i) => owner(i) === company);
  const first = async (after: number, limit: number) =>
    (await companyRunsInOrder(db, ids, after === 0 ? null : ids[after - 1]!, company, limit)).map(
      (r) => r.id,
    );

  expect(await first(0, 5)).toEqual(mine.slice(0, 5));
  // Known now: the same answer, from the names up to the fifth run.
  expect(await first(0, 5)).toEqual(mine.slice(0, 5));
  expect(await first(31, 5)).toEqual(mine.filter((id) => id > ids[30]!).slice(0, 5));
  expect(await first(0, 100)).toEqual(mine);
  // Two of the first five runs gone: the next ones take their place.
  await poolOf(db).query("DELETE FROM heartbeat_runs WHERE id = ANY($1::uuid[])", [[mine[1], mine[3]]]);
  expect(await first(0, 5)).toEqual([mine[0], mine[2], ...mine.slice(4, 7)]);
  // A run of the company that appears for a name seen without one is found.
  const late = ids[2]!; // no run so far
  await insert([late], company);
  expect(await first(0, 2)).toEqual([mine[0], late]);
});

it("each of many companies' batches walks exactly its own runs in name order, from the names it knows and those it asks about, on a listing seen before and on a new one", async () => {
  const companies = Array.from({ length: 40 }, () => randomUUID());
  // 400 names: each company's runs interleaved with the others' and with names of no run.
  const ids = Array.from({ length: 400 }, () => randomUUID()).sort();
  const owner = (i: number) => (i % 5 === 4 ? null : companies[i % companies.length]!);
  await poolOf(db).query(
    `INSERT INTO heartbeat_runs (id, company_id, status)
     SELECT r.id, r.company_id, 'running' FROM unnest($1::uuid[], $2::uuid[]) AS r(id, company_id)`,
    [ids.filter((_, i) => owner(i) !== null), ids.flatMap((_, i) => owner(i) ?? [])],
  );
  const walk = async (names: readonly string[], companyId: string, limit: number) => {
    const seen: string[] = [];
    let after: string | null = null;
    for (;;) {
      const batch: string[] = (await companyRunsInOrder(db, names, after, companyId, limit)).map((r) => r.id);
      seen.push(...batch);
      if (batch.length < limit) return seen;
      after = batch.at(-1)!;
    }
  };
  const runsOf = (companyId: string) => ids.filter((_, i) => owner(i) === companyId);
  // The first listing: owners learned batch by batch, company after company.
  for (const companyId of companies) expect(await walk(ids, companyId, 3)).toEqual(runsOf(companyId));
  // A new listing of the same names (a new array), read from what the process knows.
  for (const companyId of companies.slice(0, 5)) {
    expect(await walk([...ids], companyId, 4)).toEqual(runsOf(companyId));
  }
  // A name of no run gets a run of the second company: found on the listing seen before.
  const late = ids[4]!;
  await poolOf(db).query(
    `INSERT INTO heartbeat_runs (id, company_id, status) VALUES ($1::uuid, $2::uuid, 'running')`,
    [late, companies[1]],
  );
  expect(await walk(ids, companies[1]!, 3)).toEqual([...runsOf(companies[1]!), late].sort());
  expect(await walk(ids, companies[4]!, 3)).toEqual(runsOf(companies[4]!));
});

it("the rules blind to a table only Reclaim writes come with the run state; with no run read, every rule not opted out counts as blind", async () => {
  const run = randomUUID();
  await poolOf(db).query(
    `INSERT INTO heartbeat_runs (id, company_id, status) VALUES ($1::uuid, gen_random_uuid(), 'running')`,
    [run],
  );
  const read = (ids: string[], assumeEmpty: SourceRule[] = []) =>
    prismaTransaction(db, (tx) => runStates(tx, ids, assumeEmpty));
  // A test database: every table is Reclaim's mirror, written by whoever uses it.
  const mirrors = await read([run]);
  expect([...mirrors.runs.keys()]).toEqual([run]);
  expect(mirrors.unavailable).toEqual(new Set());
  // A Paperclip database (heartbeat_runs is Paperclip's own) that has environment_leases too:
  // the other tables Reclaim created are blind.
  const paperclips = ["heartbeat_runs", "environment_leases"];
  await poolOf(db).query("DELETE FROM reclaim_created_tables WHERE table_name = ANY($1::text[])", [
    paperclips,
  ]);
  try {
    const paperclip = await read([run]);
    expect(paperclip.unavailable).toEqual(
      new Set(["finalizations", "recovery_actions", "retained_recoveries", "historical_adoptions"]),
    );
    // No run read: nothing tells which tables are written, so every rule counts as blind.
    const none = await read([randomUUID()], ["historical_adoptions"]);
    expect(none.runs.size).toBe(0);
    expect(none.unavailable).toEqual(
      new Set(Object.keys(SOURCES).filter((rule) => rule !== "historical_adoptions")),
    );
  } finally {
    await poolOf(db).query(
      "INSERT INTO reclaim_created_tables (table_name) SELECT unnest($1::text[]) ON CONFLICT DO NOTHING",
      [paperclips],
    );
  }
});
