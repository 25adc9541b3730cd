/**
 * Skill version caches: each eviction rule of the spec, on real cache directories and real
 * rows, through the scheduler API and a real BullMQ worker.
 */
import { randomUUID } from "node:crypto";
import { existsSync } from "node:fs";
import { mkdir, readdir, symlink, writeFile } from "node:fs/promises";
import path from "node:path";
import { createLogger, INSTANCE_SCOPE, treeStats } from "@reclaim/core";
import { startStack, writeTree, type Stack } from "@reclaim/testkit";
import {
  cachedSkill,
  companyRoot,
  DOMAIN,
  insertRun,
  insertSkill,
  makeVersion,
  minutesAgo,
  observedSince,
  outcomeOf,
  recordUse,
  sweep,
  versionDir,
  versionId,
  type Report,
  type SkillFixture,
} from "./skill-version-caches.fixtures";

let stack: Stack;
beforeAll(async () => {
  stack = await startStack();
});
afterAll(async () => stack?.stop());

/** A company whose installation has been observed for a day (its records are authoritative). */
async function company(): Promise<string> {
  const c = randomUUID();
  await observedSince(stack, c);
  return c;
}

async function trashIn(c: string, skillId: string): Promise<string[]> {
  return (await readdir(path.join(companyRoot(stack, c), "__versions__", skillId))).filter((n) =>
    n.startsWith(".trash-"),
  );
}

describe("a cached version is evicted", () => {
  it("when it is not current and unused for longer than the grace window, reporting allocated bytes", async () => {
    const c = await company();
    const skill = await cachedSkill(stack, c, 3);
    const [old1, old2] = skill.versions as [string, string, string];
    await recordUse(stack, c, skill.skillId, old1, minutesAgo(61));
    const allocated = (await treeStats(versionDir(stack, c, skill.skillId, old1))).allocatedBytes;
    const report = await sweep(stack, c);
    expect(outcomeOf(report, c, skill.skillId, old1)).toBe("removed");
    expect(outcomeOf(report, c, skill.skillId, old2)).toBe("removed");
    expect(report).toMatchObject({ checked: 3, candidates: 2, removed: 2 });
    expect(report.candidateBytes).toBe(report.reclaimedBytes);
    // Allocated bytes (st_blocks), not the 32 KiB of file content.
    expect(report.reclaimedBytes).toBe(2 * allocated);
    expect(existsSync(versionDir(stack, c, skill.skillId, old1))).toBe(false);
    expect(await trashIn(c, skill.skillId)).toEqual([]);
  });

  it("when its version row is gone (a deleted skill) and it went unused for the grace window", async () => {
    const c = await company();
    const skillId = randomUUID();
    const version = randomUUID();
    await makeVersion(stack, c, skillId, version);
    const report = await sweep(stack, c);
    expect(outcomeOf(report, c, skillId, version)).toBe("removed");
    expect(report.entries.find((e) => e.outcome === "candidate")?.reason).toBe("no_version_row");
  });
});

describe("a cached version is kept", () => {
  it("while its version row belongs to another skill or another company", async () => {
    const c = await company();
    const skill = await insertSkill(stack, c, 2);
    const elsewhere = randomUUID();
    await makeVersion(stack, c, elsewhere, skill.versions[0]!);
    const foreign = await insertSkill(stack, randomUUID(), 2);
    await makeVersion(stack, c, foreign.skillId, foreign.versions[0]!);
    const report = await sweep(stack, c);
    expect(outcomeOf(report, c, elsewhere, skill.versions[0]!)).toBe("version_row_mismatch");
    expect(outcomeOf(report, c, foreign.skillId, foreign.versions[0]!)).toBe("version_row_mismatch");
  });

  it("while it is its skill's current version", async () => {
    const c = await company();
    const skill = await cachedSkill(stack, c, 1);
    expect(outcomeOf(await sweep(stack, c), c, skill.skillId, skill.versions[0]!)).toBe("current_version");
  });

  it.each(["queued", "scheduled_retry", "running"])(
    "while a %s run pins it (a finished run's pin does not keep it)",
    async (status) => {
      const c = await company();
      const skill = await cachedSkill(stack, c, 3);
      const [pinned, released] = skill.versions as [string, string];
      await stack.db.companySkillRunPin.create({
        data: {
          companyId: c,
          heartbeatRunId: await insertRun(stack, c, status),
          companySkillId: skill.skillId,
          companySkillVersionId: pinned,
        },
      });
      await stack.db.companySkillRunPin.create({
        data: {
          companyId: c,
          heartbeatRunId: await insertRun(stack, c, "succeeded"),
          companySkillId: skill.skillId,
          companySkillVersionId: released,
        },
      });
      const report = await sweep(stack, c);
      expect(outcomeOf(report, c, skill.skillId, pinned)).toBe("active_run_pin");
      expect(outcomeOf(report, c, skill.skillId, released)).toBe("removed");
    },
  );

  it("while an unsettled recovery pins it (a settled one does not keep it)", async () => {
    const c = await company();
    const skill = await cachedSkill(stack, c, 3);
    const [pinned, settled] = skill.versions as [string, string];
    await stack.db.companySkillRecoveryPin.create({
      data: { companyId: c, companySkillId: skill.skillId, companySkillVersionId: pinned },
    });
    await stack.db.companySkillRecoveryPin.create({
      data: {
        companyId: c,
        companySkillId: skill.skillId,
        companySkillVersionId: settled,
        status: "settled",
        settledAt: minutesAgo(10),
      },
    });
    const report = await sweep(stack, c);
    expect(outcomeOf(report, c, skill.skillId, pinned)).toBe("recovery_pin_unsettled");
    expect(outcomeOf(report, c, skill.skillId, settled)).toBe("removed");
  });

  it("while an agent pins it explicitly", async () => {
    const c = await company();
    const skill = await cachedSkill(stack, c, 2);
    const pinned = skill.versions[0]!;
    await stack.db.companySkillAgentPin.create({
      data: {
        companyId: c,
        agentId: randomUUID(),
        companySkillId: skill.skillId,
        companySkillVersionId: pinned,
      },
    });
    expect(outcomeOf(await sweep(stack, c), c, skill.skillId, pinned)).toBe("agent_pin");
  });

  it("every cache of the company, while an active run's version selection is unknown; other companies are unaffected", async () => {
    const c = await company();
    const other = await company();
    const skill = await cachedSkill(stack, c, 2);
    const elsewhere = await cachedSkill(stack, other, 2);
    const run = await insertRun(stack, c, "running");
    await stack.db.companySkillRunPin.create({
      data: { companyId: c, heartbeatRunId: run, companySkillId: randomUUID() },
    });
    const report = await sweep(stack, c);
    for (const v of skill.versions)
      expect(outcomeOf(report, c, skill.skillId, v)).toBe("active_run_selection_unknown");
    expect(outcomeOf(await sweep(stack, other), other, elsewhere.skillId, elsewhere.versions[0]!)).toBe(
      "removed",
    );
    // Once that run has finished, its unknown selection no longer holds anything.
    await stack.db.heartbeatRun.update({
      where: { id: run },
      data: { status: "succeeded", finishedAt: new Date() },
    });
    expect(outcomeOf(await sweep(stack, c), c, skill.skillId, skill.versions[0]!)).toBe("removed");
  });

  it("every cache of the company, while an unsettled recovery's version selection is unknown", async () => {
    const c = await company();
    const skill = await cachedSkill(stack, c, 2);
    await stack.db.companySkillRecoveryPin.create({ data: { companyId: c, companySkillId: skill.skillId } });
    expect(outcomeOf(await sweep(stack, c), c, skill.skillId, skill.versions[0]!)).toBe(
      "recovery_selection_unknown",
    );
  });

  it("while its last-use record is within the grace window, until last use + grace", async () => {
    const c = await company();
    const skill = await cachedSkill(stack, c, 2);
    const used = minutesAgo(20);
    await recordUse(stack, c, skill.skillId, skill.versions[0]!, used);
    expect(outcomeOf(await sweep(stack, c), c, skill.skillId, skill.versions[0]!)).toBe("recently_used");
    const deadline = await stack.db.reclaimDeadline.findFirst({
      where: { domain: DOMAIN, companyId: c, reason: "retention" },
    });
    expect(Math.abs(deadline!.dueAt.getTime() - (used.getTime() + 60 * 60_000))).toBeLessThan(1000);
  });

  it("while it was materialized within the grace window, even without a last-use record", async () => {
    const c = await company();
    const skill = await insertSkill(stack, c, 2);
    await makeVersion(stack, c, skill.skillId, skill.versions[0]!, 5);
    expect(outcomeOf(await sweep(stack, c), c, skill.skillId, skill.versions[0]!)).toBe("recently_used");
  });
});

describe("an installation without last-use records", () => {
  it("gets a full observation period from the first sweep, which a dry run does not start", async () => {
    const c = randomUUID(); // no __version_access__ at all
    const skill = await cachedSkill(stack, c, 2);
    const old = skill.versions[0]!;
    const marker = path.join(companyRoot(stack, c), "__version_access__", ".observation-started");

    const dry = await sweep(stack, c, { dryRun: true });
    expect(outcomeOf(dry, c, skill.skillId, old)).toBe("observation_period");
    expect(existsSync(marker)).toBe(false);

    const first = await sweep(stack, c);
    expect(outcomeOf(first, c, skill.skillId, old)).toBe("observation_period");
    expect(existsSync(marker)).toBe(true);
    const deadline = await stack.db.reclaimDeadline.findFirst({
      where: { domain: DOMAIN, companyId: c, reason: "retention" },
    });
    expect(deadline!.dueAt.getTime()).toBeGreaterThan(Date.now() + 59 * 60_000);
    expect(existsSync(versionDir(stack, c, skill.skillId, old))).toBe(true);
  });
});

describe("what is never touched", () => {
  it("non-versioned skill directories, database snapshots and names that are not version ids", async () => {
    const c = await company();
    const root = companyRoot(stack, c);
    const skillId = randomUUID();
    await writeTree(path.join(root, "my-skill"), { "SKILL.md": "x" }, minutesAgo(10_000));
    await writeTree(path.join(root, "__snapshots__", "skills.db"), { data: 4096 }, minutesAgo(10_000));
    await writeTree(
      path.join(root, "__versions__", skillId, "snapshot.db"),
      { data: 4096 },
      minutesAgo(10_000),
    );
    await writeTree(
      path.join(root, "__versions__", "not-a-skill", randomUUID()),
      { data: 4096 },
      minutesAgo(10_000),
    );
    const report = await sweep(stack, c);
    expect(report.checked).toBe(0);
    expect(existsSync(path.join(root, "my-skill", "SKILL.md"))).toBe(true);
    expect(existsSync(path.join(root, "__snapshots__", "skills.db", "data"))).toBe(true);
    expect(existsSync(path.join(root, "__versions__", skillId, "snapshot.db", "data"))).toBe(true);
    expect((await readdir(path.join(root, "__versions__", "not-a-skill"))).length).toBe(1);
  });

  it("a symlink named for a version is neither followed nor removed; a file named for one stays", async () => {
    const c = await company();
    const skill = await insertSkill(stack, c, 3);
    const [link, file] = skill.versions as [string, string];
    const target = path.join(stack.instanceRoot, "precious-skill");
    await writeTree(target, { "keep.txt": "mine" }, minutesAgo(1000));
    await mkdir(path.dirname(versionDir(stack, c, skill.skillId, link)), { recursive: true });
    await symlink(target, versionDir(stack, c, skill.skillId, link));
    await writeFile(versionDir(stack, c, skill.skillId, file), "not a directory");
    const report = await sweep(stack, c);
    expect(outcomeOf(report, c, skill.skillId, link)).toBe("symlink");
    expect(outcomeOf(report, c, skill.skillId, file)).toBe("not_a_directory");
    expect(existsSync(path.join(target, "keep.txt"))).toBe(true);
    expect(existsSync(versionDir(stack, c, skill.skillId, link))).toBe(true);
  });
});

describe("dry run (company-scoped diagnosis)", () => {
  it("lists every candidate and every skip with its reason and changes nothing", async () => {
    const c = await company();
    const skill = await cachedSkill(stack, c, 3);
    const [old, used, current] = skill.versions as [string, string, string];
    await recordUse(stack, c, skill.skillId, used, minutesAgo(1));
    const report = await sweep(stack, c, { dryRun: true });
    expect(report.dryRun).toBe(true);
    expect(report).toMatchObject({ checked: 3, candidates: 1, removed: 0, reclaimedBytes: 0 });
    expect(report.candidateBytes).toBeGreaterThan(32 * 1024);
    expect(outcomeOf(report, c, skill.skillId, old)).toBe("candidate");
    expect(outcomeOf(report, c, skill.skillId, used)).toBe("recently_used");
    expect(outcomeOf(report, c, skill.skillId, current)).toBe("current_version");
    expect(existsSync(versionDir(stack, c, skill.skillId, old))).toBe(true);
    expect(await trashIn(c, skill.skillId)).toEqual([]);
  });
});

describe("controls", () => {
  let tuned: Stack;
  beforeAll(async () => {
    tuned = await startStack({
      env: {
        PAPERCLIP_SKILL_VERSION_RETENTION_KEEP: "2",
        PAPERCLIP_SKILL_VERSION_RETENTION_GRACE_MINUTES: "10",
      },
    });
  });
  afterAll(async () => tuned?.stop());

  it("_KEEP keeps each skill's newest versions and _GRACE_MINUTES sets the window", async () => {
    const c = randomUUID();
    await observedSince(tuned, c);
    const skill = await insertSkill(tuned, c, 4, null);
    for (const v of skill.versions) await makeVersion(tuned, c, skill.skillId, v, 15);
    const report = await sweep(tuned, c);
    const [r1, r2, r3, r4] = skill.versions as [string, string, string, string];
    expect(outcomeOf(report, c, skill.skillId, r1)).toBe("removed");
    expect(outcomeOf(report, c, skill.skillId, r2)).toBe("removed");
    expect(outcomeOf(report, c, skill.skillId, r3)).toBe("newest_kept");
    expect(outcomeOf(report, c, skill.skillId, r4)).toBe("newest_kept");
  });

  it("_DRY_RUN reports candidates without evicting them or starting an observation period", async () => {
    const dry = await startStack({ env: { PAPERCLIP_SKILL_VERSION_RETENTION_DRY_RUN: "true" } });
    try {
      const c = randomUUID();
      await observedSince(dry, c);
      const skill = await cachedSkill(dry, c, 2);
      const report = await sweep(dry, c); // the request does not ask for a dry run
      expect(report.dryRun).toBe(true);
      expect(outcomeOf(report, c, skill.skillId, skill.versions[0]!)).toBe("candidate");
      expect(existsSync(versionDir(dry, c, skill.skillId, skill.versions[0]!))).toBe(true);
      const unobserved = randomUUID();
      const fresh = await cachedSkill(dry, unobserved, 2);
      const first = await sweep(dry, unobserved);
      expect(outcomeOf(first, unobserved, fresh.skillId, fresh.versions[0]!)).toBe("observation_period");
      expect(existsSync(path.join(companyRoot(dry, unobserved), "__version_access__"))).toBe(false);
    } finally {
      await dry.stop();
    }
  });

  it("_ENABLED=false serves no sweeps (the domain is off)", async () => {
    const off = await startStack({ env: { PAPERCLIP_SKILL_VERSION_RETENTION_ENABLED: "false" } });
    try {
      const response = await off.api("POST", "/v1/sweeps", { domain: DOMAIN, companyId: randomUUID() });
      expect(response.status).toBe(409);
    } finally {
      await off.stop();
    }
  });
});

describe("start-up", () => {
  it("the hourly sweep starts when the scheduler is ready: each company with caches is swept, the next sweep due in an hour", async () => {
    const c = randomUUID();
    let skill!: SkillFixture;
    const started = await startStack({
      seed: async (instance) => {
        await observedSince(instance, c);
        skill = await cachedSkill(instance, c, 2);
      },
    });
    try {
      const reports = await started.waitForReports(DOMAIN, (rs) => rs.some((r) => r.companyId === c));
      const report = reports.find((r) => r.companyId === c) as Report;
      expect(outcomeOf(report, c, skill.skillId, skill.versions[0]!)).toBe("removed");
      const hourly = await started.db.reclaimDeadline.findFirst({
        where: { domain: DOMAIN, companyId: INSTANCE_SCOPE, reason: "hourly" },
      });
      expect(Math.abs(hourly!.dueAt.getTime() - (Date.now() + 3600_000))).toBeLessThan(60_000);
    } finally {
      await started.stop();
    }
  });
});

describe("logs", () => {
  it("each batch that finds candidates logs them with candidate and reclaimed bytes, evictions and skip reasons", async () => {
    const lines: Record<string, unknown>[] = [];
    const logged = await startStack({
      log: createLogger("info", {}, (line) => lines.push(JSON.parse(line))),
    });
    try {
      const c = randomUUID();
      await observedSince(logged, c);
      const skill = await cachedSkill(logged, c, 2);
      await sweep(logged, c);
      const line = lines.find((l) => l.event === "skill_version_caches.retention" && l.companyId === c);
      expect(line).toMatchObject({
        dryRun: false,
        candidates: [versionId(c, skill.skillId, skill.versions[0]!)],
        candidateBytes: expect.any(Number),
        reclaimedBytes: expect.any(Number),
        evicted: 1,
        skipped: { current_version: 1 },
      });
      expect(line!.candidateBytes).toBeGreaterThan(32 * 1024);
      expect(line!.reclaimedBytes).toBe(line!.candidateBytes);
    } finally {
      await logged.stop();
    }
  });
});
