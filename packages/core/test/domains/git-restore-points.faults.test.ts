/**
 * Rule: SIGKILL of the worker at each step of expiration loses nothing. At every moment the
 * worktree, or a verified active restore point, exists; the next worker finishes (or redoes)
 * the expiration, and the reopen brings back every byte; the killed worker's work files are
 * removed when the next worker starts. The workers are real processes
 * (`node apps/worker/src/main.ts`) killed by fault points (packages/core/src/faults.ts).
 */
import { existsSync } from "node:fs";
import { readdir, readFile, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { spawnService, startStack, waitFor, type ServiceProcess, type Stack } from "@reclaim/testkit";
import {
  addWorktree,
  git,
  gitEnv,
  insertGitWorkspace,
  insertIssue,
  insertProjectRepository,
  makeProject,
} from "@reclaim/testkit/src/fixtures/git-workspaces";
import { repoFacts } from "../../../shared/test/git/round-trip";
import { addNestedClone, checkoutFacts } from "./git-restore-points.fixtures";

const POINTS = [
  "git-restore-points.registered",
  "git-restore-points.uploaded",
  "git-restore-points.read-back",
  "git-restore-points.saved",
  "git-restore-points.verified",
  "git-restore-points.before-commit",
  "git-restore-points.archived",
  "git-restore-points.renamed-unverified",
  "git-restore-points.renamed-aside",
  "git-restore-points.registrations-removed",
  "git-restore-points.deleted",
];

let stack: Stack;
const processes: ServiceProcess[] = [];

beforeAll(async () => {
  // The scheduler in this process; workers are child processes that give up a dead worker's
  // job after 3 s.
  stack = await startStack({
    worker: false,
    env: gitEnv(true, { RECLAIM_JOB_LOCK_MS: "3000", RECLAIM_STALLED_INTERVAL_MS: "1000" }),
  });
});
afterAll(async () => {
  for (const p of processes.splice(0)) {
    p.kill("SIGKILL");
    await p.exited;
  }
  await stack?.stop();
});

function worker(extra: Record<string, string> = {}): ServiceProcess {
  const p = spawnService("worker", { ...stack.env, RECLAIM_LOG_LEVEL: "info", ...extra });
  processes.push(p);
  return p;
}

/** The scratch directories (process/scratch.ts) of worker `p`. */
async function scratchOf(p: ServiceProcess): Promise<string[]> {
  return (await readdir(os.tmpdir())).filter((name) => name.startsWith(`reclaim-${p.child.pid}-`));
}

/** Is there a verified active restore point (read back and hash-checked before activation)? */
async function activePoints(workspaceId: string): Promise<number> {
  return stack.db.executionWorkspaceRestorePoint.count({
    where: { executionWorkspaceId: workspaceId, status: "active", sha256: { not: null } },
  });
}

it.each(POINTS)(
  "killed at %s: the worktree or an active restore point always exists, and the next worker finishes",
  async (point) => {
    const project = await makeProject(stack.instanceRoot);
    const branch = `task-${point.split(".")[1]}`;
    const wt = await addWorktree(project, branch);
    await writeFile(path.join(wt, "work.txt"), "unpushed\n");
    await git(wt, ["add", "work.txt"]);
    await git(wt, ["commit", "-q", "-m", "unpushed"]);
    await writeFile(path.join(wt, "notes.md"), "untracked\n");
    await writeFile(path.join(wt, "README.md"), "changed\n");
    const before = await repoFacts(wt, { leaveOut: true });
    const issue = await insertIssue(stack.db, project.companyId, { closedDaysAgo: 5 });
    const ws = await insertGitWorkspace(stack.db, { project, cwd: wt, branch, sourceIssueId: issue });

    const marker = path.join(stack.instanceRoot, `marker-${branch}`);
    const doomed = worker({ RECLAIM_FAULT_POINTS: `${point}=kill`, RECLAIM_FAULT_MARKER: marker });
    await doomed.waitForOutput(/"msg":"worker ready"/);
    await stack.api("POST", "/v1/events", {
      events: [{ type: "issue.changed", companyId: project.companyId, issueId: issue }],
    });
    expect((await doomed.exited).signal).toBe("SIGKILL");
    expect(await readFile(marker, "utf8")).toBe(`${point}\n`);
    // Nothing is lost at the moment of the kill.
    expect(existsSync(wt) || (await activePoints(ws)) > 0).toBe(true);
    // The capture's work files stayed behind in the killed worker's scratch directory...
    expect(await scratchOf(doomed)).toHaveLength(1);

    const healthy = worker();
    await healthy.waitForOutput(/"msg":"worker ready"/);
    // ...which the next worker removed as it started.
    expect(await scratchOf(doomed)).toEqual([]);
    await waitFor(
      async () => {
        const row = await stack.db.executionWorkspace.findUniqueOrThrow({ where: { id: ws } });
        const m = (row.metadata ?? {}) as Record<string, unknown>;
        return row.status === "archived" && m.gitCacheExpirationRemoval == null && !existsSync(wt);
      },
      { what: "the expiration finished by the next worker", timeoutMs: 60_000 },
    );
    expect(await activePoints(ws)).toBe(1);
    // No leftover beside it: the renamed tree was deleted, the registration removed.
    const siblings = await import("node:fs/promises").then((fs) => fs.readdir(path.dirname(wt)));
    expect(siblings.filter((n) => n.startsWith(".expired-") || n === branch)).toEqual([]);
    expect(await git(project.clone, ["worktree", "list", "--porcelain"])).not.toContain(branch);

    const reopened = await stack.api(
      "POST",
      `/v1/companies/${project.companyId}/execution-workspaces/${ws}/reopen?wait=90`,
      { reason: "run" },
    );
    expect(reopened.body).toEqual(expect.objectContaining({ outcome: "restored", path: wt }));
    expect(await repoFacts(wt, { leaveOut: true })).toEqual(before);
    healthy.kill("SIGTERM");
    await healthy.exited;
  },
  150_000,
);

/**
 * Rule: SIGKILL of the worker during a reopen loses nothing either. Killed after the checkout
 * was built and applied beside its path (`staged`), or after the main checkout was moved into
 * place and before its nested checkout and the reactivation (`restored`): the workspace stays
 * closed with its verified active restore points, and the retried reopen (another worker picks
 * the job up) brings back every byte of the checkout and its nested clone, with no
 * `.restoring-*` checkout or registration left behind.
 */
it.each(["git-restore-points.staged", "git-restore-points.restored"])(
  "a reopen killed at %s keeps the restore points, and the retried reopen brings back every byte",
  async (point) => {
    const project = await makeProject(stack.instanceRoot);
    const branch = `reopen-${point.split(".")[1]}`;
    const wt = await addWorktree(project, branch);
    await writeFile(path.join(wt, "work.txt"), "unpushed\n");
    await git(wt, ["add", "work.txt"]);
    await git(wt, ["commit", "-q", "-m", "unpushed"]);
    await writeFile(path.join(wt, "notes.md"), "untracked\n");
    await writeFile(path.join(wt, "README.md"), "changed\n");
    const lib = await makeProject(
      stack.instanceRoot,
      { "lib.ts": "export {};\n" },
      { companyId: project.companyId },
    );
    await insertProjectRepository(stack.db, project, project.remote);
    await insertProjectRepository(stack.db, project, lib.remote);
    const nested = await addNestedClone(lib, wt, "lib-1");
    await writeFile(path.join(nested, "lib.ts"), "export const n = 1;\n");
    await git(nested, ["commit", "-q", "-am", "nested unpushed"]);
    const before = [await checkoutFacts(wt), await checkoutFacts(nested)];
    const issue = await insertIssue(stack.db, project.companyId, { closedDaysAgo: 5 });
    const ws = await insertGitWorkspace(stack.db, { project, cwd: wt, branch, sourceIssueId: issue });

    const expiring = worker();
    await expiring.waitForOutput(/"msg":"worker ready"/);
    await stack.api("POST", "/v1/events", {
      events: [{ type: "issue.changed", companyId: project.companyId, issueId: issue }],
    });
    await waitFor(
      async () => {
        const row = await stack.db.executionWorkspace.findUniqueOrThrow({ where: { id: ws } });
        const m = (row.metadata ?? {}) as Record<string, unknown>;
        return row.status === "archived" && m.gitCacheExpirationRemoval === null && !existsSync(wt);
      },
      { what: "the expiration", timeoutMs: 90_000 },
    );
    expect(await activePoints(ws)).toBe(2);
    expiring.kill("SIGTERM");
    await expiring.exited;

    const marker = path.join(stack.instanceRoot, `marker-${branch}`);
    const doomed = worker({ RECLAIM_FAULT_POINTS: `${point}=kill`, RECLAIM_FAULT_MARKER: marker });
    await doomed.waitForOutput(/"msg":"worker ready"/);
    const queued = await stack.api(
      "POST",
      `/v1/companies/${project.companyId}/execution-workspaces/${ws}/reopen`,
      { reason: "run" },
    );
    expect(queued.status).toBe(202);
    expect((await doomed.exited).signal).toBe("SIGKILL");
    expect(await readFile(marker, "utf8")).toBe(`${point}\n`);
    // Nothing is lost at the moment of the kill: still closed, both restore points active.
    const closed = await stack.db.executionWorkspace.findUniqueOrThrow({ where: { id: ws } });
    expect(closed.status).toBe("archived");
    expect(await activePoints(ws)).toBe(2);

    const healthy = worker();
    const finished = await waitFor(
      async () => {
        const job = await stack.api("GET", `/v1/jobs/${queued.body.jobId}`);
        return job.body.state === "completed" ? job.body : null;
      },
      { what: "the retried reopen", timeoutMs: 120_000 },
    );
    expect(["restored", "already_applied"]).toContain(finished.result.outcome);
    expect(finished.result.path).toBe(wt);
    expect([await checkoutFacts(wt), await checkoutFacts(nested)]).toEqual(before);
    const row = await stack.db.executionWorkspace.findUniqueOrThrow({ where: { id: ws } });
    expect(row.status).toBe("active");
    expect(await activePoints(ws)).toBe(0);
    expect((await readdir(path.dirname(wt))).filter((n) => n.startsWith("."))).toEqual([]);
    expect((await readdir(path.dirname(nested))).filter((n) => n.startsWith("."))).toEqual([]);
    expect(await git(project.clone, ["worktree", "list", "--porcelain"])).not.toContain(".restoring-");
    healthy.kill("SIGTERM");
    await healthy.exited;
  },
  240_000,
);
