/**
 * Filesystem reads of one git workspace, outside any lock: where its checkout is, what kind
 * of repository it is (a worktree of a shared clone, or a standalone clone), which nested
 * `.paperclip-repositories/<name>` checkouts it holds, and its allocated bytes.
 *
 * Agents control these trees, so nothing here trusts them:
 *  - the checkout (`cwd`) must lie below the instance root with no symbolic link on the way
 *    down, and be a real directory (`unsafe_workspace_path`);
 *  - its git directory must be where Paperclip puts it: `<cwd>/.git` for a clone; for a
 *    worktree, `<clone>/.git/worktrees/<name>` of the clone that holds it at
 *    `<clone>/.paperclip/worktrees/...`, whose `gitdir` file points back at `<cwd>/.git`.
 *    A `.git` file an agent re-pointed at another repository is refused
 *    (`unexpected_git_layout`): expiration deletes the registration it names;
 *  - a nested checkout is a real directory with a `.git`; a worktree one must belong to a
 *    clone below the instance root and point back at itself the same way.
 */
import { lstat, readdir, readFile, realpath } from "node:fs/promises";
import path from "node:path";
import { errnoCode, openSafeRepository, type SafeRepository } from "@reclaim/shared";
import { PathRefused, ProvenDir, treeStats } from "../../fs";

export const NESTED_DIR = ".paperclip-repositories";
const MAX_GITDIR_FILE_BYTES = 4096;

export type RepoKind = "worktree" | "clone";

export interface CheckoutSurvey {
  /** Absolute path of the checkout's top level. */
  path: string;
  kind: RepoKind;
  repo: SafeRepository;
  /** The clone a worktree belongs to (its work tree's top level), or the clone itself. */
  clone: string;
  /** The branch HEAD names (`refs/heads/...`), or null when detached. */
  headRef: string | null;
}

export interface NestedSurvey extends CheckoutSurvey {
  /** Its name under `.paperclip-repositories/`. */
  name: string;
}

export type WorkspaceSurvey =
  | { state: "missing" }
  | {
      state: "unsafe";
      reason: "unsafe_workspace_path" | "unexpected_git_layout" | "not_a_git_checkout";
      detail: string;
    }
  | {
      state: "present";
      checkout: CheckoutSurvey;
      nested: NestedSurvey[];
      /** Nested entries that are not checkouts Reclaim can judge (they keep the workspace). */
      unknownNested: string[];
      allocatedBytes: number;
    };

class Unsafe extends Error {
  constructor(
    readonly reason: "unsafe_workspace_path" | "unexpected_git_layout" | "not_a_git_checkout",
    detail: string,
  ) {
    super(detail);
  }
}

/**
 * The directory `target`, proven level by level from `root` (fs/proven-dir.ts: no level is a
 * symbolic link); `missing` when a level does not exist, `unsafe` when one is a link or not a
 * directory, or `target` is not strictly below `root`.
 */
export async function provenDirBelow(
  root: string,
  target: string,
): Promise<ProvenDir | "missing" | "unsafe"> {
  const rel = path.relative(root, target);
  if (rel === "" || rel.startsWith("..") || path.isAbsolute(rel)) return "unsafe";
  let dir = await ProvenDir.top(root).catch(() => null);
  if (dir === null) return "missing";
  try {
    for (const part of rel.split(path.sep)) {
      const next: ProvenDir | null = await dir.child(part);
      if (next === null) return "missing";
      dir = next;
    }
  } catch (error) {
    if (error instanceof PathRefused) return "unsafe";
    throw error;
  }
  return dir;
}

export async function realDirectoryBelow(root: string, target: string): Promise<"ok" | "missing" | "unsafe"> {
  const dir = await provenDirBelow(root, target);
  return typeof dir === "string" ? dir : "ok";
}

async function readGitdirFile(file: string): Promise<string | null> {
  try {
    const stat = await lstat(file);
    if (!stat.isFile() || stat.size > MAX_GITDIR_FILE_BYTES) return null;
    return (await readFile(file, "utf8")).trim();
  } catch (error) {
    if (errnoCode(error) === "ENOENT") return null;
    throw error;
  }
}

/** Opens `dir` and checks its git directory is where Paperclip puts it (see the header). */
export async function openCheckout(instanceRoot: string, dir: string): Promise<CheckoutSurvey> {
  const dotGit = await lstat(path.join(dir, ".git")).catch(() => null);
  if (dotGit === null) throw new Unsafe("not_a_git_checkout", `${dir} has no .git`);
  if (dotGit.isSymbolicLink()) throw new Unsafe("unexpected_git_layout", `${dir}/.git is a symbolic link`);
  let repo: SafeRepository;
  try {
    repo = await openSafeRepository(dir);
  } catch (error) {
    throw new Unsafe("not_a_git_checkout", (error as Error).message);
  }
  const real = await realpath(dir);
  if (repo.worktree !== real)
    throw new Unsafe("unexpected_git_layout", `${dir} is not its repository's top level`);
  const headRef = await repo
    .git(["symbolic-ref", "-q", "HEAD"], { okCodes: [0, 1] })
    .then((r) => (r.code === 0 ? r.stdout.toString().trim() : null));
  if (!repo.linked) {
    if (!dotGit.isDirectory() || repo.gitDir !== path.join(real, ".git") || repo.commonDir !== repo.gitDir) {
      throw new Unsafe("unexpected_git_layout", `${dir}/.git is not the clone's own git directory`);
    }
    return { path: dir, kind: "clone", repo, clone: dir, headRef };
  }
  // A linked worktree: its clone's git directory is `<clone>/.git`, below the instance root,
  // and the registration points back at this checkout.
  const clone = path.dirname(repo.commonDir);
  const realRoot = await realpath(instanceRoot);
  if (
    path.basename(repo.commonDir) !== ".git" ||
    (await realDirectoryBelow(realRoot, repo.commonDir)) !== "ok"
  ) {
    throw new Unsafe(
      "unexpected_git_layout",
      `${dir} belongs to ${repo.commonDir}, not a clone below the instance`,
    );
  }
  if (path.dirname(repo.gitDir) !== path.join(repo.commonDir, "worktrees")) {
    throw new Unsafe("unexpected_git_layout", `${repo.gitDir} is not a registration of ${clone}`);
  }
  const back = await readGitdirFile(path.join(repo.gitDir, "gitdir"));
  if (back !== path.join(dir, ".git") && back !== path.join(real, ".git")) {
    throw new Unsafe(
      "unexpected_git_layout",
      `${repo.gitDir}/gitdir names ${back ?? "nothing"}, not ${dir}/.git`,
    );
  }
  return { path: dir, kind: "worktree", repo, clone, headRef };
}

export async function surveyWorkspace(
  instanceRoot: string,
  cwd: string,
  signal?: AbortSignal,
): Promise<WorkspaceSurvey> {
  const where = await realDirectoryBelow(instanceRoot, cwd);
  if (where === "missing") return { state: "missing" };
  if (where === "unsafe") {
    return {
      state: "unsafe",
      reason: "unsafe_workspace_path",
      detail: `${cwd} is not a real directory below ${instanceRoot}`,
    };
  }
  try {
    const checkout = await openCheckout(instanceRoot, cwd);
    const nested: NestedSurvey[] = [];
    const unknownNested: string[] = [];
    const nestedRoot = path.join(cwd, NESTED_DIR);
    const rootKind = await lstat(nestedRoot).catch(() => null);
    if (rootKind !== null && !rootKind.isDirectory()) unknownNested.push(NESTED_DIR);
    const names = rootKind?.isDirectory() ? (await readdir(nestedRoot)).sort() : [];
    for (const name of names) {
      try {
        const child = path.join(nestedRoot, name);
        const stat = await lstat(child);
        if (!stat.isDirectory()) throw new Unsafe("unexpected_git_layout", `${child} is not a directory`);
        nested.push({ ...(await openCheckout(instanceRoot, child)), name });
      } catch (error) {
        if (!(error instanceof Unsafe)) throw error;
        unknownNested.push(name);
      }
    }
    const { allocatedBytes } = await treeStats(cwd, signal);
    return { state: "present", checkout, nested, unknownNested, allocatedBytes };
  } catch (error) {
    if (error instanceof Unsafe) return { state: "unsafe", reason: error.reason, detail: error.message };
    throw error;
  }
}
