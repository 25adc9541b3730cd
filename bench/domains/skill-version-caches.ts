/**
 * Skill version caches at scale: 10,000 cached versions across 100 companies (10 skills of
 * 10 versions each, all eligible but each skill's current version and one pinned version per
 * company; each skill has a last-use record of its current version only, so the others' records
 * are looked for and missing, as on an instance that resolves its current versions). Prints
 * entries evaluated per second over two full passes through the job pipeline, each against a
 * baseline measured in the same run:
 *   - dry run (a full diagnosis) vs the bare filesystem survey of the same directories
 *     (treeStats: what the rules read of each cache: kind, identity, own mtime, bytes);
 *   - evicting (the caches really renamed to `.trash-*` and deleted) vs the bare survey plus
 *     the bare removal (`rm -r`) of the same caches in a copy of the same trees: the least
 *     filesystem work the rule needs.
 * The pipeline runs two companies at once, as a worker process runs the domain's company jobs
 * (RECLAIM_WORKER_CONCURRENCY's default; until 2026-12-05 one company after another), each
 * company's batches one after another; the baselines survey one cache after another. The dry
 * run also prints a reference: the same survey, as many caches at once as the domain surveys
 * (LIMITS.fsWidth). Baseline and pipeline alternate two companies by two (order flipped every
 * time), so load from other processes on the machine falls on both alike. Then the SQL statements of one
 * batch for two batch sizes, dry run and evicting: they must not grow with the batch (no
 * N+1); if they do, or the evicting pass does not evict exactly the eligible caches, the run
 * fails (exit code 1). Last, the ceiling of a dry-run batch (harness.ts dryBatchCeiling): its
 * statements alone, replayed on a plain connection, against its bare walks.
 *
 *   npx tsx bench/domains/skill-version-caches.ts
 *   BENCH_COMPANIES=20 BENCH_CPU_PROFILE=/tmp/svc npx tsx bench/domains/skill-version-caches.ts
 *     (a CPU profile of each measured pass only, setup left out: support.ts profiled)
 */
import { execFile } from "node:child_process";
import { randomUUID } from "node:crypto";
import { access, rm } from "node:fs/promises";
import { loadavg } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { treeStats, workerOptions } from "@reclaim/core";
import { writeTree } from "@reclaim/testkit";
import { LIMITS } from "../../packages/core/src/domains/skill-version-caches/config";
import { mapInOrder } from "../../packages/core/src/fs/in-order";
import { profiled } from "../support";
import {
  dryBatchCeiling,
  expectFlatQueries,
  fullPass,
  openBench,
  perSecond,
  printCeiling,
  type Bench,
} from "./harness";

const COMPANIES = Number(process.env.BENCH_COMPANIES ?? 100);
/** Company jobs of the domain a worker process runs at once (RECLAIM_WORKER_CONCURRENCY's default). */
const JOBS_AT_ONCE = workerOptions.concurrency.read({});
const SKILLS = 10;
const VERSIONS = 10;
const old = new Date(Date.now() - 24 * 3600_000);

interface Company {
  id: string;
  /** Every version directory. */
  dirs: string[];
  /** The ones an evicting pass must evict (not current, not pinned). */
  evictable: string[];
}

async function company(bench: Bench, skills: number, versions: number): Promise<Company> {
  const id = randomUUID();
  const root = path.join(bench.instanceRoot, "skills", id);
  await writeTree(path.join(root, "__version_access__"), { ".observation-started": "" }, old);
  const rows: { id: string; companyId: string; companySkillId: string; revisionNumber: number }[] = [];
  const dirs: string[] = [];
  const evictable: string[] = [];
  for (let s = 0; s < skills; s++) {
    const skill = randomUUID();
    const ids = Array.from({ length: versions }, () => randomUUID());
    ids.forEach((v, i) => rows.push({ id: v, companyId: id, companySkillId: skill, revisionNumber: i + 1 }));
    await bench.db.companySkill.create({ data: { id: skill, companyId: id, currentVersionId: ids.at(-1)! } });
    // Paperclip records a version's last use when it resolves it: here the current version's,
    // a day ago, so every other version's record is looked for and not found.
    await writeTree(path.join(root, "__version_access__", skill), { [ids.at(-1)!]: "" }, old);
    for (const v of ids) {
      const dir = path.join(root, "__versions__", skill, v);
      await writeTree(
        dir,
        { "SKILL.md": "# skill", "bin/run.sh": "#!/bin/sh\n", "assets/data.bin": 4096 },
        old,
      );
      dirs.push(dir);
      // The current version (the last) and the pinned one (the company's first) stay.
      if (v !== ids.at(-1) && v !== rows[0]!.id) evictable.push(dir);
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
  return { id, dirs, evictable };
}

const elapsedMs = (start: bigint) => Number(process.hrtime.bigint() - start) / 1e6;

/** The bare survey: what the rules read of each cache, nothing else, one cache after another. */
async function survey(dirs: string[]): Promise<number> {
  let surveyed = 0;
  for (const dir of dirs) surveyed += (await treeStats(dir)).entries > 0 ? 1 : 0;
  return surveyed;
}

/** The same survey, as many caches at once as the domain surveys (LIMITS.fsWidth). */
async function surveyWide(dirs: string[]): Promise<number> {
  const stats = await mapInOrder(dirs, LIMITS.fsWidth, (dir) => treeStats(dir));
  return stats.filter((s) => s.entries > 0).length;
}

interface Pass {
  entries: number;
  ms: number;
  batches: number;
  baselineEntries: number;
  baselineMs: number;
  referenceEntries: number;
  referenceMs: number;
}

/**
 * One pass over every company, the pipeline and its baseline alternating group by group: the
 * pipeline runs the companies of a group at once, as many as a worker process runs jobs of a
 * domain at once (RECLAIM_WORKER_CONCURRENCY's default), each company's batches one after
 * another; the baseline surveys them one after another. `baseline(c)` returns the entries it
 * surveyed.
 */
async function measure(
  companies: Company[],
  pipeline: (c: Company) => Promise<{ checked: number; batches: number }>,
  baseline: (c: Company) => Promise<number>,
  reference?: (c: Company) => Promise<number>,
): Promise<Pass> {
  const pass: Pass = {
    entries: 0,
    ms: 0,
    batches: 0,
    baselineEntries: 0,
    baselineMs: 0,
    referenceEntries: 0,
    referenceMs: 0,
  };
  for (let i = 0; i * JOBS_AT_ONCE < companies.length; i++) {
    const group = companies.slice(i * JOBS_AT_ONCE, (i + 1) * JOBS_AT_ONCE);
    const runBaseline = async () => {
      for (const c of group) {
        let start = process.hrtime.bigint();
        pass.baselineEntries += await baseline(c);
        pass.baselineMs += elapsedMs(start);
        if (!reference) continue;
        start = process.hrtime.bigint();
        pass.referenceEntries += await reference(c);
        pass.referenceMs += elapsedMs(start);
      }
    };
    if (i % 2 === 0) await runBaseline();
    const start = process.hrtime.bigint();
    const runs = await Promise.all(group.map(pipeline));
    pass.ms += elapsedMs(start);
    for (const run of runs) {
      pass.entries += run.checked;
      pass.batches += run.batches;
    }
    if (i % 2 === 1) await runBaseline();
  }
  return pass;
}

function print(what: string, baselineWhat: string, pass: Pass): number {
  const rate = perSecond(pass.entries, pass.ms);
  const baseline = perSecond(pass.baselineEntries, pass.baselineMs);
  const ratio = rate / baseline;
  process.stdout.write(
    `${what}: ${pass.entries} entries in ${pass.batches} batches, ${pass.ms.toFixed(0)} ms: ${rate} entries/s\n` +
      `  baseline (${baselineWhat}): ${pass.baselineEntries} entries, ${pass.baselineMs.toFixed(0)} ms: ${baseline} entries/s; ratio ${ratio.toFixed(2)}\n`,
  );
  if (pass.referenceEntries > 0) {
    const reference = perSecond(pass.referenceEntries, pass.referenceMs);
    process.stdout.write(
      `  reference (the same survey, ${LIMITS.fsWidth} caches at once as the domain surveys them): ${reference} entries/s; ratio ${(rate / reference).toFixed(2)}\n`,
    );
  }
  return ratio;
}

const load = () =>
  loadavg()
    .map((l) => l.toFixed(2))
    .join(", ");

async function exists(at: string): Promise<boolean> {
  return access(at).then(
    () => true,
    () => false,
  );
}

async function main() {
  const bench = await openBench();
  const copyRoot = `${bench.instanceRoot}-baseline`;
  try {
    process.stdout.write(
      `setting up ${COMPANIES * SKILLS * VERSIONS} versions across ${COMPANIES} companies...\n`,
    );
    const companies: Company[] = [];
    for (let i = 0; i < COMPANIES; i++) companies.push(await company(bench, SKILLS, VERSIONS));
    // The evicting baseline removes caches from a copy of the same trees (mtimes kept).
    await promisify(execFile)("cp", ["-a", bench.instanceRoot, copyRoot]);
    const inCopy = (dir: string) => path.join(copyRoot, path.relative(bench.instanceRoot, dir));

    process.stdout.write(`load average before the passes: ${load()}\n`);
    const dry = await profiled("skill-version-caches-dry", () =>
      measure(
        companies,
        (c) => fullPass(bench, "skill-version-caches", c.id, true),
        (c) => survey(c.dirs),
        // A reference beside the baseline: the same survey at the domain's width.
        (c) => surveyWide(c.dirs),
      ),
    );
    process.stdout.write(`load average after the dry run: ${load()}\n`);
    const evicting = await profiled("skill-version-caches-evicting", () =>
      measure(
        companies,
        (c) => fullPass(bench, "skill-version-caches", c.id, false),
        async (c) => {
          const surveyed = await survey(c.dirs.map(inCopy));
          for (const dir of c.evictable) await rm(inCopy(dir), { recursive: true });
          return surveyed;
        },
      ),
    );
    process.stdout.write(`load average after the evicting pass: ${load()}\n`);

    print("dry run (diagnosis)", "filesystem survey only", dry);
    print("evicting", "filesystem survey + rm -r of the same caches", evicting);

    // The evicting pass evicted exactly the eligible caches, nothing else.
    let wrong = 0;
    for (const c of companies) {
      const evictable = new Set(c.evictable);
      for (const dir of c.dirs) if ((await exists(dir)) === evictable.has(dir)) wrong += 1;
    }
    const expected = companies.reduce((n, c) => n + c.evictable.length, 0);
    process.stdout.write(
      `evicted: ${wrong === 0 ? `all ${expected} eligible caches, nothing else` : `FAILED: ${wrong} caches wrong`}\n`,
    );
    if (wrong > 0) process.exitCode = 1;

    // Queries per batch: a batch of 10 versions and one of 50 (the limit), as a dry-run
    // diagnosis and evicting for real. The statements must not grow with the batch.
    for (const dryRun of [true, false]) {
      const batches = [];
      for (const size of [10, 50]) {
        const c = await company(bench, 1, size);
        const { report, queries } = await bench.run("skill-version-caches", c.id, { dryRun, counting: true });
        if (report.error) throw new Error(report.error);
        batches.push({ entries: report.checked, queries });
        process.stdout.write(
          `${dryRun ? "dry-run" : "evicting"} batch of ${report.checked} versions (${report.candidates} candidates, ${report.removed} evicted): ${queries} SQL statements (job pipeline included)\n`,
        );
      }
      expectFlatQueries(dryRun ? "dry run" : "evicting", batches);
    }
    // What one dry-run batch (50 versions: the limit) could reach with its statements alone.
    const c = await company(bench, SKILLS, VERSIONS);
    printCeiling("skill version caches", await dryBatchCeiling(bench, "skill-version-caches", c.id));
  } finally {
    await rm(copyRoot, { recursive: true, force: true });
    await bench.close();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
