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
