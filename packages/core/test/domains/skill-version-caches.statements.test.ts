/**
 * Skill version caches: the SQL statements of one company batch do not grow with the cached
 * versions in it (no N+1), dry run and evicting. Each skill's current version is kept, the
 * others are long unused and rebuildable from a saved git recipe. Real job runner (runJob, no
 * BullMQ) on a database and instance of their own, every statement pg sends counted. Until
 * 2026-12-06 only the benchmark (bench/domains/skill-version-caches.ts) checked this.
 */
import { randomUUID } from "node:crypto";
import { batchRunner, statementsTestFile } from "@reclaim/testkit";
import { cachedSkill, DOMAIN, observedSince } from "./skill-version-caches.fixtures";

const scratch = statementsTestFile();

/** One batch of a company with `skills` skills of `versions` cached versions each. */
async function batch(skills: number, versions: number, dryRun: boolean) {
  const { db, root } = await scratch.open();
  const instance = { db, instanceRoot: root };
  const companyId = randomUUID();
  for (let i = 0; i < skills; i++) await cachedSkill(instance, companyId, versions);
  await observedSince(instance, companyId);
  const run = batchRunner(db, root);
  const { report, statements } = await run({ kind: "sweep", domain: DOMAIN, scope: companyId, dryRun });
  expect(report.error).toBeNull();
  return { report, statements };
}

describe("statements per batch", () => {
  it("a dry run of 6 or 50 cached versions sends the same statements", async () => {
    const small = await batch(2, 3, true);
    const large = await batch(10, 5, true);
    expect([small.report.checked, large.report.checked]).toEqual([6, 50]);
    expect(large.report.candidates).toBeGreaterThan(small.report.candidates);
    expect(large.statements).toBe(small.statements);
  });

  it("evicting from 6 or 50 cached versions sends the same statements", async () => {
    const small = await batch(2, 3, false);
    const large = await batch(10, 5, false);
    expect(small.report.removed).toBeGreaterThan(0);
    expect(large.report.removed).toBeGreaterThan(small.report.removed);
    expect(large.statements).toBe(small.statements);
  });
});
