/**
 * Filesystem reads for a batch, outside any lock: which companies have caches, which
 * `<skill>/<version>` directories exist under `__versions__`, what each one is, its identity
 * (device+inode), its own modification time (materialization) and allocated bytes, and the
 * last-use record beside it under `__version_access__`.
 *
 * Only names that are uuids (skill and version ids) are looked at: non-versioned skill
 * directories, database snapshots and anything else under `skills/<company>/` are never
 * read, let alone removed. `skills/` is taken as configured; every level below it (the
 * company directory, `__versions__`, `__version_access__`, a skill's folders) is proven a
 * real directory before anything in it is read (fs/proven-dir.ts). A level that is a link
 * is refused, reported `symlink`, and everything below it kept.
 */
import { errnoCode } from "@reclaim/shared";
import {
  kindOf,
  mapInOrder,
  PathRefused,
  ProvenDir,
  retiredPrefixOf,
  treeStats,
  UUID_NAME,
  type EntryKind,
  type Identity,
} from "../../fs";
import { ACCESS_DIR, LIMITS, OBSERVATION_MARKER, SKILLS_DIR, VERSIONS_DIR } from "./config";
import path from "node:path";

export interface VersionRef {
  skillId: string;
  versionId: string;
}

/** A real skill directory under `__versions__`, and its folder of last-use records. */
export interface SkillDirs {
  skillId: string;
  dir: ProvenDir;
  /** `__version_access__/<skill>`; null when it does not exist (no records). */
  access: ProvenDir | null;
}

/** A company's tree, proven from `skills/` down. */
export interface CompanyTree {
  /** null: nothing to do (no such directory, or a level refused). */
  company: ProvenDir | null;
  /** `__version_access__`; null when it does not exist yet (no records, no marker). */
  access: ProvenDir | null;
  skills: Map<string, SkillDirs>;
  /** Levels found to be links or not directories: reported, everything below them kept. */
  refused: PathRefused[];
}

export interface VersionSurvey extends VersionRef {
  /** `<skill>/<version>`, the walk's cursor key. */
  key: string;
  path: string;
  /** The proven skill directory it is in, and that skill's record folder. */
  in: SkillDirs;
  kind: EntryKind;
  identity: Identity | null;
  /** The directory's own modification time: when it was materialized. */
  ownMtimeMs: number | null;
  allocatedBytes: number;
  /** Modification time of `__version_access__/<skill>/<version>`, or null without a record. */
  lastUseRecordMs: number | null;
}

/** What a company's skill directories hold: version keys and `.trash-*` leftovers, sorted. */
export interface CompanyListing {
  keys: string[];
  trash: { key: string; symlink: boolean }[];
}

/** The configured top folder, `<instance>/skills` (null when it does not exist). */
export function skillsTop(instanceRoot: string): Promise<ProvenDir | null> {
  return ProvenDir.top(path.join(instanceRoot, SKILLS_DIR));
}

/** Company ids with a real `skills/<company>/` directory, and the uuid names that are links. */
export async function listCompanies(instanceRoot: string): Promise<{ companies: string[]; links: string[] }> {
  const top = await skillsTop(instanceRoot);
  const entries = (await top?.list()) ?? [];
  const uuids = entries.filter((e) => UUID_NAME.test(e.name));
  return {
    companies: uuids
      .filter((e) => e.isDirectory())
      .map((e) => e.name)
      .sort(),
    links: uuids
      .filter((e) => e.isSymbolicLink())
      .map((e) => e.name)
      .sort(),
  };
}

const keep = (tree: CompanyTree, error: unknown): CompanyTree => {
  if (!(error instanceof PathRefused)) throw error;
  tree.refused.push(error);
  return tree;
};

/**
 * Proves a company's levels: the company directory, `__versions__`, `__version_access__` (its
 * last-use records and observation marker: one that cannot be read safely keeps every cache),
 * each uuid-named skill directory and its record folder (a refused one keeps that skill).
 */
export async function openCompany(instanceRoot: string, companyId: string): Promise<CompanyTree> {
  const tree: CompanyTree = { company: null, access: null, skills: new Map(), refused: [] };
  let versions: ProvenDir | null;
  try {
    const company = await (await skillsTop(instanceRoot))?.child(companyId);
    if (!company) return tree;
    versions = await company.child(VERSIONS_DIR);
    tree.access = await company.child(ACCESS_DIR);
    tree.company = company;
  } catch (error) {
    return keep(tree, error);
  }
  if (versions === null) return tree;
  try {
    const entries = (await versions.list()).filter((e) => UUID_NAME.test(e.name));
    // Each skill's two levels are proven a few skills at once; the outcomes are taken in
    // listing order, so the report reads the same.
    const proven = await mapInOrder(
      entries.filter((e) => !e.isSymbolicLink() && e.isDirectory()),
      LIMITS.fsWidth,
      async (entry) => {
        try {
          const [dir, access] = await Promise.all([
            versions.child(entry.name),
            tree.access?.child(entry.name) ?? null,
          ]);
          return { name: entry.name, dir, access };
        } catch (error) {
          return { name: entry.name, error };
        }
      },
    );
    const outcomes = new Map(proven.map((p) => [p.name, p]));
    for (const entry of entries) {
      if (entry.isSymbolicLink()) {
        tree.refused.push(new PathRefused("symlink", versions.join(entry.name)));
        continue;
      }
      const outcome = outcomes.get(entry.name);
      if (outcome === undefined) continue;
      if ("error" in outcome) keep(tree, outcome.error);
      else if (outcome.dir)
        tree.skills.set(entry.name, { skillId: entry.name, dir: outcome.dir, access: outcome.access });
    }
  } catch (error) {
    tree.company = null;
    return keep(tree, error);
  }
  return tree;
}

/**
 * The `<skill>/<version>` keys and `.trash-*` leftovers of a company (one listing per skill).
 * `versionsAfter`: only the version walk from that cursor is wanted, no leftovers (a dry run
 * deletes none): skills are listed in key order from the cursor's skill, and listing stops
 * once more than `limit` keys after the cursor are known, so `keys` holds every key after
 * the cursor up to at least limit + 1 of them (what one batch and its `more` need).
 */
export async function listCompany(
  tree: CompanyTree,
  versionsAfter?: { after: string | null; limit: number },
): Promise<CompanyListing> {
  const listing: CompanyListing = { keys: [], trash: [] };
  let skills = [...tree.skills.values()];
  if (versionsAfter) {
    const from = versionsAfter.after?.split("/")[0] ?? "";
    skills = skills.filter((s) => s.skillId >= from).sort((a, b) => (a.skillId < b.skillId ? -1 : 1));
  }
  let after = 0;
  // A few skills listed at once; with `versionsAfter`, none started once enough keys are known.
  await mapInOrder(
    skills,
    LIMITS.fsWidth,
    async (skill) => {
      for (const entry of await skill.dir.list()) {
        const key = `${skill.skillId}/${entry.name}`;
        if (UUID_NAME.test(entry.name)) {
          listing.keys.push(key);
          if (versionsAfter && (versionsAfter.after === null || key > versionsAfter.after)) after += 1;
        } else if (!versionsAfter && retiredPrefixOf(entry.name) === ".trash")
          listing.trash.push({ key, symlink: entry.isSymbolicLink() });
      }
    },
    () => versionsAfter !== undefined && after > versionsAfter.limit,
  );
  listing.keys.sort();
  listing.trash.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  return listing;
}

/** lstat's modification time of `name` in `dir` (a link's own, never its target's), or null. */
async function mtimeIn(dir: ProvenDir | null, name: string): Promise<number | null> {
  return (await dir?.lstatEntry(name))?.mtimeMs ?? null;
}

/**
 * Paperclip touches `__version_access__/<skill>/<version>` whenever it resolves the version.
 * A skill without a record folder when the company was opened may have one now (a use since):
 * it is proven the first time it is looked for again.
 */
export async function lastUseRecordMs(
  tree: CompanyTree,
  skill: SkillDirs,
  versionId: string,
): Promise<number | null> {
  skill.access ??= (await tree.access?.child(skill.skillId)) ?? null;
  return mtimeIn(skill.access, versionId);
}

export function observationStartMs(tree: CompanyTree): Promise<number | null> {
  return mtimeIn(tree.access, OBSERVATION_MARKER);
}

export async function surveyVersion(
  tree: Pick<CompanyTree, "skills">,
  key: string,
  signal?: AbortSignal,
): Promise<VersionSurvey> {
  const [skillId, versionId] = key.split("/") as [string, string];
  const skill = tree.skills.get(skillId)!;
  const base = { key, skillId, versionId, path: skill.dir.join(versionId), in: skill };
  // Two independent lstats, at once: the record beside it, and the directory itself. The
  // record folder is the one this batch's openCompany found (a skill without one has no
  // records to read now); apply looks for one again before a rename.
  const [lastUse, own] = await Promise.all([
    mtimeIn(skill.access, versionId),
    skill.dir.lstatEntry(versionId),
  ]);
  const none = (kind: EntryKind) => ({
    ...base,
    kind,
    identity: null,
    ownMtimeMs: null,
    allocatedBytes: 0,
    lastUseRecordMs: lastUse,
  });
  const kind = kindOf(own);
  if (kind !== "directory") return none(kind);
  try {
    const stats = await treeStats(base.path, signal, own!);
    return {
      ...base,
      kind,
      identity: { dev: own!.dev, ino: own!.ino },
      ownMtimeMs: own!.mtimeMs,
      allocatedBytes: stats.allocatedBytes,
      lastUseRecordMs: lastUse,
    };
  } catch (error) {
    // Evicted or replaced meanwhile (another server's sweep, a rebuild): nothing to judge now.
    if (errnoCode(error) === "ENOENT") return none("missing");
    throw error;
  }
}

/**
 * After the survey read entries below them by path: every skill directory and record folder it
 * used is still the one proven (one lstat each), or the whole survey is discarded.
 */
export async function confirmSurveyed(versions: VersionSurvey[]): Promise<void> {
  const dirs = new Set<ProvenDir>();
  for (const v of versions) {
    dirs.add(v.in.dir);
    if (v.in.access) dirs.add(v.in.access);
  }
  for (const dir of dirs) await dir.confirm();
}
