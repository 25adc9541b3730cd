/**
 * Rule (issue 10 "Git safety", for every git command the domain runs): what an agent can
 * plant in the repositories it controls, or what the service inherited in its environment,
 * never runs while Reclaim expires and reopens a workspace. Planted in the shared clones and
 * the nested clone: hooks in `.git/hooks`, `core.fsmonitor`, `core.sshCommand`, a
 * credential helper, `include.path` / `includeIf` files naming a filter and a textconv, and
 * (after the expiration, before the reopen checks files out) a filter driver with
 * `info/attributes` assigning it to every path. In the worker's environment: `GIT_DIR` /
 * `GIT_WORK_TREE` / `GIT_INDEX_FILE` of a decoy repository, `GIT_CONFIG_PARAMETERS`,
 * `GIT_CONFIG_GLOBAL`, `XDG_CONFIG_HOME` and `GIT_TEMPLATE_DIR` (its hooks would be copied
 * into every clone the reopen makes). Each plant writes a marker file when it runs; the
 * expiration (survey, git's lock files, captures, the locked verification, the removal of
 * registrations and of the nested worktree's branch) and the reopen (worktree add, clone,
 * apply, worktree move, the upstream set again) leave the marker directory empty. Plain git
 * afterwards runs the plants (the test can fail), and the restored checkouts are byte for byte
 * the originals.
 */
import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { chmod, mkdir, mkdtemp, readdir, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { createLogger } from "@reclaim/core";
import { startStack, waitFor, type Stack } from "@reclaim/testkit";
import {
  addWorktree,
  git,
  gitEnv,
  insertGitWorkspace,
  insertIssue,
  insertProjectRepository,
  makeProject,
  wakeIssue,
} from "@reclaim/testkit/src/fixtures/git-workspaces";
import { addNestedClone, addNestedWorktree, checkoutFacts, reopen } from "./git-restore-points.fixtures";

const run = promisify(execFile);

const HOOKS = [
  "post-checkout",
  "reference-transaction",
  "post-index-change",
  "pre-commit",
  "post-commit",
  "post-rewrite",
  "pre-auto-gc",
  "post-merge",
  "pre-push",
  "push-to-checkout",
];

/** The planted filter on most paths, the included one on Markdown files, the included textconv on all. */
const ATTRIBUTES = "* filter=evil diff=sneaky\n*.md filter=sneaky\n";

let stack: Stack;
const roots: string[] = [];
beforeAll(async () => {
  stack = await startStack({ env: gitEnv(true), log: createLogger("error") });
});
afterAll(async () => {
  await stack?.stop();
  for (const dir of roots) await rm(dir, { recursive: true, force: true });
});

/** A script that records its name in `markers` when anything runs it (a filter passes its input through). */
async function script(dir: string, markers: string, name: string, passThrough = false): Promise<string> {
  const file = path.join(dir, `${name}.sh`);
  await writeFile(file, `#!/bin/sh\ntouch '${markers}/${name}'\n${passThrough ? "cat\n" : ""}`);
  await chmod(file, 0o755);
  return file;
}

/** Hooks, fsmonitor, ssh command, credential helper and includes in `repo`'s own config and hooks directory. */
async function plantRepository(repo: string, plants: string, markers: string, tag: string): Promise<void> {
  const gitDir = (await git(repo, ["rev-parse", "--absolute-git-dir"])).trim();
  await mkdir(path.join(gitDir, "hooks"), { recursive: true });
  for (const hook of HOOKS) {
    const file = path.join(gitDir, "hooks", hook);
    await writeFile(file, `#!/bin/sh\ntouch '${markers}/${tag}-hook-${hook}'\n`);
    await chmod(file, 0o755);
  }
  await git(repo, ["config", "core.fsmonitor", await script(plants, markers, `${tag}-fsmonitor`)]);
  await git(repo, ["config", "core.sshCommand", await script(plants, markers, `${tag}-ssh`)]);
  await git(repo, ["config", "credential.helper", `!${await script(plants, markers, `${tag}-credential`)}`]);
  const included = await script(plants, markers, `${tag}-include`, true);
  const includeFile = path.join(plants, `${tag}-included.cfg`);
  await writeFile(
    includeFile,
    `[filter "sneaky"]\n\tclean = ${included}\n\tsmudge = ${included}\n` +
      `[diff "sneaky"]\n\ttextconv = ${await script(plants, markers, `${tag}-textconv`)}\n`,
  );
  await git(repo, ["config", "include.path", includeFile]);
  await git(repo, ["config", `includeIf.gitdir:${path.dirname(gitDir)}/.path`, includeFile]);
}

/** A filter driver on every path of `repo` (its common `info/attributes`), required, clean and smudge planted. */
async function plantFilter(repo: string, plants: string, markers: string, tag: string): Promise<string> {
  const common = path.resolve(repo, (await git(repo, ["rev-parse", "--git-common-dir"])).trim());
  const filter = await script(plants, markers, `${tag}-filter`, true);
  await git(repo, ["config", "filter.evil.clean", filter]);
  await git(repo, ["config", "filter.evil.smudge", filter]);
  await git(repo, ["config", "filter.evil.required", "true"]);
  await mkdir(path.join(common, "info"), { recursive: true });
  const attributes = path.join(common, "info", "attributes");
  await writeFile(attributes, ATTRIBUTES);
  return attributes;
}

/** What the service's own environment could carry into git: every variable points at a plant. */
async function plantedEnvironment(plants: string, markers: string): Promise<Record<string, string>> {
  const decoy = path.join(plants, "decoy");
  await git(plants, ["init", "-q", decoy]);
  await writeFile(path.join(decoy, "a.txt"), "decoy\n");
  await git(decoy, ["add", "a.txt"]);
  await git(decoy, ["commit", "-q", "-m", "decoy"]);
  await writeFile(
    path.join(decoy, ".git", "hooks", "post-checkout"),
    `#!/bin/sh\ntouch '${markers}/env-decoy'\n`,
  );
  await chmod(path.join(decoy, ".git", "hooks", "post-checkout"), 0o755);
  const hooks = path.join(plants, "env-hooks");
  await mkdir(hooks);
  for (const hook of HOOKS) {
    await writeFile(path.join(hooks, hook), `#!/bin/sh\ntouch '${markers}/env-hook-${hook}'\n`);
    await chmod(path.join(hooks, hook), 0o755);
  }
  const template = path.join(plants, "template");
  await mkdir(path.join(template, "hooks"), { recursive: true });
  for (const hook of HOOKS) {
    await writeFile(
      path.join(template, "hooks", hook),
      `#!/bin/sh\ntouch '${markers}/template-hook-${hook}'\n`,
    );
    await chmod(path.join(template, "hooks", hook), 0o755);
  }
  const fsmonitor = await script(plants, markers, "env-fsmonitor");
  const global = path.join(plants, "global.cfg");
  await writeFile(
    global,
    `[core]\n\thooksPath = ${hooks}\n\tfsmonitor = ${await script(plants, markers, "global-fsmonitor")}\n` +
      `[init]\n\ttemplateDir = ${template}\n`,
  );
  const xdg = path.join(plants, "xdg");
  await mkdir(path.join(xdg, "git"), { recursive: true });
  await writeFile(
    path.join(xdg, "git", "config"),
    `[core]\n\thooksPath = ${hooks}\n\tfsmonitor = ${await script(plants, markers, "xdg-fsmonitor")}\n`,
  );
  return {
    GIT_DIR: path.join(decoy, ".git"),
    GIT_WORK_TREE: decoy,
    GIT_INDEX_FILE: path.join(decoy, ".git", "index"),
    GIT_CONFIG_PARAMETERS: `'core.fsmonitor'='${fsmonitor}' 'core.hookspath'='${hooks}'`,
    GIT_CONFIG_GLOBAL: global,
    GIT_CONFIG_NOSYSTEM: "0",
    XDG_CONFIG_HOME: xdg,
    GIT_TEMPLATE_DIR: template,
  };
}

/** Runs `fn` with `planted` in this process's environment (the in-process worker inherits it). */
async function withEnvironment<T>(planted: Record<string, string>, fn: () => Promise<T>): Promise<T> {
  const saved = Object.fromEntries(Object.keys(planted).map((k) => [k, process.env[k]]));
  Object.assign(process.env, planted);
  try {
    return await fn();
  } finally {
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  }
}

it("expiration and reopen run none of the hooks, fsmonitor, filters, includes, ssh command, credential helper or GIT_* variables an agent or the environment planted", async () => {
  const project = await makeProject(stack.instanceRoot);
  const wt = await addWorktree(project, "task-planted");
  await writeFile(path.join(wt, "work.txt"), "unpushed\n");
  await git(wt, ["add", "work.txt"]);
  await git(wt, ["commit", "-q", "-m", "unpushed"]);
  await writeFile(path.join(wt, "README.md"), "staged\n");
  await git(wt, ["add", "README.md"]);
  await writeFile(path.join(wt, "notes.md"), "untracked\n");
  await insertProjectRepository(stack.db, project, project.remote);
  // A nested worktree of another repository's shared clone (its own branch is deleted on
  // expiration and added again on reopen), and a nested standalone clone (cloned again).
  const lib = await makeProject(
    stack.instanceRoot,
    { "lib.ts": "export {};\n" },
    { companyId: project.companyId },
  );
  await insertProjectRepository(stack.db, project, lib.remote);
  const nestedWt = await addNestedWorktree(lib, wt, "lib-1", "p1");
  await git(nestedWt, ["commit", "-q", "--allow-empty", "-m", "nested unpushed"]);
  const tools = await makeProject(
    stack.instanceRoot,
    { "tool.ts": "export {};\n" },
    { companyId: project.companyId },
  );
  await insertProjectRepository(stack.db, project, tools.remote);
  const nestedClone = await addNestedClone(tools, wt, "tools-1");
  await writeFile(path.join(nestedClone, "tool.ts"), "export const t = 1;\n");
  await git(nestedClone, ["commit", "-q", "-am", "nested clone unpushed"]);
  const issue = await insertIssue(stack.db, project.companyId, { closedDaysAgo: 4 });
  const ws = await insertGitWorkspace(stack.db, {
    project,
    cwd: wt,
    branch: "task-planted",
    sourceIssueId: issue,
  });
  const before = [await checkoutFacts(wt), await checkoutFacts(nestedWt), await checkoutFacts(nestedClone)];

  const plants = await mkdtemp(path.join(os.tmpdir(), "reclaim-plants-"));
  roots.push(plants);
  const markers = path.join(plants, "markers");
  await mkdir(markers, { recursive: true });
  await plantRepository(project.clone, plants, markers, "clone");
  await plantRepository(lib.clone, plants, markers, "lib");
  await plantRepository(nestedClone, plants, markers, "nested");
  const environment = await plantedEnvironment(plants, markers);
  expect(await readdir(markers)).toEqual([]);

  await withEnvironment(environment, async () => {
    await wakeIssue(stack, project.companyId, issue);
    await waitFor(async () => !existsSync(wt), { what: "the planted worktree removed", timeoutMs: 90_000 });
    await waitFor(
      async () => {
        const row = await stack.db.executionWorkspace.findUniqueOrThrow({ where: { id: ws } });
        return (row.metadata as Record<string, unknown>).gitCacheExpirationRemoval === null;
      },
      { what: "the removal finished", timeoutMs: 60_000 },
    );
  });
  // The nested worktree's branch went through `update-ref -d` (reference-transaction would run).
  expect(await git(lib.clone, ["for-each-ref", "--format=%(refname)", "refs/heads/paperclip/p1"])).toBe("");
  expect(await readdir(markers)).toEqual([]);

  // Before the reopen checks files out: a required filter on every path of both shared clones.
  const attributes = [
    await plantFilter(project.clone, plants, markers, "clone"),
    await plantFilter(lib.clone, plants, markers, "lib"),
  ];
  const answer = await withEnvironment(environment, () => reopen(stack, project.companyId, ws));
  expect(answer).toEqual(expect.objectContaining({ outcome: "restored", path: wt }));
  expect(await readdir(markers)).toEqual([]);
  // The re-cloned nested clone got no hook from the planted template directory.
  expect(
    (await readdir(path.join(nestedClone, ".git", "hooks"))).filter((n) => !n.endsWith(".sample")),
  ).toEqual([]);

  // The restored checkouts compared with the plants off (plain git would run them).
  for (const file of attributes) await rm(file);
  for (const clone of [project.clone, lib.clone]) await git(clone, ["config", "--unset", "core.fsmonitor"]);
  expect([await checkoutFacts(wt), await checkoutFacts(nestedWt), await checkoutFacts(nestedClone)]).toEqual(
    before,
  );

  // The plants are live: plain git runs them (the test can fail).
  await git(project.clone, ["config", "core.fsmonitor", path.join(plants, "clone-fsmonitor.sh")]);
  await writeFile(attributes[0]!, ATTRIBUTES);
  await rm(markers, { recursive: true });
  await mkdir(markers);
  await git(wt, ["status", "--porcelain"]);
  await rm(path.join(wt, "src", "app.ts"));
  await git(wt, ["checkout", "-q", "--", "src/app.ts"]);
  await writeFile(path.join(wt, "probe.txt"), "probe\n");
  await git(wt, ["add", "-A"]);
  await git(wt, ["checkout", "-q", "-b", "probe"]);
  await git(nestedWt, ["update-ref", "refs/heads/probe", "HEAD"]);
  const decoy = path.join(plants, "decoy");
  const plainEnv = { PATH: process.env.PATH, HOME: plants, ...environment };
  await run("git", ["status", "--porcelain"], { cwd: decoy, env: plainEnv });
  await run("git", ["checkout", "-q", "-b", "probe"], { cwd: decoy, env: plainEnv });
  const ran = await readdir(markers);
  for (const name of [
    "clone-fsmonitor",
    "clone-filter",
    "clone-include",
    "clone-hook-post-checkout",
    "clone-hook-reference-transaction",
    "lib-hook-reference-transaction",
    "env-fsmonitor",
    "env-hook-post-checkout",
  ]) {
    expect(ran).toContain(name);
  }
}, 240_000);

it("the reopen's fetch into a shared clone is never redirected by the clone's url.<x>.insteadOf (it fetches from the recorded repository only)", async () => {
  const project = await makeProject(stack.instanceRoot);
  const wt = await addWorktree(project, "task-redirected");
  await writeFile(path.join(wt, "pushed.txt"), "pushed\n");
  await git(wt, ["add", "pushed.txt"]);
  await git(wt, ["commit", "-q", "-m", "pushed"]);
  await git(wt, ["push", "-q", "origin", "task-redirected"]);
  const head = (await git(wt, ["rev-parse", "HEAD"])).trim();
  const issue = await insertIssue(stack.db, project.companyId, { closedDaysAgo: 4 });
  const ws = await insertGitWorkspace(stack.db, {
    project,
    cwd: wt,
    branch: "task-redirected",
    sourceIssueId: issue,
  });
  await wakeIssue(stack, project.companyId, issue);
  await waitFor(async () => !existsSync(wt), {
    what: "the reproducible worktree removed",
    timeoutMs: 60_000,
  });
  await waitFor(
    async () => {
      const row = await stack.db.executionWorkspace.findUniqueOrThrow({ where: { id: ws } });
      return (row.metadata as Record<string, unknown>).gitCacheExpirationRemoval === null;
    },
    { what: "the removal finished" },
  );
  // Another agent drops the branch from the shared clone and prunes it: the reopen must fetch.
  await git(project.clone, ["branch", "-q", "-D", "task-redirected"]);
  await git(project.clone, ["update-ref", "-d", "refs/remotes/origin/task-redirected"]);
  await git(project.clone, ["reflog", "expire", "--expire=now", "--all"]);
  await git(project.clone, ["gc", "-q", "--prune=now"]);
  await expect(git(project.clone, ["cat-file", "-e", `${head}^{commit}`])).rejects.toThrow();
  // …and redirects the repository's URL to one of its own.
  const plants = await mkdtemp(path.join(os.tmpdir(), "reclaim-plants-"));
  roots.push(plants);
  const evil = path.join(plants, "evil.git");
  await git(plants, ["init", "-q", "--bare", evil]);
  const seed = path.join(plants, "seed");
  await git(plants, ["init", "-q", seed]);
  await git(seed, ["commit", "-q", "--allow-empty", "-m", "planted"]);
  await git(seed, ["push", "-q", evil, "HEAD:refs/heads/planted-marker"]);
  await git(project.clone, ["config", `url.${evil}.insteadOf`, project.remote]);
  // Plain git in the clone follows the redirect (the test can fail).
  expect(await git(project.clone, ["ls-remote", project.remote])).toContain("planted-marker");

  expect(await reopen(stack, project.companyId, ws)).toEqual(
    expect.objectContaining({ outcome: "restored", path: wt }),
  );
  expect((await git(wt, ["rev-parse", "HEAD"])).trim()).toBe(head);
  expect(await git(project.clone, ["for-each-ref", "--format=%(refname)"])).not.toContain("planted-marker");
});
