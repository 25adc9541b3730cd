/**
 * The batch's facts (version-facts.sql) are read by key: each entry's version and package by
 * their indexes, whatever the number of versions and packages of the instance, under custom
 * and generic plans, on a database whose tables were never analyzed (a young one, as a fresh
 * install's) and on an analyzed one. A join could otherwise be planned as a scan of every
 * version and package of the instance for each batch (bench/domains/skill-version-caches.ts:
 * 2.4 ms of 13.5 per batch of 50 at 10,000 versions). The active runs are read only through the
 * run pins that name them: with none (Paperclip records none), not one run of the company's
 * history is read. Real PostgreSQL.
 */
import { randomUUID } from "node:crypto";
import path from "node:path";
import pg from "pg";
import { poolOf, sqlFile, type Db } from "@reclaim/core";
import { fileDatabase, readsUnderEveryPlan } from "@reclaim/testkit";

const SQL = path.join(__dirname, "../../src/domains/skill-version-caches");
const file = fileDatabase();
let db: Db;
beforeAll(() => (db = file.db()));

/** `companies` companies of 10 skills x 10 versions, each version with a package; per company its refs. */
async function seed(
  companies: number,
): Promise<{ companyId: string; refs: { skillId: string; versionId: string }[] }[]> {
  const pool = poolOf(db);
  const out = [];
  for (let c = 0; c < companies; c++) {
    const companyId = randomUUID();
    const refs = [];
    for (let s = 0; s < 10; s++) {
      const skillId = randomUUID();
      const versions = Array.from({ length: 10 }, () => randomUUID());
      await pool.query(
        `INSERT INTO company_skills (id, company_id, current_version_id) VALUES ($1, $2, $3)`,
        [skillId, companyId, versions.at(-1)],
      );
      await pool.query(
        `INSERT INTO company_skill_versions (id, company_id, company_skill_id, revision_number)
         SELECT v, $1, $2, n FROM unnest($3::uuid[]) WITH ORDINALITY AS u(v, n)`,
        [companyId, skillId, versions],
      );
      await pool.query(
        `INSERT INTO company_skill_version_packages (company_id, company_skill_version_id, kind, recipe)
         SELECT $1, v, 'git_recipe', '{}'::jsonb FROM unnest($2::uuid[]) AS v`,
        [companyId, versions],
      );
      refs.push(...versions.map((versionId) => ({ skillId, versionId })));
    }
    out.push({ companyId, refs });
  }
  return out;
}

it("reads each entry's version and package by key, however many the instance holds, planned young or analyzed, custom or generic", async () => {
  const companies = await seed(30); // 3,000 versions and packages
  const batch = companies[7]!;
  const refs = batch.refs.slice(0, 50);
  const plans = await readsUnderEveryPlan(poolOf(db), {
    text: sqlFile(SQL, "version-facts.sql"),
    types: "text, jsonb, int, text[]",
    args: `${pg.escapeLiteral(batch.companyId)}, ${pg.escapeLiteral(JSON.stringify(refs))}, 3, '{company_skill_run_pins}'`,
    analyze: "ANALYZE company_skill_versions, company_skill_version_packages, company_skills",
  });
  for (const { analyzed, mode, read } of plans) {
    expect({
      analyzed,
      mode,
      versions: read.get("company_skill_versions")! <= 50 + refs.length * 10,
    }).toEqual({
      analyzed,
      mode,
      versions: true,
    });
    // One package per entry, each found by its key.
    expect({ analyzed, mode, packages: read.get("company_skill_version_packages") }).toEqual({
      analyzed,
      mode,
      packages: refs.length,
    });
  }
});

it("reads no run of the company's history when no run pins it (Paperclip records none), planned young or analyzed, custom or generic", async () => {
  const [batch] = await seed(1);
  // 10,000 runs of the company, ten of them still running; no run pins.
  await poolOf(db).query(
    `INSERT INTO heartbeat_runs (company_id, status, created_at, finished_at)
     SELECT $1::uuid, CASE WHEN g <= 10 THEN 'running' ELSE 'succeeded' END, now(), now()
       FROM generate_series(1, 10000) AS g`,
    [batch!.companyId],
  );
  const plans = await readsUnderEveryPlan(poolOf(db), {
    text: sqlFile(SQL, "version-facts.sql"),
    types: "text, jsonb, int, text[]",
    args: `${pg.escapeLiteral(batch!.companyId)}, ${pg.escapeLiteral(JSON.stringify(batch!.refs.slice(0, 50)))}, 3, '{company_skill_run_pins}'`,
  });
  for (const { analyzed, mode, read } of plans) {
    expect({ analyzed, mode, runs: read.get("heartbeat_runs") ?? 0 }).toEqual({ analyzed, mode, runs: 0 });
  }
});
