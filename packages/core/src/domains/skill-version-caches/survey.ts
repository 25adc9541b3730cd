/**
 * Filesystem reads for a batch, outside any lock: which companies have caches, which
 * `<skill>/<version>` directories exist under `__versions__`, what each one is, its identity
 * (device+inode), its own modification time (materialization) and allocated bytes, and the
 * last-use record beside it under `__version_access__`.
 *
 * Only names that are uuids (skill and version ids) are looked at: non-versioned skill
 * directories, database snapshots and anything else under `skills/<company>/` are never
 * read, let alone removed. Symlinks are never followed.
 */
import { lstat } from "node:fs/promises";
import path from "node:path";
import { errnoCode } from "@reclaim/shared";
import { entryKind, names, treeStats, UUID_NAME, type EntryKind, type Identity } from "../../fs";
import { ACCESS_DIR, OBSERVATION_MARKER, SKILLS_DIR, VERSIONS_DIR } from "./config";

export interface VersionRef {
  skillId: string;
  versionId: string;
}

export interface VersionSurvey extends VersionRef {
  /** `<skill>/<version>`, the walk's cursor key. */
  key: string;
  path: string;
  kind: EntryKind;
  identity: Identity | null;
  /** The directory's own modification time: when it was materialized. */
  ownMtimeMs: number | null;
  allocatedBytes: number;
  /** Modification time of `__version_access__/<skill>/<version>`, or null without a record. */
  lastUseRecordMs: number | null;
}

export function companyDir(instanceRoot: string, companyId: string): string {
  return path.join(instanceRoot, SKILLS_DIR, companyId);
}

/** Names in `dir` that are uuids and real directories (a symlinked one is never entered). */
async function uuidDirs(dir: string): Promise<string[]> {
  const found: string[] = [];
  for (const name of (await names(dir)).filter((n) => UUID_NAME.test(n)).sort()) {
    if ((await entryKind(path.join(dir, name))) === "directory") found.push(name);
  }
  return found;
}

/** Company ids that have a real `skills/<company>/` directory. */
export function listCompanies(instanceRoot: string): Promise<string[]> {
  return uuidDirs(path.join(instanceRoot, SKILLS_DIR));
}

/** Real skill directories under `__versions__`. */
export function listSkillDirs(company: string): Promise<string[]> {
  return uuidDirs(path.join(company, VERSIONS_DIR));
}

/** Every `<skill>/<version>` key of a company, sorted. */
export async function listVersionKeys(company: string, skills: string[]): Promise<string[]> {
  const keys: string[] = [];
  for (const skill of skills) {
    for (const name of (await names(path.join(company, VERSIONS_DIR, skill))).filter((n) =>
      UUID_NAME.test(n),
    )) {
      keys.push(`${skill}/${name}`);
    }
  }
  return keys.sort();
}

/** lstat's modification time (a symlink's own, never its target's), or null when absent. */
async function mtimeOf(target: string): Promise<number | null> {
  try {
    return (await lstat(target)).mtimeMs;
  } catch (error) {
    const code = errnoCode(error);
    if (code === "ENOENT" || code === "ENOTDIR") return null;
    throw error;
  }
}

/** Paperclip touches `__version_access__/<skill>/<version>` whenever it resolves the version. */
export function lastUseRecordMs(company: string, ref: VersionRef): Promise<number | null> {
  return mtimeOf(path.join(company, ACCESS_DIR, ref.skillId, ref.versionId));
}

export function observationMarker(company: string): string {
  return path.join(company, ACCESS_DIR, OBSERVATION_MARKER);
}

export function observationStartMs(company: string): Promise<number | null> {
  return mtimeOf(observationMarker(company));
}

export async function surveyVersion(
  company: string,
  key: string,
  signal?: AbortSignal,
): Promise<VersionSurvey> {
  const [skillId, versionId] = key.split("/") as [string, string];
  const full = path.join(company, VERSIONS_DIR, skillId, versionId);
  const base = { key, skillId, versionId, path: full };
  const lastUse = await lastUseRecordMs(company, { skillId, versionId });
  const none = (kind: EntryKind) => ({
    ...base,
    kind,
    identity: null,
    ownMtimeMs: null,
    allocatedBytes: 0,
    lastUseRecordMs: lastUse,
  });
  const kind = await entryKind(full);
  if (kind !== "directory") return none(kind);
  try {
    const own = await lstat(full);
    const stats = await treeStats(full, signal);
    return {
      ...base,
      kind,
      identity: { dev: own.dev, ino: own.ino },
      ownMtimeMs: own.mtimeMs,
      allocatedBytes: stats.allocatedBytes,
      lastUseRecordMs: lastUse,
    };
  } catch (error) {
    // Evicted or replaced meanwhile (another server's sweep, a rebuild): nothing to judge now.
    if (errnoCode(error) === "ENOENT") return none("missing");
    throw error;
  }
}
