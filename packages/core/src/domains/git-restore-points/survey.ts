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
 * Every directory listed or read below the instance root is reached level by level without
 * following a link (fs/proven-path.ts), and rechecked after the walk.
 */
import { realpath } from "node:fs/promises";
import path from "node:path";
import { openSafeRepository, type SafeRepository } from "@reclaim/shared";
import { PathRefused, provenDirBelow, treeStats, type Identity, type ProvenDir } from "../../fs";

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
      /** The checkout directory's device and inode, as proven (the removal renames only it). */
      identity: Identity;
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

/** The file `gitdir` of a worktree registration, read without following a link; null when unreadable. */
async function readGitdirFile(realRoot: string, adminDir: string): Promise<string | null> {
  const dir = await provenDirBelow(realRoot, adminDir);
  if (typeof dir === "string") return null;
  const read = await dir.readFile("gitdir", MAX_GITDIR_FILE_BYTES);
  return read.status === "ok" ? read.data.toString("utf8").trim() : null;
}

/** Opens the proven directory `dir` and checks its git directory is where Paperclip puts it (see the header). */
export async function openCheckout(instanceRoot: string, dir: ProvenDir): Promise<CheckoutSurvey> {
  const dotGit = await dir.lstatEntry(".git");
  if (dotGit === null) throw new Unsafe("not_a_git_checkout", `${dir.path} has no .git`);
  if (dotGit.isSymbolicLink())
    throw new Unsafe("unexpected_git_layout", `${dir.path}/.git is a symbolic link`);
  let repo: SafeRepository;
  try {
    repo = await openSafeRepository(dir.path);
  } catch (error) {
    throw new Unsafe("not_a_git_checkout", (error as Error).message);
  }
  const real = await realpath(dir.path);
  if (repo.worktree !== real)
    throw new Unsafe("unexpected_git_layout", `${dir.path} is not its repository's top level`);
  const headRef = await repo
    .git(["symbolic-ref", "-q", "HEAD"], { okCodes: [0, 1] })
    .then((r) => (r.code === 0 ? r.stdout.toString().trim() : null));
  if (!repo.linked) {
    if (!dotGit.isDirectory() || repo.gitDir !== path.join(real, ".git") || repo.commonDir !== repo.gitDir) {
      throw new Unsafe("unexpected_git_layout", `${dir.path}/.git is not the clone's own git directory`);
    }
    return { path: dir.path, kind: "clone", repo, clone: dir.path, headRef };
  }
  // A linked worktree: its clone's git directory is `<clone>/.git`, below the instance root,
  // and the registration `<clone>/.git/worktrees/<name>` points back at this checkout.
  const clone = path.dirname(repo.commonDir);
  const realRoot = await realpath(instanceRoot);
  if (
    path.basename(repo.commonDir) !== ".git" ||
    path.dirname(repo.gitDir) !== path.join(repo.commonDir, "worktrees")
  ) {
    throw new Unsafe("unexpected_git_layout", `${repo.gitDir} is not a registration of a clone's .git`);
  }
  const back = await readGitdirFile(realRoot, repo.gitDir);
  if (back === null) {
    throw new Unsafe(
      "unexpected_git_layout",
      `${dir.path} belongs to ${repo.gitDir}, not a registration of a clone below the instance`,
    );
  }
  if (back !== path.join(dir.path, ".git") && back !== path.join(real, ".git")) {
    throw new Unsafe("unexpected_git_layout", `${repo.gitDir}/gitdir names ${back}, not ${dir.path}/.git`);
  }
  return { path: dir.path, kind: "worktree", repo, clone, headRef };
}

export async function surveyWorkspace(
  instanceRoot: string,
  cwd: string,
  signal?: AbortSignal,
): Promise<WorkspaceSurvey> {
  const dir = await provenDirBelow(instanceRoot, cwd);
  if (dir === "missing") return { state: "missing" };
  if (dir === "unsafe") {
    return {
      state: "unsafe",
      reason: "unsafe_workspace_path",
      detail: `${cwd} is not a real directory below ${instanceRoot}`,
    };
  }
  try {
    const checkout = await openCheckout(instanceRoot, dir);
    const nested: NestedSurvey[] = [];
    const unknownNested: string[] = [];
    const rootInfo = await dir.lstatEntry(NESTED_DIR);
    if (rootInfo !== null && !rootInfo.isDirectory()) unknownNested.push(NESTED_DIR);
    if (rootInfo?.isDirectory()) {
      const nestedRoot = dir.childFrom(NESTED_DIR, rootInfo);
      const entries = [...(await nestedRoot.list())].sort((a, b) =>
        a.name < b.name ? -1 : a.name > b.name ? 1 : 0,
      );
      for (const entry of entries) {
        try {
          const info = await nestedRoot.lstatEntry(entry.name);
          if (info === null || !info.isDirectory()) {
            throw new Unsafe("unexpected_git_layout", `${nestedRoot.join(entry.name)} is not a directory`);
          }
          nested.push({
            ...(await openCheckout(instanceRoot, nestedRoot.childFrom(entry.name, info))),
            name: entry.name,
          });
        } catch (error) {
          if (!(error instanceof Unsafe)) throw error;
          unknownNested.push(entry.name);
        }
      }
    }
    const { allocatedBytes } = await treeStats(cwd, signal);
    // Every level still the one proven: the walk and the reads above were of this tree.
    await dir.recheck();
    return { state: "present", checkout, identity: dir.identity, nested, unknownNested, allocatedBytes };
  } catch (error) {
    if (error instanceof Unsafe) return { state: "unsafe", reason: error.reason, detail: error.message };
    if (error instanceof PathRefused)
      return { state: "unsafe", reason: "unsafe_workspace_path", detail: error.message };
    throw error;
  }
}
