/**
 * The controls do what their names say (spec names and defaults; the README's generated table
 * is checked by readme.test.ts), through the worker on real repositories:
 * `PAPERCLIP_GIT_RESTORE_POINT_IDLE_DAYS=0` turns idle expiration off,
 * `PAPERCLIP_GIT_RESTORE_POINT_TERMINAL_DELAY_DAYS` sets the delay after the latest close, and
 * `PAPERCLIP_GIT_CACHE_EXPIRATION_ENABLED=false` (the default) removes nothing.
 */
import { existsSync } from "node:fs";
import { createLogger } from "@reclaim/core";
import { startStack, waitFor, type Stack } from "@reclaim/testkit";
import {
  DOMAIN,
  dirtyWorkspace,
  gitEnv,
  MASTER_KEY,
  wakeIssue,
  workspaceEntry,
} from "@reclaim/testkit/src/fixtures/git-workspaces";

const DAY = 86_400_000;

async function nextLook(stack: Stack, ws: string): Promise<number | null> {
  const item = await stack.db.reclaimItemDeadline.findUniqueOrThrow({
    where: { domain_itemId: { domain: DOMAIN, itemId: ws } },
  });
  return item.dueAt === null ? null : item.dueAt.getTime() - Date.now();
}

describe("IDLE_DAYS=0 and TERMINAL_DELAY_DAYS=1", () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack({
      env: gitEnv(true, {
        PAPERCLIP_GIT_RESTORE_POINT_IDLE_DAYS: "0",
        PAPERCLIP_GIT_RESTORE_POINT_TERMINAL_DELAY_DAYS: "1",
      }),
      log: createLogger("error"),
    });
  });
  afterAll(async () => stack?.stop());

  it("idle expiration is off: an open tree nothing touched for 30 days is kept (tree_open), looked at again only on a change", async () => {
    const t = await dirtyWorkspace(
      stack,
      "task-idle-off",
      { closedDaysAgo: null, updatedDaysAgo: 30 },
      { lastUsedDaysAgo: 30 },
    );
    await wakeIssue(stack, t.project.companyId, t.issueId);
    expect(await workspaceEntry(stack, t.project.companyId, t.ws, "skipped")).toEqual(
      expect.objectContaining({ reason: "tree_open" }),
    );
    expect(await nextLook(stack, t.ws)).toBeNull();
    expect(existsSync(t.wt)).toBe(true);
  });

  it("the terminal delay is the configured one: closed 12 hours ago waits until a day after the close; closed 2 days ago is removed", async () => {
    const recent = await dirtyWorkspace(stack, "task-delay-recent", { closedDaysAgo: 0.5 });
    await wakeIssue(stack, recent.project.companyId, recent.issueId);
    expect(await workspaceEntry(stack, recent.project.companyId, recent.ws, "skipped")).toEqual(
      expect.objectContaining({ reason: "terminal_delay" }),
    );
    expect(Math.abs((await nextLook(stack, recent.ws))! - 0.5 * DAY)).toBeLessThan(120_000);
    expect(existsSync(recent.wt)).toBe(true);

    const old = await dirtyWorkspace(stack, "task-delay-old", { closedDaysAgo: 2 });
    await wakeIssue(stack, old.project.companyId, old.issueId);
    expect(await workspaceEntry(stack, old.project.companyId, old.ws, "removed")).toEqual(
      expect.objectContaining({ reason: "terminal" }),
    );
    await waitFor(async () => !existsSync(old.wt), { what: "the worktree removed" });
  });
});

describe("PAPERCLIP_GIT_CACHE_EXPIRATION_ENABLED unset (off by default)", () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack({
      env: { PAPERCLIP_GIT_RESTORE_POINTS_ENABLED: "true", PAPERCLIP_SECRETS_MASTER_KEY: MASTER_KEY },
      log: createLogger("error"),
    });
  });
  afterAll(async () => stack?.stop());

  it("removes nothing and saves nothing", async () => {
    const t = await dirtyWorkspace(stack, "task-disabled", { closedDaysAgo: 30 });
    await wakeIssue(stack, t.project.companyId, t.issueId);
    await stack.idle();
    expect(existsSync(t.wt)).toBe(true);
    const row = await stack.db.executionWorkspace.findUniqueOrThrow({ where: { id: t.ws } });
    expect(row.status).toBe("active");
    expect(
      await stack.db.executionWorkspaceRestorePoint.count({ where: { executionWorkspaceId: t.ws } }),
    ).toBe(0);
    const entries = (await stack.db.reclaimBatchReport.findMany({ where: { domain: DOMAIN } })).flatMap(
      (r) => (r.entries ?? []) as { id: string; outcome: string }[],
    );
    expect(entries.filter((e) => e.outcome === "removed")).toEqual([]);
  });
});
