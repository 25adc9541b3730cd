/**
 * The spec's eviction conditions for one cached skill version, as a pure function of what
 * was read. A `__versions__/<skill>/<version>` directory is evicted when it is a real
 * directory and none of these keep it:
 *   - an active run of the company has an unknown version selection (run pin without a
 *     version), or an unsettled recovery does: the whole company keeps its caches;
 *   - the version row says it belongs to another skill or company;
 *   - it is a skill's current version;
 *   - an active run pins it, an unsettled recovery pins it, or an agent pins it explicitly;
 *   - it is one of the newest PAPERCLIP_SKILL_VERSION_RETENTION_KEEP versions of its skill;
 *   - it was used (last-use record, or materialized) within the grace window; a version with
 *     no last-use record counts as used when observation of the installation started.
 * A rule whose table only Reclaim writes on this database (sources/index.ts) cannot see
 * pins: every version it would decide is kept as `source_unavailable`.
 * Every "keep" carries its reason and, where time alone will change it, when to look again.
 */
import type { SourceRules } from "../sources";
import type { VersionSurvey } from "./survey";

/** The rules of this domain that read a table, and the tables each reads. */
export const SOURCES = {
  run_pins: ["company_skill_run_pins"],
  recovery_pins: ["company_skill_recovery_pins"],
  agent_pins: ["company_skill_agent_pins"],
} as const satisfies SourceRules<string>;

export type SourceRule = keyof typeof SOURCES;

export interface VersionFacts {
  skill_id: string;
  version_id: string;
  /** A company_skill_versions row with this id exists. */
  version_exists: boolean;
  /** It exists, for this company and this skill. */
  version_matches: boolean;
  is_current: boolean;
  newest_kept: boolean;
  active_run_pin: boolean;
  recovery_pin: boolean;
  agent_pin: boolean;
  /** How the version can be rebuilt (company_skill_version_packages); null: nothing recorded. */
  package_kind: string | null;
  package_storage_key: string | null;
  /** Text: a bigint. */
  package_byte_size: string | null;
  package_recipe: unknown;
  package_externally_durable: boolean | null;
}

export interface CompanyFacts {
  run_selection_unknown: boolean;
  recovery_selection_unknown: boolean;
}

export type KeepReason =
  | "active_run_selection_unknown"
  | "recovery_selection_unknown"
  | "symlink"
  | "not_a_directory"
  | "version_row_mismatch"
  | "current_version"
  | "active_run_pin"
  | "recovery_pin_unsettled"
  | "agent_pin"
  | "newest_kept"
  | "recently_used"
  | "observation_period"
  | "source_unavailable";

export type Verdict =
  | { evict: true; because: "unused" | "no_version_row" }
  | { evict: false; reason: KeepReason; recheckAt?: Date };

export interface Judge {
  now: Date;
  graceMs: number;
  /** When observation of this installation started (its marker), or now when it starts. */
  observationStartMs: number;
  /** Rules whose source tables nothing but Reclaim writes here (none: all visible). */
  unavailable?: ReadonlySet<SourceRule>;
}

type Survey = Pick<VersionSurvey, "kind" | "ownMtimeMs" | "lastUseRecordMs">;

export function judgeVersion(
  company: CompanyFacts,
  entry: Survey,
  facts: VersionFacts | null,
  judge: Judge,
): Verdict {
  const keep = (reason: KeepReason, recheckAt?: Date): Verdict => ({ evict: false, reason, recheckAt });

  if (company.run_selection_unknown) return keep("active_run_selection_unknown");
  if (company.recovery_selection_unknown) return keep("recovery_selection_unknown");
  if (entry.kind === "symlink") return keep("symlink");
  if (entry.kind !== "directory") return keep("not_a_directory");
  if (facts?.version_exists && !facts.version_matches) return keep("version_row_mismatch");
  if (facts?.is_current) return keep("current_version");
  for (const rule of Object.keys(SOURCES) as SourceRule[])
    if (judge.unavailable?.has(rule)) return keep("source_unavailable");
  if (facts?.active_run_pin) return keep("active_run_pin");
  if (facts?.recovery_pin) return keep("recovery_pin_unsettled");
  if (facts?.agent_pin) return keep("agent_pin");
  if (facts?.newest_kept) return keep("newest_kept");

  // Materializing a version is a use too: a fresh copy is never evicted under a slow record.
  const observed = entry.lastUseRecordMs === null;
  const lastUse = Math.max(entry.lastUseRecordMs ?? judge.observationStartMs, entry.ownMtimeMs ?? 0);
  const eligibleAt = lastUse + judge.graceMs;
  if (eligibleAt > judge.now.getTime()) {
    const reason = observed && lastUse === judge.observationStartMs ? "observation_period" : "recently_used";
    return keep(reason, new Date(eligibleAt));
  }
  return { evict: true, because: facts?.version_exists ? "unused" : "no_version_row" };
}

/**
 * The spec's first paragraph: a version's cache may be evicted only when the version can be
 * rebuilt. Checked after every other rule said "evict", for versions with a row (a cache
 * whose version row is gone can never be resolved again):
 *   - `storage`: its durable package object exists in the configured storage now, with the
 *     recorded size (a missing object, another size, or storage that cannot be reached keeps
 *     the cache);
 *   - `git_recipe`: its saved recipe names a repository and an exact commit;
 *   - `authored` / `legacy` (no recipe): only with independent external durability;
 *   - nothing recorded, or a kind this build does not know: kept.
 */
export type RebuildKeepReason =
  | "rebuild_source_unknown"
  | "package_missing"
  | "package_size_mismatch"
  | "package_key_invalid"
  | "storage_unavailable"
  | "recipe_incomplete"
  | "not_externally_durable";

/** What the configured storage said of a `storage` package, probed just before the decision. */
export type StorageProbe =
  | { state: "present"; byteSize: number }
  | { state: "missing" }
  | { state: "invalid_key" }
  | { state: "unavailable" };

type PackageFacts = Pick<
  VersionFacts,
  | "package_kind"
  | "package_storage_key"
  | "package_byte_size"
  | "package_recipe"
  | "package_externally_durable"
>;

const COMMIT = /^([0-9a-f]{40}|[0-9a-f]{64})$/;

/** null when the version can be rebuilt; otherwise why its cache stays. */
export function judgeRebuild(facts: PackageFacts, probe: StorageProbe | null): RebuildKeepReason | null {
  switch (facts.package_kind) {
    case "storage": {
      if (!facts.package_storage_key || facts.package_byte_size === null) return "rebuild_source_unknown";
      if (probe === null) return "storage_unavailable";
      if (probe.state === "unavailable") return "storage_unavailable";
      if (probe.state === "invalid_key") return "package_key_invalid";
      if (probe.state === "missing") return "package_missing";
      return String(probe.byteSize) === facts.package_byte_size ? null : "package_size_mismatch";
    }
    case "git_recipe": {
      const recipe = facts.package_recipe as { repository?: unknown; commit?: unknown } | null;
      const complete =
        typeof recipe?.repository === "string" &&
        recipe.repository.trim() !== "" &&
        typeof recipe.commit === "string" &&
        COMMIT.test(recipe.commit);
      return complete ? null : "recipe_incomplete";
    }
    case "authored":
    case "legacy":
      return facts.package_externally_durable ? null : "not_externally_durable";
    default:
      return "rebuild_source_unknown";
  }
}
