/**
 * Skill version caches: below the configured top folder (`<instance>/skills`) nothing is
 * followed, read through or written through. Every level of the tree (company directory,
 * `__versions__`, a skill directory, a version, a `.trash-*` leftover, `__version_access__`
 * and a skill's access folder) is planted as a symlink to a directory outside the instance
 * holding entries shaped like the real ones, with rows that would make them evictable: the
 * sweeps leave it exactly as it was (listing, times, contents; atimes show nothing read) and
 * the report names the link with `symlink`.
 */
import { randomUUID } from "node:crypto";
import { existsSync } from "node:fs";
import path from "node:path";
import { outsideDirs, startStack, type Stack } from "@reclaim/testkit";
import {
  companyRoot,
  insertSkill,
  makeVersion,
  minutesAgo,
  observedSince,
  sweep,
  type Report,
} from "./skill-version-caches.fixtures";

let stack: Stack;
beforeAll(async () => {
  stack = await startStack();
});
afterAll(async () => {
  await stack?.stop();
  await targets.removeAll();
});

const OLD = minutesAgo(24 * 60);
const targets = outsideDirs(OLD);
const plant = targets.plant;
const CACHE = { "SKILL.md": "# skill", "bin/run.sh": "#!/bin/sh\n", "assets/data.bin": 8 * 1024 };

/** `files` for a version cache `<prefix><version>/...`. */
const cacheFiles = (prefix: string, versions: string[]) =>
  Object.fromEntries(
    versions.flatMap((v) => Object.entries(CACHE).map(([f, c]) => [`${prefix}${v}/${f}`, c])),
  );

const reasonOf = (report: Report, id: string) =>
  report.entries.filter((e) => e.id === id).map((e) => e.reason ?? e.outcome);

/** Two real (non-dry) company sweeps: the first may start observation, the second evict. */
async function sweepTwice(companyId: string): Promise<Report[]> {
  const first = await sweep(stack, companyId);
  const second = await sweep(stack, companyId);
  for (const report of [first, second]) expect(report.error).toBeNull();
  return [first, second];
}

describe("nothing below skills/ is followed through a symlink", () => {
  it("a company directory that is a symlink: nothing in its target is read, written or evicted", async () => {
    // One target with an observation marker (its versions are due), one without (a sweep
    // that followed the link would start observation there).
    for (const marker of [true, false]) {
      const c = randomUUID();
      const skill = await insertSkill(stack, c, 3);
      const stale = skill.versions.slice(0, 2);
      const outside = await plant(companyRoot(stack, c), {
        ...cacheFiles(`__versions__/${skill.skillId}/`, stale),
        [`__version_access__/${skill.skillId}/${stale[0]}`]: "",
        ...(marker ? { "__version_access__/.observation-started": "" } : {}),
      });
      const reports = await sweepTwice(c);
      expect(await outside.changes()).toEqual([]);
      for (const report of reports) {
        expect(reasonOf(report, `skills/${c}`)).toEqual(["symlink"]);
        expect(report.checked).toBe(0);
      }
    }
  });

  it("__versions__ that is a symlink: the versions in its target stay", async () => {
    const c = randomUUID();
    await observedSince(stack, c);
    const skill = await insertSkill(stack, c, 3);
    const outside = await plant(
      path.join(companyRoot(stack, c), "__versions__"),
      cacheFiles(`${skill.skillId}/`, skill.versions.slice(0, 2)),
    );
    const reports = await sweepTwice(c);
    expect(await outside.changes()).toEqual([]);
    for (const report of reports) {
      expect(reasonOf(report, `skills/${c}/__versions__`)).toEqual(["symlink"]);
      expect(report.checked).toBe(0);
    }
  });

  it("a skill directory that is a symlink: its target's versions and trash stay", async () => {
    const c = randomUUID();
    await observedSince(stack, c);
    const skill = await insertSkill(stack, c, 3);
    const real = await insertSkill(stack, c, 2);
    await makeVersion(stack, c, real.skillId, real.versions[0]!);
    const outside = await plant(path.join(companyRoot(stack, c), "__versions__", skill.skillId), {
      ...cacheFiles("", skill.versions.slice(0, 2)),
      [`.trash-${randomUUID()}/SKILL.md`]: "# trash",
    });
    const reports = await sweepTwice(c);
    expect(await outside.changes()).toEqual([]);
    for (const report of reports) {
      expect(reasonOf(report, `skills/${c}/__versions__/${skill.skillId}`)).toEqual(["symlink"]);
    }
  });

  it("a version and a .trash-* leftover that are symlinks stay, and so does what they point at", async () => {
    const c = randomUUID();
    await observedSince(stack, c);
    const skill = await insertSkill(stack, c, 3);
    const versions = path.join(companyRoot(stack, c), "__versions__", skill.skillId);
    const version = await plant(path.join(versions, skill.versions[0]!), CACHE);
    const trash = `.trash-${randomUUID()}`;
    const leftover = await plant(path.join(versions, trash), CACHE);
    const reports = await sweepTwice(c);
    expect(await version.changes()).toEqual([]);
    expect(await leftover.changes()).toEqual([]);
    for (const report of reports) {
      expect(reasonOf(report, `skills/${c}/__versions__/${skill.skillId}/${skill.versions[0]}`)).toEqual([
        "symlink",
      ]);
      expect(reasonOf(report, `skills/${c}/__versions__/${skill.skillId}/${trash}`)).toEqual(["symlink"]);
    }
  });

  it("__version_access__ that is a symlink: no marker or record is read or written there, and the company's caches stay", async () => {
    const c = randomUUID();
    const skill = await insertSkill(stack, c, 3);
    for (const v of skill.versions) await makeVersion(stack, c, skill.skillId, v);
    const outside = await plant(path.join(companyRoot(stack, c), "__version_access__"), {
      [`${skill.skillId}/${skill.versions[0]}`]: "",
    });
    const reports = await sweepTwice(c);
    expect(await outside.changes()).toEqual([]);
    for (const report of reports) {
      expect(reasonOf(report, `skills/${c}/__version_access__`)).toEqual(["symlink"]);
      expect(report.removed).toBe(0);
    }
    for (const v of skill.versions)
      expect(existsSync(path.join(companyRoot(stack, c), "__versions__", skill.skillId, v))).toBe(true);
  });

  it("a skill's access folder that is a symlink: its records are not read and the skill's caches stay", async () => {
    const c = randomUUID();
    await observedSince(stack, c);
    const skill = await insertSkill(stack, c, 3);
    for (const v of skill.versions) await makeVersion(stack, c, skill.skillId, v);
    const outside = await plant(path.join(companyRoot(stack, c), "__version_access__", skill.skillId), {
      [skill.versions[0]!]: "",
      [skill.versions[1]!]: "",
    });
    const reports = await sweepTwice(c);
    expect(await outside.changes()).toEqual([]);
    for (const report of reports) {
      expect(reasonOf(report, `skills/${c}/__version_access__/${skill.skillId}`)).toEqual(["symlink"]);
      expect(report.removed).toBe(0);
    }
    for (const v of skill.versions)
      expect(existsSync(path.join(companyRoot(stack, c), "__versions__", skill.skillId, v))).toBe(true);
  });
});
