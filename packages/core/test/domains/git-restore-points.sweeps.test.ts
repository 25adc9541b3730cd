/**
 * Git workspace restore points, a requested sweep of a company (POST /v1/sweeps): it pages
 * through the company's git worktree workspaces in id order, a full batch at a time, each page
 * from where the last one stopped (company-workspaces.sql pages by the uuid: a page reads about
 * its own rows, see git-restore-points.queries.test). A position this walk never wrote (a forged
 * token) starts it over, never fails the sweep. Real job runner (runJob, no BullMQ) and
 * PostgreSQL; rows only: a workspace whose issue is open is judged from the database alone.
 */
import { encodeCursor, type BatchReport } from "@reclaim/core";
import { LIMITS } from "@reclaim/core/src/domains/git-restore-points/config";
import { batchRunner, scratchInstances } from "@reclaim/testkit";
import { DOMAIN, gitEnv, openWorkspaceRows } from "@reclaim/testkit/src/fixtures/git-workspaces";

const scratch = scratchInstances();
afterAll(() => scratch.close());

const judged = (report: BatchReport) =>
  (report.entries ?? []).map((e) => e.id.slice("workspace/".length)).sort();

it("a sweep pages through the company's workspaces in id order, each page from where the last stopped; a position it never wrote starts it over", async () => {
  const { db, root } = await scratch.open();
  const { project, workspaces } = await openWorkspaceRows(db, root, LIMITS.workspacesPerBatch + 4);
  workspaces.sort();
  const run = batchRunner(db, root, gitEnv(true));
  const sweep = (cursor?: string) =>
    run({
      kind: "sweep",
      domain: DOMAIN,
      scope: project.companyId,
      dryRun: true,
      ...(cursor ? { cursor } : {}),
    });

  const first = (await sweep()).report;
  expect(first.error).toBeNull();
  expect(judged(first)).toEqual(workspaces.slice(0, LIMITS.workspacesPerBatch));
  expect(first.nextCursor).not.toBeNull();
  const second = (await sweep(first.nextCursor!)).report;
  expect(judged(second)).toEqual(workspaces.slice(LIMITS.workspacesPerBatch));
  expect(second.nextCursor).toBeNull();

  const forged = (await sweep(encodeCursor({ workspaces: "not-a-workspace-id" }))).report;
  expect(forged.error).toBeNull();
  expect(judged(forged)).toEqual(workspaces.slice(0, LIMITS.workspacesPerBatch));
});
