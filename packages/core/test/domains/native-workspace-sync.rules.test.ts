/**
 * Native workspace sync folders: each removal rule of the spec, on real folders and real
 * rows, through the scheduler API and a real BullMQ worker.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { randomUUID } from "node:crypto";
import { existsSync } from "node:fs";
import { mkdir, readdir, symlink, writeFile } from "node:fs/promises";
import path from "node:path";
import { hostProcessProbe } from "@reclaim/core";
import { startStack, type Stack } from "@reclaim/testkit";
import {
  insertFinalization,
  insertRecoveryAction,
  insertRun,
  makeFolder,
  reasonOf,
  sweep,
  syncRoot,
} from "@reclaim/testkit/src/fixtures/native-workspace-sync";

let stack: Stack;
beforeAll(async () => {
  stack = await startStack();
});
afterAll(async () => stack?.stop());

const company = () => randomUUID();

describe("a folder is removed", () => {
  it("when the run is settled, finished before the window, and has no valid workspace sync reference", async () => {
    const c = company();
    for (const status of ["succeeded", "failed", "cancelled", "timed_out", "interrupted"]) {
      const run = await insertRun(stack, { companyId: c, status });
      await makeFolder(stack, run);
    }
    const report = await sweep(stack, c);
    expect(report).toMatchObject({ checked: 5, candidates: 5, removed: 5 });
    expect(report.reclaimedBytes).toBeGreaterThanOrEqual(5 * 64 * 1024);
    expect(await readdir(syncRoot(stack))).not.toEqual(
      expect.arrayContaining([expect.stringMatching(/^\.expired-/)]),
    );
  });

  it("without a valid sync reference, whatever export, recovery or adoption rows name the run", async () => {
    const c = company();
    const run = await insertRun(stack, { companyId: c });
    await insertFinalization(stack, { companyId: c, runId: run, phase: "running" });
    await insertRecoveryAction(stack, {
      companyId: c,
      runId: run,
      cause: "native_workspace_sync_out_unsafe_archive",
    });
    await insertRecoveryAction(stack, {
      companyId: c,
      runId: run,
      cause: "native_execution_ownership_unverified",
    });
    await stack.db.historicalRecoveryAdoption.create({
      data: { companyId: c, heartbeatRunId: run, status: "pending" },
    });
    const folder = await makeFolder(stack, run);
    const report = await sweep(stack, c);
    expect(reasonOf(report, run)).toBe("removed");
    expect(report.entries).toContainEqual(
      expect.objectContaining({
        id: `native-workspace-sync/${run}`,
        outcome: "candidate",
        reason: "no_sync_reference",
      }),
    );
    expect(existsSync(folder)).toBe(false);
  });

  it("when the run references the folder and nothing can still read it", async () => {
    const c = company();
    const run = await insertRun(stack, { companyId: c, syncRef: true });
    await insertFinalization(stack, { companyId: c, runId: run, phase: "committed" });
    const folder = await makeFolder(stack, run);
    const report = await sweep(stack, c);
    expect(reasonOf(report, run)).toBe("removed");
    expect(existsSync(folder)).toBe(false);
  });

  it("with a finalization that is terminal_failure (Paperclip's table has no recovery state)", async () => {
    const c = company();
    const runs = [];
    for (const phase of ["terminal_failure"]) {
      const run = await insertRun(stack, { companyId: c, syncRef: true });
      await insertFinalization(stack, { companyId: c, runId: run, phase });
      await makeFolder(stack, run);
      runs.push(run);
    }
    const report = await sweep(stack, c);
    for (const run of runs) expect(reasonOf(report, run)).toBe("removed");
  });

  it("when the referenced lease was destroyed, even with a retained recovery scheduled", async () => {
    const c = company();
    const lease = await stack.db.environmentLease.create({
      data: { companyId: c, status: "destroyed", provider: "e2b" },
    });
    const run = await insertRun(stack, { companyId: c, syncRef: { leaseId: lease.id } });
    await stack.db.retainedWorkspaceRecovery.create({
      data: { companyId: c, heartbeatRunId: run, status: "scheduled" },
    });
    await makeFolder(stack, run);
    expect(reasonOf(await sweep(stack, c), run)).toBe("removed");
  });
});

describe("a folder is kept", () => {
  it("while its newest file is within the window, until newest file + window", async () => {
    const c = company();
    const run = await insertRun(stack, { companyId: c });
    const folder = await makeFolder(stack, run, 10);
    await writeFile(path.join(folder, "manifest.json"), "touched"); // newest file: now
    const report = await sweep(stack, c);
    expect(reasonOf(report, run)).toBe("folder_recently_modified");
    const deadline = await stack.db.reclaimDeadline.findFirst({
      where: { domain: "native-workspace-sync", companyId: c },
    });
    const expected = Date.now() + 7 * 24 * 3600 * 1000;
    expect(Math.abs(deadline!.dueAt.getTime() - expected)).toBeLessThan(60_000);
  });

  it.each(["queued", "scheduled_retry", "running"])(
    "while the run is %s, and rechecks one window later",
    async (status) => {
      const c = company();
      const run = await insertRun(stack, { companyId: c, status, finishedDaysAgo: null });
      await makeFolder(stack, run);
      expect(reasonOf(await sweep(stack, c), run)).toBe("run_not_settled");
      const deadline = await stack.db.reclaimDeadline.findFirst({
        where: { domain: "native-workspace-sync", companyId: c },
      });
      expect(deadline!.dueAt.getTime()).toBeGreaterThan(Date.now() + 6.9 * 24 * 3600 * 1000);
    },
  );

  it("while the run finished within the window, until finish + window", async () => {
    const c = company();
    const run = await insertRun(stack, { companyId: c, finishedDaysAgo: 2 });
    await makeFolder(stack, run);
    expect(reasonOf(await sweep(stack, c), run)).toBe("run_finished_within_window");
    const deadline = await stack.db.reclaimDeadline.findFirst({
      where: { domain: "native-workspace-sync", companyId: c },
    });
    expect(Math.abs(deadline!.dueAt.getTime() - (Date.now() + 5 * 24 * 3600 * 1000))).toBeLessThan(60_000);
  });

  it("while a live controller lease of the run exists", async () => {
    const c = company();
    const run = await insertRun(stack, { companyId: c });
    await stack.db.environmentLease.create({
      data: { companyId: c, heartbeatRunId: run, status: "active", provider: "e2b" },
    });
    await makeFolder(stack, run);
    expect(reasonOf(await sweep(stack, c), run)).toBe("live_controller_lease");
  });

  it("while a finalization owner receipt exists (its lease_owner), even without a sync reference", async () => {
    const c = company();
    const run = await insertRun(stack, { companyId: c });
    await insertFinalization(stack, { companyId: c, runId: run, phase: "committed", leaseOwner: "server-2" });
    await makeFolder(stack, run);
    expect(reasonOf(await sweep(stack, c), run)).toBe("finalization_owner_receipt");
  });

  it.each([
    ["a next attempt scheduled", { phase: "committed", nextAttemptAt: new Date() }],
    ["phase running", { phase: "running" }],
    ["phase blocked", { phase: "blocked" }],
  ])("while its finalization has %s", async (_label, finalization) => {
    const c = company();
    const run = await insertRun(stack, { companyId: c, syncRef: true });
    await insertFinalization(stack, { companyId: c, runId: run, ...finalization });
    await makeFolder(stack, run);
    expect(reasonOf(await sweep(stack, c), run)).toBe("finalization_unsettled");
  });

  it.each(["active", "escalated"])("while an %s workspace export names the run", async (status) => {
    const c = company();
    const run = await insertRun(stack, { companyId: c, syncRef: true });
    await insertRecoveryAction(stack, {
      companyId: c,
      runId: run,
      status,
      cause: "native_workspace_sync_out_unsafe_archive",
    });
    await makeFolder(stack, run);
    expect(reasonOf(await sweep(stack, c), run)).toBe("workspace_export_active");
  });

  it("while an active or escalated owner-unverified recovery action names the run (a resolved or verified one does not)", async () => {
    const c = company();
    const active = await insertRun(stack, { companyId: c, syncRef: true });
    const escalated = await insertRun(stack, { companyId: c, syncRef: true });
    const resolved = await insertRun(stack, { companyId: c, syncRef: true });
    const verified = await insertRun(stack, { companyId: c, syncRef: true });
    const unverified = "native_execution_ownership_unverified";
    await insertRecoveryAction(stack, { companyId: c, runId: active, cause: unverified });
    await insertRecoveryAction(stack, {
      companyId: c,
      runId: escalated,
      status: "escalated",
      cause: "stranded_run",
      evidence: { ownerVerified: false },
    });
    await insertRecoveryAction(stack, {
      companyId: c,
      runId: resolved,
      status: "resolved",
      cause: unverified,
    });
    await insertRecoveryAction(stack, {
      companyId: c,
      runId: verified,
      cause: "stranded_run",
      evidence: { ownerVerified: true },
    });
    for (const run of [active, escalated, resolved, verified]) await makeFolder(stack, run);
    const report = await sweep(stack, c);
    expect(reasonOf(report, active)).toBe("recovery_action_unverified");
    expect(reasonOf(report, escalated)).toBe("recovery_action_unverified");
    expect(reasonOf(report, resolved)).toBe("removed");
    expect(reasonOf(report, verified)).toBe("removed");
  });

  it.each([
    [
      "nativeWorkspaceExportResume",
      { status: "released", metadata: { nativeWorkspaceExportResume: { at: "x" } } },
    ],
    ["a cleanup in flight (running)", { status: "pending_cleanup", cleanupStatus: "running" }],
    ["a cleanup in flight (pending)", { status: "released", cleanupStatus: "pending" }],
    ["a cleanup in flight (in_progress)", { status: "released", cleanupStatus: "in_progress" }],
  ])("while a lease of the run carries %s", async (_label, lease) => {
    const c = company();
    const run = await insertRun(stack, { companyId: c, syncRef: true });
    await stack.db.environmentLease.create({
      data: { companyId: c, heartbeatRunId: run, provider: "e2b", ...lease },
    });
    await makeFolder(stack, run);
    expect(reasonOf(await sweep(stack, c), run)).toBe("lease_export_resume_or_cleanup");
  });

  it.each(["scheduled", "running", "awaiting_evidence", "queued", "recovering"])(
    "while a retained workspace recovery is %s and the referenced lease was not destroyed",
    async (status) => {
      const c = company();
      const lease = await stack.db.environmentLease.create({
        data: { companyId: c, status: "released", provider: "e2b" },
      });
      const run = await insertRun(stack, { companyId: c, syncRef: { leaseId: lease.id } });
      await stack.db.retainedWorkspaceRecovery.create({
        data: { companyId: c, heartbeatRunId: run, status },
      });
      await makeFolder(stack, run);
      expect(reasonOf(await sweep(stack, c), run)).toBe("retained_recovery_pending");
    },
  );

  it.each(["pending", "running"])(
    "while historical recovery adoption has %s work for the run",
    async (status) => {
      const c = company();
      const run = await insertRun(stack, { companyId: c, syncRef: true });
      await stack.db.historicalRecoveryAdoption.create({
        data: { companyId: c, heartbeatRunId: run, status },
      });
      await makeFolder(stack, run);
      expect(reasonOf(await sweep(stack, c), run)).toBe("historical_adoption_pending");
    },
  );

  it("while a settled run has no finish time", async () => {
    const c = company();
    const run = await insertRun(stack, { companyId: c, finishedDaysAgo: null });
    await makeFolder(stack, run);
    expect(reasonOf(await sweep(stack, c), run)).toBe("run_finish_unknown");
  });

  /** Runs `during` while another transaction holds the run's finalization ownership lock. */
  async function whileLockHeld<T>(run: string, during: () => Promise<T>): Promise<T> {
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    let locked!: () => void;
    const isLocked = new Promise<void>((resolve) => (locked = resolve));
    const holder = stack.db.$transaction(
      async (tx) => {
        await tx.$queryRawUnsafe(
          "SELECT pg_advisory_xact_lock(hashtext('paperclip.native_run_finalization'), hashtext($1))::text",
          run,
        );
        locked();
        await held;
      },
      { timeout: 60_000 },
    );
    await isLocked;
    try {
      return await during();
    } finally {
      release();
      await holder;
    }
  }

  it("while another transaction holds the run's finalization ownership lock, retrying in 15 minutes", async () => {
    const c = company();
    const run = await insertRun(stack, { companyId: c });
    const folder = await makeFolder(stack, run);
    const report = await whileLockHeld(run, () => sweep(stack, c));
    expect(reasonOf(report, run)).toBe("finalization_lock_held");
    expect(existsSync(folder)).toBe(true);
    const retry = await stack.db.reclaimDeadline.findFirst({
      where: { domain: "native-workspace-sync", companyId: c, reason: "retry" },
    });
    expect(Math.abs(retry!.dueAt.getTime() - (Date.now() + 15 * 60_000))).toBeLessThan(60_000);
  });

  it("a dry run reports a folder whose finalization lock is held as skipped, as the real run would", async () => {
    const c = company();
    const run = await insertRun(stack, { companyId: c });
    await makeFolder(stack, run);
    const report = await whileLockHeld(run, () => sweep(stack, c, { dryRun: true }));
    expect(reasonOf(report, run)).toBe("finalization_lock_held");
    expect(report.candidates).toBe(0);
    // Unlocked, the same dry run lists it as a candidate.
    expect(reasonOf(await sweep(stack, c, { dryRun: true }), run)).toBe("candidate");
  });
});

describe("a recorded process", () => {
  let child: ChildProcess;
  beforeAll(() => {
    child = spawn("sleep", ["300"], { detached: true, stdio: "ignore" });
    child.unref();
  });
  afterAll(() => {
    child.kill("SIGKILL");
  });

  it("blocks removal while it still exists with the recorded start time and the run has no lease", async () => {
    const c = company();
    const run = await insertRun(stack, {
      companyId: c,
      status: "failed",
      process: {
        pid: child.pid!,
        processGroupId: child.pid!,
        startedAt: hostProcessProbe.startTime(child.pid!),
      },
    });
    await makeFolder(stack, run);
    expect(reasonOf(await sweep(stack, c), run)).toBe("run_process_live");
  });

  it("does not block removal when the operating system reused the pid (another start time)", async () => {
    const c = company();
    const run = await insertRun(stack, {
      companyId: c,
      status: "failed",
      process: { pid: child.pid!, startedAt: new Date(Date.now() - 30 * 24 * 3600 * 1000) },
    });
    await makeFolder(stack, run);
    expect(reasonOf(await sweep(stack, c), run)).toBe("removed");
  });

  it("does not block removal when it came from a remote sandbox (only a remote lease)", async () => {
    const c = company();
    const run = await insertRun(stack, {
      companyId: c,
      status: "failed",
      process: { pid: child.pid!, startedAt: hostProcessProbe.startTime(child.pid!) },
    });
    await stack.db.environmentLease.create({
      data: { companyId: c, heartbeatRunId: run, status: "released", provider: "e2b" },
    });
    await makeFolder(stack, run);
    expect(reasonOf(await sweep(stack, c), run)).toBe("removed");
  });

  it("blocks removal with a local lease", async () => {
    const c = company();
    const run = await insertRun(stack, {
      companyId: c,
      status: "failed",
      process: { pid: child.pid!, startedAt: hostProcessProbe.startTime(child.pid!) },
    });
    await stack.db.environmentLease.create({
      data: { companyId: c, heartbeatRunId: run, status: "released", provider: "local" },
    });
    await makeFolder(stack, run);
    expect(reasonOf(await sweep(stack, c), run)).toBe("run_process_live");
  });
});

describe("what is never removed", () => {
  it("a symlink named for a run id is neither followed nor removed; a file named for one stays", async () => {
    const c = company();
    const target = path.join(stack.instanceRoot, "precious");
    await mkdir(target, { recursive: true });
    await writeFile(path.join(target, "keep.txt"), "mine");
    const linkRun = await insertRun(stack, { companyId: c });
    const fileRun = await insertRun(stack, { companyId: c });
    await mkdir(syncRoot(stack), { recursive: true });
    await symlink(target, path.join(syncRoot(stack), linkRun));
    await writeFile(path.join(syncRoot(stack), fileRun), "not a folder");
    const report = await sweep(stack, c);
    expect(reasonOf(report, linkRun)).toBe("symlink");
    expect(reasonOf(report, fileRun)).toBe("not_a_directory");
    expect(existsSync(path.join(target, "keep.txt"))).toBe(true);
    expect(existsSync(path.join(syncRoot(stack), linkRun))).toBe(true);
    expect(existsSync(path.join(syncRoot(stack), fileRun))).toBe(true);
  });

  it("the generations cache and other names that are not run ids", async () => {
    await makeFolder(stack, "generations", 30);
    await makeFolder(stack, "not-a-run", 30);
    await sweep(stack, null);
    await sweep(stack, company());
    expect(existsSync(path.join(syncRoot(stack), "generations", "descriptor.json"))).toBe(true);
    expect(existsSync(path.join(syncRoot(stack), "not-a-run"))).toBe(true);
  });
});

describe("dry run", () => {
  it("reports every candidate and skip with its reason and removes nothing", async () => {
    const c = company();
    const gone = await insertRun(stack, { companyId: c });
    const kept = await insertRun(stack, { companyId: c, finishedDaysAgo: 1 });
    const a = await makeFolder(stack, gone);
    const b = await makeFolder(stack, kept);
    const report = await sweep(stack, c, { dryRun: true });
    expect(report.dryRun).toBe(true);
    expect(report).toMatchObject({ candidates: 1, removed: 0, reclaimedBytes: 0 });
    expect(report.candidateBytes).toBeGreaterThan(0);
    expect(reasonOf(report, gone)).toBe("candidate");
    expect(reasonOf(report, kept)).toBe("run_finished_within_window");
    expect(existsSync(a) && existsSync(b)).toBe(true);
  });
});
