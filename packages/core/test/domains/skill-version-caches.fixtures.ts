/** Fixtures for skill version cache tests: real cache directories, real rows. */
import { randomUUID } from "node:crypto";
import { mkdir, utimes, writeFile } from "node:fs/promises";
import path from "node:path";
import { writeTree, type Stack } from "@reclaim/testkit";
import { sweepDomain } from "@reclaim/testkit";

export const DOMAIN = "skill-version-caches";
/** What the fixtures need of an instance: also what a stack's `seed` gets before it starts. */
export type Instance = Pick<Stack, "db" | "instanceRoot">;
const MINUTE = 60_000;

export const minutesAgo = (minutes: number) => new Date(Date.now() - minutes * MINUTE);

export function companyRoot(stack: Instance, companyId: string): string {
  return path.join(stack.instanceRoot, "skills", companyId);
}

export function versionDir(stack: Instance, companyId: string, skillId: string, versionId: string): string {
  return path.join(companyRoot(stack, companyId), "__versions__", skillId, versionId);
}

export const versionId = (companyId: string, skillId: string, version: string) =>
  `skills/${companyId}/__versions__/${skillId}/${version}`;

/** A materialized version (SKILL.md, a script, a 32 KiB asset), materialized `ageMinutes` ago. */
export async function makeVersion(
  stack: Instance,
  companyId: string,
  skillId: string,
  version: string,
  ageMinutes = 180,
) {
  const dir = versionDir(stack, companyId, skillId, version);
  await writeTree(
    dir,
    { "SKILL.md": "# skill", "bin/run.sh": "#!/bin/sh\n", "assets/data.bin": 32 * 1024 },
    minutesAgo(ageMinutes),
  );
  return dir;
}

/** Paperclip's last-use record for a version: its modification time is the last use. */
export async function recordUse(
  stack: Instance,
  companyId: string,
  skillId: string,
  version: string,
  at: Date,
) {
  const file = path.join(companyRoot(stack, companyId), "__version_access__", skillId, version);
  await mkdir(path.dirname(file), { recursive: true });
  await writeFile(file, "");
  await utimes(file, at, at);
}

/** The installation has been observed for long enough (a marker older than any grace window used here). */
export async function observedSince(stack: Instance, companyId: string, at = minutesAgo(24 * 60)) {
  const file = path.join(companyRoot(stack, companyId), "__version_access__", ".observation-started");
  await mkdir(path.dirname(file), { recursive: true });
  await writeFile(file, "");
  await utimes(file, at, at);
}

export interface SkillFixture {
  companyId: string;
  skillId: string;
  /** Version ids, oldest revision first. */
  versions: string[];
}

/** A git package's saved recipe: what makes a version rebuildable unless a test says otherwise. */
export const GIT_RECIPE = { repository: "https://example.test/skills.git", commit: "a".repeat(40) };

/**
 * A skill with `count` versions (revision 1..count); `current` is the index of the current
 * one, or null. Each version is rebuildable from a saved git recipe unless `rebuildable` is
 * false (no company_skill_version_packages row).
 */
export async function insertSkill(
  stack: Instance,
  companyId: string,
  count: number,
  current: number | null = count - 1,
  rebuildable = true,
): Promise<SkillFixture> {
  const skillId = randomUUID();
  const versions = Array.from({ length: count }, () => randomUUID());
  await stack.db.companySkillVersion.createMany({
    data: versions.map((id, i) => ({ id, companyId, companySkillId: skillId, revisionNumber: i + 1 })),
  });
  if (rebuildable)
    await stack.db.companySkillVersionPackage.createMany({
      data: versions.map((id) => ({
        companyId,
        companySkillVersionId: id,
        kind: "git_recipe",
        recipe: GIT_RECIPE,
      })),
    });
  await stack.db.companySkill.create({
    data: { id: skillId, companyId, currentVersionId: current === null ? null : versions[current]! },
  });
  return { companyId, skillId, versions };
}

/** Rows plus a materialized, long-unused cache for every version. */
export async function cachedSkill(
  stack: Instance,
  companyId: string,
  count: number,
  current: number | null = count - 1,
) {
  const skill = await insertSkill(stack, companyId, count, current);
  for (const v of skill.versions) await makeVersion(stack, companyId, skill.skillId, v);
  return skill;
}

export async function insertRun(stack: Instance, companyId: string, status: string): Promise<string> {
  const run = await stack.db.heartbeatRun.create({
    data: {
      companyId,
      status,
      finishedAt: ["queued", "running", "scheduled_retry"].includes(status) ? null : minutesAgo(5),
    },
  });
  return run.id;
}

export function sweep(stack: Stack, companyId: string | null, body: Record<string, unknown> = {}) {
  return sweepDomain(stack, DOMAIN, companyId, body);
}

export type Report = Awaited<ReturnType<typeof sweep>>;

/** The final outcome of a version in a report ("removed", "candidate" or the skip reason). */
export function outcomeOf(
  report: Report,
  companyId: string,
  skillId: string,
  version: string,
): string | undefined {
  const entry = report.entries.filter((e) => e.id === versionId(companyId, skillId, version)).at(-1);
  return entry?.outcome === "skipped" || entry?.outcome === "noted" ? entry.reason : entry?.outcome;
}
