/**
 * Skill version caches: the eviction protocol (bounded batches, cancellation, the shared
 * company lock, trash under its own lock) and recovery from a crash after each step.
 * A crash is simulated by an injected fault at the step (the batch stops there, its
 * transaction rolls back); the next sweep must finish or undo what was left.
 */
import { randomUUID } from "node:crypto";
import { existsSync } from "node:fs";
import { mkdir, readdir, rename, rm, writeFile } from "node:fs/promises";
import path from "node:path";
import { FaultPoints, INSTANCE_SCOPE, InjectedFault } from "@reclaim/core";
import { startStack, waitFor, writeTree, type Stack } from "@reclaim/testkit";
import {
  cachedSkill,
  companyRoot,
  DOMAIN,
  insertRun,
  minutesAgo,
  observedSince,
  outcomeOf,
  recordUse,
  sweep,
  versionDir,
} from "./skill-version-caches.fixtures";

type Handler = () => Promise<void> | void;
const armed = new Map<string, Handler>();
/** Runs `handler` the next time the worker reaches `point` (once). */
const at = (point: string, handler: Handler) => armed.set(`skill-version-caches.${point}`, handler);
const crash = () => {
  throw new InjectedFault("test");
};
const points = ["listed", "entry-examined", "after-trash-rename", "before-trash-delete"].map(
  (p) => `skill-version-caches.${p}`,
);

let stack: Stack;
beforeAll(async () => {
  stack = await startStack({ worker: false, env: { RECLAIM_JOB_ATTEMPTS: "1" } });
  const handlers = Object.fromEntries(
    points.map((point) => [
      point,
      async () => {
        const handler = armed.get(point);
        armed.delete(point);
        await handler?.();
      },
    ]),
  );
  await stack.startWorker({ faults: FaultPoints.of(handlers) });
  // The start-up checks look at everything on disk: they finish before a test's fixtures exist.
  await stack.idle();
});
afterAll(async () => stack?.stop());
afterEach(() => armed.clear());

async function company(): Promise<string> {
  const c = randomUUID();
  await observedSince(stack, c);
  return c;
}

const trashIn = async (c: string, skillId: string) =>
  (await readdir(path.join(companyRoot(stack, c), "__versions__", skillId))).filter((n) =>
    n.startsWith(".trash-"),
  );

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe("batches", () => {
  it("consider at most 50 directories and continue from a cursor", async () => {
    const c = await company();
    const skill = await cachedSkill(stack, c, 60);
    const first = await sweep(stack, c, { dryRun: true });
    expect(first.checked).toBe(50);
    expect(first.nextCursor).toEqual(expect.any(String));
    // A diagnosis continues through its cursor only: it schedules no real batch.
    expect(
      await stack.db.reclaimDeadline.count({ where: { domain: DOMAIN, companyId: c, reason: "continue" } }),
    ).toBe(0);
    const second = await sweep(stack, c, { dryRun: true, cursor: first.nextCursor });
    expect(second).toMatchObject({ checked: 10, nextCursor: null });
    // Every version exactly once across the two pages; only the current one is kept.
    const seen = [...first.entries, ...second.entries].map((e) => e.id);
    expect(new Set(seen).size).toBe(60);
    expect(first.candidates + second.candidates).toBe(59);
    const current = skill.versions.at(-1)!;
    expect(outcomeOf(second, c, skill.skillId, current) ?? outcomeOf(first, c, skill.skillId, current)).toBe(
      "current_version",
    );
  });

  it("a deadline job that stops at the limit asks to continue at once", async () => {
    const c = await company();
    await cachedSkill(stack, c, 55);
    await stack.scheduler.deps.queues.request([
      { domain: DOMAIN, scope: c, reason: "sweep", dueAt: new Date() },
    ]);
    const reports = await stack.waitForReports(
      DOMAIN,
      (rs) => rs.filter((r) => r.companyId === c).length >= 2,
    );
    const mine = reports.filter((r) => r.companyId === c).reverse();
    expect(mine.map((r) => r.checked)).toEqual([50, 5]);
    expect(mine[0]!.removed + mine[1]!.removed).toBe(54);
  });

  it("stop between entries when the diagnosis is cancelled, with a cursor to continue from", async () => {
    const c = await company();
    await cachedSkill(stack, c, 10);
    let started!: (jobId: string) => void;
    const jobIdKnown = new Promise<string>((resolve) => (started = resolve));
    let hits = 0;
    const onEntry = async () => {
      hits += 1;
      if (hits < 3) return void at("entry-examined", onEntry);
      expect((await stack.api("POST", `/v1/jobs/${await jobIdKnown}/cancel`)).status).toBe(202);
      await sleep(500); // let the cancellation message reach the worker
    };
    at("entry-examined", onEntry);
    const response = await stack.api("POST", "/v1/sweeps", { domain: DOMAIN, companyId: c, dryRun: true });
    const jobId: string = response.body.jobId;
    started(jobId);
    const report = await waitFor(async () => {
      const job = await stack.api("GET", `/v1/jobs/${jobId}`);
      return job.body.state === "completed" ? job.body.report : null;
    });
    expect(report.cancelled).toBe(true);
    expect(report.checked).toBe(3);
    const rest = await sweep(stack, c, { dryRun: true, cursor: report.nextCursor });
    expect({ checked: rest.checked, cancelled: rest.cancelled, error: rest.error }).toEqual({
      checked: 7,
      cancelled: false,
      error: null,
    });
  });
});

describe("an entry that changes between the survey and the rename", () => {
  it("a version that vanishes after the listing is still in the diagnosis, as vanished", async () => {
    const c = await company();
    const skill = await cachedSkill(stack, c, 3);
    const gone = skill.versions[0]!;
    at("listed", () => rm(versionDir(stack, c, skill.skillId, gone), { recursive: true }));
    const report = await sweep(stack, c, { dryRun: true });
    expect(report.error).toBeNull();
    expect(report.checked).toBe(3);
    expect(outcomeOf(report, c, skill.skillId, gone)).toBe("vanished");
  });

  it("a directory replaced after the survey (another device+inode) is kept as directory_changed, and retried", async () => {
    const c = await company();
    const skill = await cachedSkill(stack, c, 2);
    const version = skill.versions[0]!;
    const dir = versionDir(stack, c, skill.skillId, version);
    at("entry-examined", async () => {
      // Rebuilt beside it, then moved into place: the same path, as old, another directory.
      const rebuilt = `${dir}.rebuilt`;
      await writeTree(rebuilt, { "SKILL.md": "# rebuilt" }, minutesAgo(180));
      await rm(dir, { recursive: true });
      await rename(rebuilt, dir);
    });
    const report = await sweep(stack, c);
    expect(outcomeOf(report, c, skill.skillId, version)).toBe("directory_changed");
    expect(existsSync(path.join(dir, "SKILL.md"))).toBe(true);
    const retry = await stack.db.reclaimDeadline.findFirst({
      where: { domain: DOMAIN, companyId: c, reason: "retry" },
    });
    expect(retry).not.toBeNull();
  });

  it("a last use recorded after the survey keeps the version (recently_used)", async () => {
    const c = await company();
    const skill = await cachedSkill(stack, c, 2);
    const version = skill.versions[0]!;
    at("entry-examined", () => recordUse(stack, c, skill.skillId, version, new Date()));
    const report = await sweep(stack, c);
    expect(outcomeOf(report, c, skill.skillId, version)).toBe("recently_used");
    expect(existsSync(versionDir(stack, c, skill.skillId, version))).toBe(true);
  });
});

describe("the company skill lock", () => {
  it("is the one Paperclip's pin persistence takes: eviction waits for it and sees the pin it wrote", async () => {
    const c = await company();
    const skill = await cachedSkill(stack, c, 2);
    const version = skill.versions[0]!;
    const run = await insertRun(stack, c, "running");
    let release!: () => void;
    const hold = new Promise<void>((resolve) => (release = resolve));
    let locked!: () => void;
    const isLocked = new Promise<void>((resolve) => (locked = resolve));
    const paperclip = stack.db.$transaction(
      async (tx) => {
        await tx.$queryRawUnsafe(
          "SELECT pg_advisory_xact_lock(hashtext('paperclip.company_skill_versions'), hashtext($1))::text",
          c,
        );
        locked();
        await hold;
        await tx.companySkillRunPin.create({
          data: {
            companyId: c,
            heartbeatRunId: run,
            companySkillId: skill.skillId,
            companySkillVersionId: version,
          },
        });
      },
      { timeout: 60_000 },
    );
    await isLocked;
    const swept = sweep(stack, c);
    // The sweep is waiting for the lock (its survey is done; its rows are read under the lock).
    await waitFor(async () => {
      const rows = await stack.db.$queryRawUnsafe<{ n: number }[]>(
        `SELECT count(*)::int AS n FROM pg_locks
          WHERE locktype = 'advisory' AND NOT granted
            AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`,
      );
      return rows[0]!.n > 0 ? true : null;
    });
    release();
    await paperclip;
    expect(outcomeOf(await swept, c, skill.skillId, version)).toBe("active_run_pin");
    expect(existsSync(versionDir(stack, c, skill.skillId, version))).toBe(true);
  });

  it("is not held while trash is deleted; the trash lock is, and a held trash lock leaves the trash for later", async () => {
    const c = await company();
    const skill = await cachedSkill(stack, c, 2);
    let companyLockFree: boolean | undefined;
    at("before-trash-delete", async () => {
      const rows = await stack.db.$transaction((tx) =>
        tx.$queryRawUnsafe<{ ok: boolean }[]>(
          "SELECT pg_try_advisory_xact_lock(hashtext('paperclip.company_skill_versions'), hashtext($1)) AS ok",
          c,
        ),
      );
      companyLockFree = rows[0]!.ok;
    });
    const report = await sweep(stack, c);
    expect(companyLockFree).toBe(true);
    expect(outcomeOf(report, c, skill.skillId, skill.versions[0]!)).toBe("removed");

    // Another deleter (a Paperclip server) holds the trash lock: this batch leaves its trash.
    const next = await cachedSkill(stack, c, 2);
    let release!: () => void;
    const hold = new Promise<void>((resolve) => (release = resolve));
    let locked!: () => void;
    const isLocked = new Promise<void>((resolve) => (locked = resolve));
    const deleter = stack.db.$transaction(
      async (tx) => {
        await tx.$queryRawUnsafe(
          "SELECT pg_advisory_xact_lock(hashtext('paperclip.company_skill_version_trash'), hashtext($1))::text",
          c,
        );
        locked();
        await hold;
      },
      { timeout: 60_000 },
    );
    await isLocked;
    const held = await sweep(stack, c);
    release();
    await deleter;
    expect(outcomeOf(held, c, next.skillId, next.versions[0]!)).toBe("trash_lock_held");
    expect(await trashIn(c, next.skillId)).toHaveLength(1);
    const retry = await stack.db.reclaimDeadline.findFirst({
      where: { domain: DOMAIN, companyId: c, reason: "retry" },
    });
    expect(retry).not.toBeNull();
    const after = await sweep(stack, c);
    expect(after.entries.find((e) => e.outcome === "removed")?.reason).toBe("interrupted_trash");
    expect(await trashIn(c, next.skillId)).toEqual([]);
  });
});

describe("a crash", () => {
  it("after the rename to .trash: the next sweep deletes the trash but never the version materialized again meanwhile", async () => {
    const c = await company();
    const skill = await cachedSkill(stack, c, 2);
    const version = skill.versions[0]!;
    at("after-trash-rename", crash);
    const crashed = await sweep(stack, c);
    expect(crashed.error).toMatch(/injected fault/);
    expect(await trashIn(c, skill.skillId)).toHaveLength(1);
    // Paperclip's preparation resolves the version again and rebuilds its cache.
    const dir = versionDir(stack, c, skill.skillId, version);
    await mkdir(dir, { recursive: true });
    await writeFile(path.join(dir, "SKILL.md"), "# rebuilt");
    const next = await sweep(stack, c);
    expect(next.entries.find((e) => e.reason === "interrupted_trash")?.outcome).toBe("removed");
    expect(await trashIn(c, skill.skillId)).toEqual([]);
    expect(outcomeOf(next, c, skill.skillId, version)).toBe("recently_used");
    expect(existsSync(path.join(dir, "SKILL.md"))).toBe(true);
  });

  it("before the trash is deleted: the next sweep finishes the deletion", async () => {
    const c = await company();
    const skill = await cachedSkill(stack, c, 2);
    at("before-trash-delete", crash);
    const crashed = await sweep(stack, c);
    expect(crashed.error).toMatch(/injected fault/);
    expect(await trashIn(c, skill.skillId)).toHaveLength(1);
    expect(existsSync(versionDir(stack, c, skill.skillId, skill.versions[0]!))).toBe(false);
    const next = await sweep(stack, c);
    expect(next.removed).toBe(1);
    expect(await trashIn(c, skill.skillId)).toEqual([]);
  });
});

describe("the hourly sweep", () => {
  it("makes every company with caches due, and asks for itself again in an hour", async () => {
    const c = await company();
    await cachedSkill(stack, c, 2);
    await stack.scheduler.deps.queues.request([
      { domain: DOMAIN, scope: INSTANCE_SCOPE, reason: "hourly", dueAt: new Date() },
    ]);
    const reports = await stack.waitForReports(DOMAIN, (rs) =>
      rs.some((r) => r.companyId === c && r.removed === 1),
    );
    expect(reports.some((r) => r.companyId === null)).toBe(true);
    const next = await stack.db.reclaimDeadline.findFirst({
      where: { domain: DOMAIN, companyId: INSTANCE_SCOPE, reason: "hourly" },
    });
    expect(Math.abs(next!.dueAt.getTime() - (Date.now() + 3600_000))).toBeLessThan(60_000);
  });
});
