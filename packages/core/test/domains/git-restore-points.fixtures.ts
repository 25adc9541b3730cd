/**
 * Helpers of the git-restore-points tests: nested `.paperclip-repositories` checkouts (a
 * worktree of the repository's shared clone on its own `paperclip/<id>/` branch, or a
 * standalone clone), the payload issue's comparison of a checkout, and the reopen call.
 */
import path from "node:path";
import type { Stack } from "@reclaim/testkit";
import { git, type Project } from "@reclaim/testkit/src/fixtures/git-workspaces";
import { repoFacts } from "../../../shared/test/git/round-trip";

/** The payload issue's comparison of a checkout; nested checkouts are compared on their own. */
export async function checkoutFacts(dir: string): Promise<Record<string, unknown>> {
  const facts = await repoFacts(dir, { leaveOut: true });
  const files = (facts.files as string[]).filter(
    (f) => !f.split(" ").at(-1)!.startsWith(".paperclip-repositories/"),
  );
  return { ...facts, files };
}

/**
 * A nested checkout that is a worktree of `repo`'s shared clone, as Paperclip adds it:
 * `<task>/.paperclip-repositories/<name>` on the branch `paperclip/<id>/main`, tracking
 * `origin/main`.
 */
export async function addNestedWorktree(
  repo: Project,
  task: string,
  name: string,
  id: string,
): Promise<string> {
  const dir = path.join(task, ".paperclip-repositories", name);
  await git(repo.clone, [
    "worktree",
    "add",
    "-q",
    "--track",
    "-b",
    `paperclip/${id}/main`,
    dir,
    "origin/main",
  ]);
  return dir;
}

/** A nested checkout that is a standalone clone of `repo`'s remote (made before nested worktrees). */
export async function addNestedClone(repo: Project, task: string, name: string): Promise<string> {
  const dir = path.join(task, ".paperclip-repositories", name);
  await git(task, ["clone", "-q", repo.remote, dir]);
  return dir;
}

/**
 * Commits that only `refs/remotes/origin/gone` and its reflog hold in `checkout`: a branch
 * fetched, force-pushed, fetched again and then deleted upstream (a squash merge).
 */
export async function remoteDroppedHistory(repo: Project, checkout: string): Promise<void> {
  const seed = path.join(path.dirname(repo.remote), `${repo.projectId}-seed`);
  await git(seed, ["checkout", "-q", "-b", "gone"]);
  await git(seed, ["commit", "-q", "--allow-empty", "-m", "older, force-pushed away"]);
  await git(seed, ["push", "-q", repo.remote, "gone"]);
  await git(checkout, ["fetch", "-q", "origin"]);
  await git(seed, ["commit", "-q", "--amend", "--allow-empty", "-m", "squash-merged, then deleted"]);
  await git(seed, ["push", "-q", "-f", repo.remote, "gone"]);
  await git(checkout, ["fetch", "-q", "origin"]);
  await git(seed, ["push", "-q", repo.remote, ":gone"]);
  await git(seed, ["checkout", "-q", "main"]);
}

/** POST .../reopen?wait=90, the finished answer. */
export async function reopen(
  stack: Stack,
  companyId: string,
  workspaceId: string,
  reason: "run" | "comment" | "agent_update" = "run",
) {
  const r = await stack.api(
    "POST",
    `/v1/companies/${companyId}/execution-workspaces/${workspaceId}/reopen?wait=90`,
    { reason },
  );
  if (r.status !== 200) throw new Error(`reopen answered ${r.status}: ${r.text}`);
  return r.body as {
    outcome: string;
    path: string;
    reason?: string;
    warning?: string;
    restorePointId?: string;
  };
}

/** Paperclip's run consumed the reopen (its pending flag cleared), as the server does. */
export async function consumeReopen(stack: Stack, workspaceId: string): Promise<void> {
  const row = await stack.db.executionWorkspace.findUniqueOrThrow({ where: { id: workspaceId } });
  const metadata = { ...((row.metadata ?? {}) as Record<string, unknown>) };
  delete metadata.reopenPendingConsumption;
  delete metadata.reopenPendingConsumptionSince;
  await stack.db.executionWorkspace.update({
    where: { id: workspaceId },
    data: { metadata: metadata as object },
  });
}
