/** The database reads of this domain (SQL in the .sql files beside this one). */
import { runStatementIn, statement, type Tx } from "../../db";
import { rulesWithUnwrittenSources, sourceTables } from "../sources";
import { SOURCES, type CompanyFacts, type SourceRule, type VersionFacts } from "./rules";
import type { VersionRef } from "./survey";

export interface BatchFacts {
  company: CompanyFacts;
  versions: Map<string, VersionFacts>;
  /** Pin rules whose tables nothing but Reclaim writes here (sources/index.ts `unavailableRules`). */
  unavailable: Set<SourceRule>;
}

type Row = VersionFacts & CompanyFacts & { unwritten_tables: string[] };

const VERSION_FACTS = statement(__dirname, "version-facts.sql");

/**
 * Facts for a batch, keyed by `<skill>/<version>`, in one round trip: a prepared statement on the
 * job transaction's own connection (db/statements.ts), planned once per connection. A batch
 * without entries learns nothing (no rows): it has nothing to judge.
 */
export async function versionFacts(
  tx: Tx,
  companyId: string,
  refs: VersionRef[],
  keep: number,
  assumeEmpty: readonly SourceRule[],
): Promise<BatchFacts> {
  const rows = await runStatementIn<Row>(tx, VERSION_FACTS, [
    companyId,
    JSON.stringify(refs.map((r) => ({ skillId: r.skillId, versionId: r.versionId }))),
    keep,
    sourceTables(SOURCES),
  ]);
  const company: CompanyFacts = {
    run_selection_unknown: rows.some((r) => r.run_selection_unknown),
    recovery_selection_unknown: rows.some((r) => r.recovery_selection_unknown),
  };
  return {
    company,
    versions: new Map(rows.map((r) => [`${r.skill_id}/${r.version_id}`, r])),
    unavailable: rulesWithUnwrittenSources(SOURCES, rows[0]?.unwritten_tables ?? [], assumeEmpty),
  };
}
