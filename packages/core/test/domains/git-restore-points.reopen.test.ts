/**
 * The reopen fails closed and never overwrites (spec: "A failed restore leaves the workspace
 * closed"; issue 10: "a target that diverged is never overwritten"), and finishes what an
 * interrupted expiration left: a checkout still at its path is kept as it is
 * (`already_applied`), a checkout already renamed aside has its removal finished first and is
 * then restored. Through the worker and the reopen route, real repositories, PostgreSQL, Redis.
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

it("an expiration stopped after the rename aside: the reopen finishes the removal first, then restores every byte", async () => {
  const t = await dirtyWorkspace(stack, "task-stopped-renamed", { closedDaysAgo: 4 });
  const before = await checkoutFacts(t.wt);
  await stoppedAt(t, "git-restore-points.renamed-aside");
  expect(existsSync(t.wt)).toBe(false);
  expect((await readdir(path.dirname(t.wt))).filter((n) => n.startsWith(".expired-"))).toHaveLength(1);
  expect(await reopen(stack, t.project.companyId, t.ws)).toEqual(
    expect.objectContaining({ outcome: "restored", path: t.wt }),
  );
  expect(await checkoutFacts(t.wt)).toEqual(before);
  expect((await readdir(path.dirname(t.wt))).filter((n) => n.startsWith("."))).toEqual([]);
  const row = await stack.db.executionWorkspace.findUniqueOrThrow({ where: { id: t.ws } });
  expect(row.status).toBe("active");
  expect(await activePoints(t.ws)).toBe(0);
});
