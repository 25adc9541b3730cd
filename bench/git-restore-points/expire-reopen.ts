/**
 * Git workspaces expired and reopened per second: 50 worktrees of one 5,000-file repository
 * (1 KiB files in 100 folders), each with an unpushed commit, a modified file and an untracked
 * file, in restore-point mode through the real scheduler and worker (judge under the company
 * lock, Paperclip's locks, git's lock files, capture, seal, local_disk upload, read back and
 * hash, verify under the locks, activate + archive, rename aside, delete), then reopened
 * through the reopen route (re-add the worktree, import the bundle, apply, verify, reactivate).
 * The baseline, in the same run and on the same shared clone: `git worktree add` and
 * `git worktree remove --force` of the same number of worktrees of the same repository.
 *
 *   npx tsx bench/git-restore-points/expire-reopen.ts     (BENCH_WORKSPACES, BENCH_FILES to scale)
 */
import { randomBytes, randomUUID } from "node:crypto";
import { writeFile } from "node:fs/promises";
import path from "node:path";
import { createLogger } from "@reclaim/core";
import { applyMigrations } from "@reclaim/core/src/db/migrate";
import { createEmptyDatabase, startStack } from "@reclaim/testkit";
import {
  addWorktree,
  git,
  gitEnv,
  insertGitWorkspace,
  insertIssue,
  makeProject,
} from "@reclaim/testkit/src/fixtures/git-workspaces";

const WORKSPACES = Number(process.env.BENCH_WORKSPACES ?? 50);
const FILES = Number(process.env.BENCH_FILES ?? 5000);
const COMPANIES = 10;
const FOLDERS = 100;

function repositoryFiles(): Record<string, string> {
  const files: Record<string, string> = {};
  for (let i = 0; i < FILES; i++) {
    files[`folder-${i % FOLDERS}/file-${i}.txt`] = randomBytes(512).toString("hex");
  }
  return files;
}

const seconds = (since: number) => (performance.now() - since) / 1000;

async function countWhere(stack: Awaited<ReturnType<typeof startStack>>, sql: string): Promise<number> {
  const rows = await stack.db.$queryRawUnsafe<{ n: bigint }[]>(sql);
  return Number(rows[0]!.n);
}

async function main() {
  const database = await createEmptyDatabase();
  await applyMigrations(database.url);
  const stack = await startStack({
    database,
    env: gitEnv(true, { RECLAIM_LOG_LEVEL: "error" }),
    log: createLogger((process.env.BENCH_LOG as "warn") ?? "error"),
  });
  try {
    const project = await makeProject(stack.instanceRoot, repositoryFiles());

    // Baseline: add and remove the same number of worktrees of the same shared clone.
    const baseline = Array.from({ length: WORKSPACES }, (_, i) =>
      path.join(project.clone, ".paperclip", "worktrees", `baseline-${i}`),
    );
    let since = performance.now();
    for (const [i, dir] of baseline.entries()) {
      await git(project.clone, ["worktree", "add", "-q", "-b", `baseline-${i}`, dir, "origin/main"]);
    }
    const addSeconds = seconds(since);
    since = performance.now();
    for (const dir of baseline) await git(project.clone, ["worktree", "remove", "--force", dir]);
    const removeSeconds = seconds(since);

    // The workspaces (not timed): closed issues of 10 companies, each worktree with unpushed work.
    const companies = Array.from({ length: COMPANIES }, () => randomUUID());
    const workspaces: { companyId: string; issueId: string; ws: string; wt: string }[] = [];
    for (let i = 0; i < WORKSPACES; i++) {
      const companyId = companies[i % COMPANIES]!;
      const wt = await addWorktree(project, `task-${i}`);
      await writeFile(path.join(wt, "work.txt"), `unpushed ${i}\n`);
      await git(wt, ["add", "work.txt"]);
      await git(wt, ["commit", "-q", "-m", `unpushed ${i}`]);
      await writeFile(path.join(wt, "folder-0", "file-0.txt"), `modified ${i}\n`);
      await writeFile(path.join(wt, "notes.md"), `untracked ${i}\n`);
      const issueId = await insertIssue(stack.db, companyId, { closedDaysAgo: 5 });
      const ws = await insertGitWorkspace(stack.db, {
        project: { ...project, companyId },
        cwd: wt,
        branch: `task-${i}`,
        sourceIssueId: issueId,
      });
      workspaces.push({ companyId, issueId, ws, wt });
    }

    since = performance.now();
    await stack.api("POST", "/v1/events", {
      events: workspaces.map((w) => ({ type: "issue.changed", companyId: w.companyId, issueId: w.issueId })),
    });
    const expiredSql = `SELECT count(*) AS n FROM execution_workspaces
       WHERE status = 'archived' AND jsonb_typeof(metadata -> 'gitCacheExpirationRemoval') = 'null'`;
    while ((await countWhere(stack, expiredSql)) < WORKSPACES) await new Promise((r) => setTimeout(r, 200));
    const expireSeconds = seconds(since);

    since = performance.now();
    const answers = await Promise.all(
      workspaces.map((w) =>
        stack.api("POST", `/v1/companies/${w.companyId}/execution-workspaces/${w.ws}/reopen?wait=120`, {
          reason: "run",
        }),
      ),
    );
    const reopenSeconds = seconds(since);
    const restored = answers.filter((a) => a.body?.outcome === "restored").length;
    if (restored !== WORKSPACES)
      throw new Error(
        `${restored} of ${WORKSPACES} reopens restored: ${JSON.stringify(answers.map((a) => a.body))}`,
      );

    const rate = (s: number) => Number((WORKSPACES / s).toFixed(2));
    console.log(
      JSON.stringify({
        benchmark: "git-restore-points/expire-reopen",
        workspaces: WORKSPACES,
        filesPerRepository: FILES,
        expiredPerSecond: rate(expireSeconds),
        reopenedPerSecond: rate(reopenSeconds),
        worktreeRemovePerSecond: rate(removeSeconds),
        worktreeAddPerSecond: rate(addSeconds),
        expireVsRemove: Number((removeSeconds / expireSeconds).toFixed(3)),
        reopenVsAdd: Number((addSeconds / reopenSeconds).toFixed(3)),
        cycleRatio: Number(((addSeconds + removeSeconds) / (expireSeconds + reopenSeconds)).toFixed(3)),
        seconds: {
          expire: Number(expireSeconds.toFixed(1)),
          reopen: Number(reopenSeconds.toFixed(1)),
          add: Number(addSeconds.toFixed(1)),
          remove: Number(removeSeconds.toFixed(1)),
        },
      }),
    );
  } finally {
    await stack.stop();
  }
}

void main().then(
  () => process.exit(0),
  (error) => {
    console.error(error);
    process.exit(1);
  },
);
