/**
 * Filesystem reads for a batch, outside any lock: which run folders exist, what each one is
 * (a real directory or not), its identity, newest modification and allocated bytes.
 * `<instance>/native-workspace-sync/generations` and any other name that is not a run id is
 * never looked at; symlinks are never followed.
 */
import { readdir } from "node:fs/promises";
import path from "node:path";
import { errnoCode } from "@reclaim/shared";
import {
  entryKind,
  identityOf,
  treeStats,
  UUID_NAME,
  type EntryKind,
  type Identity,
  type TreeStats,
} from "../../fs";

export interface FolderSurvey {
  name: string;
  path: string;
  kind: EntryKind;
  identity: Identity | null;
  stats: TreeStats | null;
}

export async function listRunFolderNames(root: string): Promise<string[]> {
  try {
    return (await readdir(root)).filter((name) => UUID_NAME.test(name)).sort();
  } catch (error) {
    if (errnoCode(error) === "ENOENT") return [];
    throw error;
  }
}

export async function surveyFolder(root: string, name: string, signal?: AbortSignal): Promise<FolderSurvey> {
  const full = path.join(root, name);
  const kind = await entryKind(full);
  if (kind !== "directory") return { name, path: full, kind, identity: null, stats: null };
  return { name, path: full, kind, identity: await identityOf(full), stats: await treeStats(full, signal) };
}
