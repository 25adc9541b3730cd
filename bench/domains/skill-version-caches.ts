/**
 * Skill version caches at scale: 10,000 cached versions across 100 companies (10 skills of
 * 10 versions each). Prints entries evaluated per second over a full diagnosis, against a
 * same-run baseline (the bare filesystem survey of the same directories), and the SQL
 * statements of one batch for two batch sizes, dry run and evicting: they must not grow with
 * the batch (no N+1); if they do, the run fails (exit code 1).
 *
 *   npx tsx bench/domains/skill-version-caches.ts
 */
import { randomUUID } from "node:crypto";
import path from "node:path";
import { treeStats } from "@reclaim/core";
import { writeTree } from "@reclaim/testkit";
import { expectFlatQueries, fullPass, openBench, perSecond, type Bench } from "./harness";

const COMPANIES = Number(process.env.BENCH_COMPANIES ?? 100);
const SKILLS = 10;
const VERSIONS = 10;
const old = new Date(Date.now() - 24 * 3600_000);

async function company(
  bench: Bench,
  skills: number,
  versions: number,
): Promise<{ id: string; dirs: string[] }> {
  const id = randomUUID();
  const root = path.join(bench.instanceRoot, "skills", id);
  await writeTree(path.join(root, "__version_access__"), { ".observation-started": "" }, old);
  const rows: { id: string; companyId: string; companySkillId: string; revisionNumber: number }[] = [];
  const dirs: string[] = [];
  for (let s = 0; s < skills; s++) {
    const skill = randomUUID();
    const ids = Array.from({ length: versions }, () => randomUUID());
    ids.forEach((v, i) => rows.push({ id: v, companyId: id, companySkillId: skill, revisionNumber: i + 1 }));
    await bench.db.companySkill.create({ data: { id: skill, companyId: id, currentVersionId: ids.at(-1)! } });
    for (const v of ids) {
      const dir = path.join(root, "__versions__", skill, v);
      await writeTree(
        dir,
        { "SKILL.md": "# skill", "bin/run.sh": "#!/bin/sh\n", "assets/data.bin": 4096 },
        old,
      );
      dirs.push(dir);
    }
  }
  await bench.db.companySkillVersion.createMany({ data: rows });
  // Rebuildable from a saved git recipe, so eviction is what is measured.
  await bench.db.companySkillVersionPackage.createMany({
    data: rows.map((r) => ({
      companyId: id,
      companySkillVersionId: r.id,
      kind: "git_recipe",
      recipe: { repository: "https://example.test/skills.git", commit: "a".repeat(40) },
    })),
  });
  // Some pins, so the pin joins have rows to look at.
  const run = await bench.db.heartbeatRun.create({ data: { companyId: id, status: "running" } });
  await bench.db.companySkillRunPin.create({
    data: {
      companyId: id,
      heartbeatRunId: run.id,
      companySkillId: rows[0]!.companySkillId,
      companySkillVersionId: rows[0]!.id,
    },
  });
  return { id, dirs };
}

async function main() {
  const bench = await openBench();
  try {
    process.stdout.write(
      `setting up ${COMPANIES * SKILLS * VERSIONS} versions across ${COMPANIES} companies...\n`,
    );
    const companies = [];
    for (let i = 0; i < COMPANIES; i++) companies.push(await company(bench, SKILLS, VERSIONS));

    const baselineStart = process.hrtime.bigint();
    let surveyed = 0;
    for (const c of companies)
      for (const dir of c.dirs) surveyed += (await treeStats(dir)).entries > 0 ? 1 : 0;
    const baselineMs = Number(process.hrtime.bigint() - baselineStart) / 1e6;

    let checked = 0;
    let ms = 0;
    let batches = 0;
    for (const c of companies) {
      const pass = await fullPass(bench, "skill-version-caches", c.id, true);
      checked += pass.checked;
      ms += pass.ms;
      batches += pass.batches;
    }
    const rate = perSecond(checked, ms);
    const baseline = perSecond(surveyed, baselineMs);
    process.stdout.write(
      `diagnosis (dry run): ${checked} entries in ${batches} batches, ${ms.toFixed(0)} ms: ${rate} entries/s\n` +
        `baseline (filesystem survey only): ${baseline} entries/s; ratio ${(rate / baseline).toFixed(2)}\n`,
    );

    // Queries per batch: a batch of 10 versions and one of 50 (the limit), as a dry-run
    // diagnosis and evicting for real. The statements must not grow with the batch.
    for (const dryRun of [true, false]) {
      const batches = [];
      for (const size of [10, 50]) {
        const c = await company(bench, 1, size);
        const { report, queries } = await bench.run("skill-version-caches", c.id, { dryRun });
        if (report.error) throw new Error(report.error);
        batches.push({ entries: report.checked, queries });
        process.stdout.write(
          `${dryRun ? "dry-run" : "evicting"} batch of ${report.checked} versions (${report.candidates} candidates, ${report.removed} evicted): ${queries} SQL statements (job pipeline included)\n`,
        );
      }
      expectFlatQueries(dryRun ? "dry run" : "evicting", batches);
    }
  } finally {
    await bench.close();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
