/**
 * Filesystem reads of task directories, outside any lock, never following a symbolic link
 * below the instance root: `<instance>/isolated-workspaces/<companyId>/<issueId>/`. The
 * company folder and the issue directory must each be a real directory (lstat); anything
 * else is `unsafe_task_directory`.
 *
 * Names beside a directory: `.expired-<random>` (decided, being deleted) and
 * `.restoring-<random>` (a restore's staging), each no longer than the issue directory's own
 * name (a UUID, 36 characters), so a path that fit before fits during.
 */
import { randomBytes } from "node:crypto";
import { lstat, readdir } from "node:fs/promises";
import path from "node:path";
import {
  excludeNodeModulesBesidePackageJson,
  isTreeSnapshotError,
  planTree,
  type TreePlan,
  type TreeSelection,
} from "@reclaim/shared";
import { errnoCode } from "@reclaim/shared";
import { UUID_NAME, treeStats } from "../../fs";
import { ISOLATED_DIR, SNAPSHOT_LIMITS } from "./config";

export const SELECTION: TreeSelection = { kind: "walk", exclude: excludeNodeModulesBesidePackageJson };

/** The directory an issue's task runs in. */
export function taskDirectory(instanceRoot: string, companyId: string, issueId: string): string {
  return path.join(instanceRoot, ISOLATED_DIR, companyId, issueId);
}

const RANDOM_HEX = 24;
/** `.expired-<24 hex>` (33) and `.restoring-<24 hex>` (35): no longer than a 36-character issue id. */
export const sideName = (prefix: ".expired" | ".restoring"): string =>
  `${prefix}-${randomBytes(RANDOM_HEX / 2).toString("hex")}`;
export const SIDE_NAME = new RegExp(`^\\.(expired|restoring)-[0-9a-f]{${RANDOM_HEX}}$`);

export type DirectoryKind = "directory" | "symlink" | "missing" | "other";

/** What the directory and the company folder above it are, without following links. */
export async function directoryKind(dir: string): Promise<DirectoryKind> {
  for (const at of [path.dirname(dir), dir]) {
    try {
      const stat = await lstat(at);
      if (stat.isSymbolicLink()) return "symlink";
      if (!stat.isDirectory()) return "other";
    } catch (error) {
      if (errnoCode(error) === "ENOENT") return "missing";
      throw error;
    }
  }
  return "directory";
}

/** The snapshot limits and refusals as the spec's skip reasons. */
const REFUSALS: Record<string, string> = {
  unsupported_filesystem_entry: "unsupported_filesystem_entry",
  too_many_files: "task_directory_too_many_files",
  file_too_large: "task_directory_file_too_large",
  too_large: "task_directory_too_large",
  unsafe_root: "unsafe_task_directory",
  unsafe_path: "unsafe_task_directory",
  changed_during_capture: "task_directory_changed",
  invalid_snapshot: "task_directory_not_restorable",
  restore_target_exists: "task_directory_not_restorable",
};

/** A snapshot error's skip reason, or null for another error (rethrow it). */
export function refusalOf(error: unknown): string | null {
  return isTreeSnapshotError(error) ? (REFUSALS[error.reason] ?? null) : null;
}

export type Planned = { plan: TreePlan; bytes: number } | { refused: string };

/** Lstats the whole tree (no contents read) against the limits, and its allocated bytes. */
export async function planDirectory(dir: string, signal?: AbortSignal): Promise<Planned> {
  try {
    const plan = await planTree(dir, { selection: SELECTION, limits: SNAPSHOT_LIMITS, signal });
    return { plan, bytes: (await treeStats(dir, signal)).allocatedBytes };
  } catch (error) {
    const refused = refusalOf(error);
    if (refused === null) throw error;
    return { refused };
  }
}

/** Issue directories (UUID names) of every company folder, `<company>/<issue>`, sorted. */
export async function listIssueDirectories(instanceRoot: string): Promise<string[]> {
  const root = path.join(instanceRoot, ISOLATED_DIR);
  const found: string[] = [];
  for (const company of (await namesOf(root)).filter((n) => UUID_NAME.test(n))) {
    if ((await directoryKind(path.join(root, company, "x"))) === "symlink") continue;
    for (const name of await namesOf(path.join(root, company))) {
      if (UUID_NAME.test(name)) found.push(`${company}/${name}`);
    }
  }
  return found.sort();
}

/** Leftover `.expired-*` / `.restoring-*` directories of every company folder. */
export async function listSideDirectories(instanceRoot: string): Promise<string[]> {
  const root = path.join(instanceRoot, ISOLATED_DIR);
  const found: string[] = [];
  for (const company of (await namesOf(root)).filter((n) => UUID_NAME.test(n))) {
    if ((await directoryKind(path.join(root, company, "x"))) === "symlink") continue;
    for (const name of await namesOf(path.join(root, company))) {
      if (SIDE_NAME.test(name)) found.push(path.join(root, company, name));
    }
  }
  return found.sort();
}

async function namesOf(dir: string): Promise<string[]> {
  try {
    const stat = await lstat(dir);
    if (!stat.isDirectory()) return [];
    return await readdir(dir);
  } catch (error) {
    const code = errnoCode(error);
    if (code === "ENOENT" || code === "ENOTDIR") return [];
    throw error;
  }
}
