/**
 * Filesystem reads for a batch, outside any lock: which run folders exist, what each one is
 * (a real directory or not), its identity, newest modification and allocated bytes.
 * `<instance>/native-workspace-sync/generations` and any other name that is not a run id is
 * never looked at. The top folder is taken as configured; below it nothing is followed
 * (fs/proven-dir.ts).
 */
import { errnoCode } from "@reclaim/shared";
import {
  kindOf,
  treeStats,
  UUID_NAME,
  type EntryKind,
  type Identity,
  type ProvenDir,
  type TreeStats,
} from "../../fs";

export interface FolderSurvey {
  name: string;
  path: string;
  kind: EntryKind;
  identity: Identity | null;
  stats: TreeStats | null;
}

export async function listRunFolderNames(top: ProvenDir): Promise<string[]> {
  return (await top.list())
    .map((entry) => entry.name)
    .filter((name) => UUID_NAME.test(name))
    .sort();
}

export async function surveyFolder(
  top: ProvenDir,
  name: string,
  signal?: AbortSignal,
): Promise<FolderSurvey> {
  const full = top.join(name);
  const info = await top.lstatEntry(name);
  const kind = kindOf(info);
  if (kind !== "directory") return { name, path: full, kind, identity: null, stats: null };
  try {
    const stats = await treeStats(full, signal, info!);
    // The walk went below `top` by path: `top` must still be the directory proven.
    await top.confirm();
    return { name, path: full, kind, identity: { dev: info!.dev, ino: info!.ino }, stats };
  } catch (error) {
    // Removed meanwhile (another job): judged as gone.
    if (errnoCode(error) === "ENOENT")
      return { name, path: full, kind: "missing", identity: null, stats: null };
    throw error;
  }
}
