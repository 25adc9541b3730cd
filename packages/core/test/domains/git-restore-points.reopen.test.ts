/**
 * The reopen fails closed and never overwrites (spec: "A failed restore leaves the workspace
 * closed"; issue 10: "a target that diverged is never overwritten"), and finishes what an
 * interrupted expiration left: a checkout still at its path, or renamed aside with its
 * registrations still in place, is kept as it is (`already_applied`; a file written into it
 * after the verification is never deleted); one whose registrations are gone has its removal
 * finished first and is then restored. Through the worker and the reopen route, real
 * repositories, PostgreSQL, Redis.
 */
import { existsSync } from "node:fs";
import { mkdir, readdir, readFile, rm, writeFile } from "node:fs/promises";
import path from "node:path";
import { createLogger, FaultPoints } from "@reclaim/core";
import { startStack, waitFor, type Stack } from "@reclaim/testkit";
import {
  dirtyWorkspace,
  git,
  gitEnv,
  wakeIssue,
  workspaceEntry,
} from "@reclaim/testkit/src/fixtures/git-workspaces";
import { checkoutFacts, reopen } from "./git-restore-points.fixtures";

let stopAt: string | null = null;
let stack: Stack;
beforeAll(async () => {
  const stop = (point: string) => () => {
    if (stopAt === point) throw new Error(`stopped at ${point}`);
  };
  stack = await startStack({
    env: gitEnv(true),
    log: createLogger("error"),
    faults: FaultPoints.of({
      "git-restore-points.archived": stop("git-restore-points.archived"),
      "git-restore-points.renamed-aside": stop("git-restore-points.renamed-aside"),
      "git-restore-points.renamed-unverified": stop("git-restore-points.renamed-unverified"),
      "git-restore-points.registrations-removed": stop("git-restore-points.registrations-removed"),
    }),
  });
});
afterAll(async () => stack?.stop());

const activePoints = (ws: string) =>
  stack.db.executionWorkspaceRestorePoint.count({ where: { executionWorkspaceId: ws, status: "active" } });

async function expired(t: Awaited<ReturnType<typeof dirtyWorkspace>>): Promise<void> {
  await wakeIssue(stack, t.project.companyId, t.issueId);
  await waitFor(
    async () => {
      const row = await stack.db.executionWorkspace.findUniqueOrThrow({ where: { id: t.ws } });
      return (row.metadata as Record<string, unknown>).gitCacheExpirationRemoval === null;
    },
    { what: "the expiration finished", timeoutMs: 60_000 },
  );
  expect(existsSync(t.wt)).toBe(false);
}

/** The expiration committed its archive and stopped at `point` (its report entry says failed). */
async function stoppedAt(t: Awaited<ReturnType<typeof dirtyWorkspace>>, point: string): Promise<void> {
  stopAt = point;
  try {
    await wakeIssue(stack, t.project.companyId, t.issueId);
    expect(await workspaceEntry(stack, t.project.companyId, t.ws, "failed")).toEqual(
      expect.objectContaining({ reason: "expiration_failed" }),
    );
  } finally {
    stopAt = null;
  }
  const row = await stack.db.executionWorkspace.findUniqueOrThrow({ where: { id: t.ws } });
  expect(row.status).toBe("archived");
  expect(await activePoints(t.ws)).toBe(1);
}

it("a checkout in the way that is not the saved one is never overwritten: failed / checkout_in_the_way, the workspace stays closed with its restore point", async () => {
  const t = await dirtyWorkspace(stack, "task-in-the-way", { closedDaysAgo: 4 });
  const before = await checkoutFacts(t.wt);
  await expired(t);
  // Something else now lives at the path: a directory with a file, then a different clone.
  await mkdir(t.wt);
  await writeFile(path.join(t.wt, "someone-elses.txt"), "not the saved checkout\n");
  expect(await reopen(stack, t.project.companyId, t.ws)).toEqual(
    expect.objectContaining({ outcome: "failed", reason: "checkout_in_the_way" }),
  );
  expect(await readdir(t.wt)).toEqual(["someone-elses.txt"]);
  expect(await readFile(path.join(t.wt, "someone-elses.txt"), "utf8")).toBe("not the saved checkout\n");
  await rm(t.wt, { recursive: true });
  await git(path.dirname(t.wt), ["clone", "-q", t.project.remote, t.wt]);
  const other = await checkoutFacts(t.wt);
  expect(await reopen(stack, t.project.companyId, t.ws)).toEqual(
    expect.objectContaining({ outcome: "failed", reason: "checkout_in_the_way" }),
  );
  expect(await checkoutFacts(t.wt)).toEqual(other);
  const row = await stack.db.executionWorkspace.findUniqueOrThrow({ where: { id: t.ws } });
  expect(row.status).toBe("archived");
  expect(await activePoints(t.ws)).toBe(1);
  expect((await readdir(path.dirname(t.wt))).filter((n) => n.startsWith(".restoring-"))).toEqual([]);

  // Once the path is free, the same restore point brings back every byte.
  await rm(t.wt, { recursive: true });
  expect(await reopen(stack, t.project.companyId, t.ws)).toEqual(
    expect.objectContaining({ outcome: "restored", path: t.wt }),
  );
  expect(await checkoutFacts(t.wt)).toEqual(before);
});

it("an expiration stopped after its archive and before the rename: the reopen keeps the checkout as it is (already_applied) and the agent's git works", async () => {
  const t = await dirtyWorkspace(stack, "task-stopped-archived", { closedDaysAgo: 4 });
  const before = await checkoutFacts(t.wt);
  await stoppedAt(t, "git-restore-points.archived");
  expect(existsSync(t.wt)).toBe(true);
  expect(await reopen(stack, t.project.companyId, t.ws)).toEqual(
    expect.objectContaining({ outcome: "already_applied", path: t.wt }),
  );
  expect(await checkoutFacts(t.wt)).toEqual(before);
  const row = await stack.db.executionWorkspace.findUniqueOrThrow({ where: { id: t.ws } });
  expect(row.status).toBe("active");
  const metadata = row.metadata as Record<string, unknown>;
  expect(metadata.gitCacheRestoration).toBeUndefined();
  expect(metadata.gitCacheExpirationRemoval).toBeUndefined();
  expect(await activePoints(t.ws)).toBe(0);
  // No lock file of the stopped expiration is left: the agent commits.
  await git(t.wt, ["add", "notes.md"]);
  await git(t.wt, ["commit", "-q", "-m", "after the reopen"]);
});

it("an expiration stopped after the rename aside, before the registrations go: the reopen moves the tree back and keeps it as it is (already_applied)", async () => {
  const t = await dirtyWorkspace(stack, "task-stopped-renamed", { closedDaysAgo: 4 });
  const before = await checkoutFacts(t.wt);
  await stoppedAt(t, "git-restore-points.renamed-aside");
  expect(existsSync(t.wt)).toBe(false);
  expect((await readdir(path.dirname(t.wt))).filter((n) => n.startsWith(".expired-"))).toHaveLength(1);
  expect(await reopen(stack, t.project.companyId, t.ws)).toEqual(
    expect.objectContaining({ outcome: "already_applied", path: t.wt }),
  );
  expect(await checkoutFacts(t.wt)).toEqual(before);
  expect((await readdir(path.dirname(t.wt))).filter((n) => n.startsWith("."))).toEqual([]);
  const row = await stack.db.executionWorkspace.findUniqueOrThrow({ where: { id: t.ws } });
  expect(row.status).toBe("active");
  expect(await activePoints(t.ws)).toBe(0);
});

it("an expiration stopped after the registrations were removed: the reopen finishes the removal first, then restores every byte", async () => {
  const t = await dirtyWorkspace(stack, "task-stopped-deregistered", { closedDaysAgo: 4 });
  const before = await checkoutFacts(t.wt);
  await stoppedAt(t, "git-restore-points.registrations-removed");
  expect(existsSync(t.wt)).toBe(false);
  expect(await reopen(stack, t.project.companyId, t.ws)).toEqual(
    expect.objectContaining({ outcome: "restored", path: t.wt }),
  );
  expect(await checkoutFacts(t.wt)).toEqual(before);
  expect((await readdir(path.dirname(t.wt))).filter((n) => n.startsWith("."))).toEqual([]);
  const row = await stack.db.executionWorkspace.findUniqueOrThrow({ where: { id: t.ws } });
  expect(row.status).toBe("active");
  expect(await activePoints(t.ws)).toBe(0);
});

/** The single `.expired-*` tree beside the checkout (renamed aside, not yet verified there). */
async function asideOf(wt: string): Promise<string> {
  const names = (await readdir(path.dirname(wt))).filter((n) => n.startsWith(".expired-"));
  expect(names).toHaveLength(1);
  return path.join(path.dirname(wt), names[0]!);
}

it("an expiration stopped between the rename aside and the verification there: a file written into the renamed tree is never deleted; the next sweep moves it back and rolls back", async () => {
  const t = await dirtyWorkspace(stack, "task-unverified-sweep", { closedDaysAgo: 4 });
  await stoppedAt(t, "git-restore-points.renamed-unverified");
  expect(existsSync(t.wt)).toBe(false);
  // Written after the locked verification; the rename carried it aside.
  await writeFile(path.join(await asideOf(t.wt), "late.txt"), "written after the verification\n");
  await wakeIssue(stack, t.project.companyId, t.issueId);
  expect(await workspaceEntry(stack, t.project.companyId, t.ws, "rolled_back")).toEqual(
    expect.objectContaining({ reason: "worktree_changed" }),
  );
  expect(await readFile(path.join(t.wt, "late.txt"), "utf8")).toBe("written after the verification\n");
  expect(await readFile(path.join(t.wt, "notes.md"), "utf8")).toBe("untracked\n");
  expect((await readdir(path.dirname(t.wt))).filter((n) => n.startsWith("."))).toEqual([]);
  const row = await stack.db.executionWorkspace.findUniqueOrThrow({ where: { id: t.ws } });
  expect(row.status).toBe("active");
  await git(t.wt, ["add", "late.txt"]);
});

it("an expiration stopped between the rename aside and the verification there: the reopen keeps the renamed tree as it is (already_applied)", async () => {
  const t = await dirtyWorkspace(stack, "task-unverified-reopen", { closedDaysAgo: 4 });
  await stoppedAt(t, "git-restore-points.renamed-unverified");
  await writeFile(path.join(await asideOf(t.wt), "late.txt"), "written after the verification\n");
  expect(await reopen(stack, t.project.companyId, t.ws)).toEqual(
    expect.objectContaining({ outcome: "already_applied", path: t.wt }),
  );
  expect(await readFile(path.join(t.wt, "late.txt"), "utf8")).toBe("written after the verification\n");
  expect(await readFile(path.join(t.wt, "notes.md"), "utf8")).toBe("untracked\n");
  expect((await git(t.wt, ["log", "-1", "--format=%s"])).trim()).toBe("unpushed");
  expect((await readdir(path.dirname(t.wt))).filter((n) => n.startsWith("."))).toEqual([]);
  const row = await stack.db.executionWorkspace.findUniqueOrThrow({ where: { id: t.ws } });
  expect(row.status).toBe("active");
  await git(t.wt, ["add", "late.txt"]);
  await git(t.wt, ["commit", "-q", "-m", "kept"]);
});
