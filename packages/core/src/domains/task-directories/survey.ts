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
import { lstat } from "node:fs/promises";
import path from "node:path";
import {
  excludeNodeModulesBesidePackageJson,
  isTreeSnapshotError,
  planTree,
  type TreePlan,
  type TreeSelection,
} from "@reclaim/shared";
import { errnoCode } from "@reclaim/shared";
import { PathRefused, ProvenDir, UUID_NAME, treeStats } from "../../fs";
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

/**
 * The company folders of `isolated-workspaces/` as proven directories (fs/proven-dir.ts: a
 * company folder that is a link, or that changes while it is listed, is passed over).
 */
async function companyFolders(instanceRoot: string): Promise<ProvenDir[]> {
  const top = await ProvenDir.top(path.join(instanceRoot, ISOLATED_DIR));
  if (!top) return [];
  const found: ProvenDir[] = [];
  for (const entry of await top.list()) {
    if (!entry.isDirectory() || !UUID_NAME.test(entry.name)) continue;
    const folder = await top.child(entry.name).catch((error: unknown) => {
      if (error instanceof PathRefused) return null;
      throw error;
    });
    if (folder) found.push(folder);
  }
  return found;
}

/** Names in a proven folder matching `pattern`; none when it changed while listed. */
async function namesIn(folder: ProvenDir, pattern: RegExp): Promise<string[]> {
  try {
    return (await folder.list()).filter((e) => pattern.test(e.name)).map((e) => e.name);
  } catch (error) {
    if (error instanceof PathRefused) return [];
    throw error;
  }
}

/** Issue directories (UUID names) of every company folder, `<company>/<issue>`, sorted. */
export async function listIssueDirectories(instanceRoot: string): Promise<string[]> {
  const found: string[] = [];
  for (const folder of await companyFolders(instanceRoot)) {
    for (const name of await namesIn(folder, UUID_NAME)) found.push(`${path.basename(folder.path)}/${name}`);
  }
  return found.sort();
}

/** Leftover `.expired-*` / `.restoring-*` directories of every company folder. */
export async function listSideDirectories(instanceRoot: string): Promise<string[]> {
  const found: string[] = [];
  for (const folder of await companyFolders(instanceRoot)) {
    for (const name of await namesIn(folder, SIDE_NAME)) found.push(folder.join(name));
  }
  return found.sort();
}
