/**
 * Filesystem reads of task directories, outside any lock, never following, reading through or
 * writing through a symbolic link below the configured top folder `<instance>/isolated-workspaces`
 * (taken as configured, like every domain's top folder: fs/proven-dir.ts). The company folder
 * and the issue directory `<companyId>/<issueId>/` are reached as proven directories: each a
 * real directory (lstat), its device and inode recorded; anything else is
 * `unsafe_task_directory`. Every later step (the plan, the re-read, the rename, the delete, the
 * restore) acts on those proven directories, so a level swapped for a link since is refused.
 *
 * Names beside a directory (fs/retired-names.ts, short form): `.expired-<24 hex>` (decided,
 * being deleted) and `.restoring-<24 hex>` (a restore's staging), each no longer than the
 * issue directory's own name (a UUID, 36 characters), so a path that fit before fits during.
 */
import path from "node:path";
import type { Stats } from "node:fs";
import {
  excludeNodeModulesBesidePackageJson,
  isTreeSnapshotError,
  planTree,
  type TreePlan,
  type TreeSelection,
} from "@reclaim/shared";
import {
  listRetired,
  PathRefused,
  provenDirBelow,
  ProvenDir,
  retiredName,
  UUID_NAME,
  treeStats,
} from "../../fs";
import { ISOLATED_DIR, SNAPSHOT_LIMITS } from "./config";

export const SELECTION: TreeSelection = { kind: "walk", exclude: excludeNodeModulesBesidePackageJson };

/** The directory an issue's task runs in. */
export function taskDirectory(instanceRoot: string, companyId: string, issueId: string): string {
  return path.join(instanceRoot, ISOLATED_DIR, companyId, issueId);
}

/** The configured top folder of task directories. */
export const isolatedRoot = (instanceRoot: string): string => path.join(instanceRoot, ISOLATED_DIR);

/** `.expired-<24 hex>` (33) and `.restoring-<24 hex>` (35): no longer than a 36-character issue id. */
export const sideName = (prefix: ".expired" | ".restoring"): string => retiredName(prefix, "short");

export type DirectoryKind = "directory" | "symlink" | "missing" | "other";

/** A task directory as found: proven (with its company folder), or what is there instead. */
export type ProvenTask =
  | { kind: "directory"; company: ProvenDir; dir: ProvenDir; info: Stats }
  | { kind: Exclude<DirectoryKind, "directory">; company: ProvenDir | null };

/**
 * The company folder of the task directory `dir`, proven from the top folder down (no level a
 * link): `unsafe` when one is, `missing` when it does not exist.
 */
export function companyFolderOf(
  instanceRoot: string,
  dir: string,
): Promise<ProvenDir | "missing" | "unsafe"> {
  return provenDirBelow(isolatedRoot(instanceRoot), path.dirname(dir));
}

/** The task directory `dir` and its company folder, proven (never through a link). */
export async function provenTask(instanceRoot: string, dir: string): Promise<ProvenTask> {
  const company = await companyFolderOf(instanceRoot, dir);
  if (company === "missing") return { kind: "missing", company: null };
  if (company === "unsafe") return { kind: "symlink", company: null };
  const name = path.basename(dir);
  const info = await company.lstatEntry(name);
  if (info === null) return { kind: "missing", company };
  if (info.isSymbolicLink()) return { kind: "symlink", company };
  if (!info.isDirectory()) return { kind: "other", company };
  return { kind: "directory", company, dir: company.childFrom(name, info), info };
}

/** What the directory and the levels above it are, without following links. */
export async function directoryKind(instanceRoot: string, dir: string): Promise<DirectoryKind> {
  return (await provenTask(instanceRoot, dir)).kind;
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

/**
 * Lstats the whole tree (no contents read) against the limits, and its allocated bytes; the
 * walk starts only at the directory that was proven, and every level is proven again after it.
 */
export async function planDirectory(task: ProvenTask, signal?: AbortSignal): Promise<Planned> {
  if (task.kind !== "directory")
    return { refused: task.kind === "missing" ? "task_directory_missing" : "unsafe_task_directory" };
  try {
    const plan = await planTree(task.dir.path, {
      selection: SELECTION,
      limits: SNAPSHOT_LIMITS,
      signal,
      rootIdentity: task.dir.identity,
    });
    // What removal frees: the plan's entries, and what the selection left out of it.
    let bytes = plan.allocatedBytes;
    for (const rel of plan.excluded)
      bytes += (await treeStats(path.join(task.dir.path, rel), signal)).allocatedBytes;
    await task.dir.recheck();
    return { plan, bytes };
  } catch (error) {
    if (error instanceof PathRefused) return { refused: "unsafe_task_directory" };
    const refused = refusalOf(error);
    if (refused === null) throw error;
    return { refused };
  }
}

/** Allocated bytes of a proven task directory (0 when it is not one); levels proven again after the walk. */
export async function provenBytes(task: ProvenTask, signal?: AbortSignal): Promise<number> {
  if (task.kind !== "directory") return 0;
  const { allocatedBytes } = await treeStats(task.dir.path, signal, task.info);
  try {
    await task.dir.recheck();
  } catch (error) {
    if (error instanceof PathRefused) return 0;
    throw error;
  }
  return allocatedBytes;
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

/** Leftover `.expired-*` / `.restoring-*` entries of every company folder, with the proven folder they are in. */
export async function listSideDirectories(
  instanceRoot: string,
): Promise<{ folder: ProvenDir; name: string; symlink: boolean }[]> {
  const found: { folder: ProvenDir; name: string; symlink: boolean }[] = [];
  for (const folder of await companyFolders(instanceRoot)) {
    const names = await listRetired(folder, [".expired", ".restoring"]).catch((error: unknown) => {
      if (error instanceof PathRefused) return [];
      throw error;
    });
    for (const { name, symlink } of names) found.push({ folder, name, symlink });
  }
  return found;
}
