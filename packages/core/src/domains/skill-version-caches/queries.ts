/** The database reads of this domain (SQL in the .sql files beside this one). */
import type { Tx } from "../../db";
import { sqlFile } from "../../db/sql";
import type { CompanyFacts, VersionFacts } from "./rules";
import type { VersionRef } from "./survey";

export interface BatchFacts {
  company: CompanyFacts;
  versions: Map<string, VersionFacts>;
}

type Row = VersionFacts & CompanyFacts;

/** Facts for a batch, keyed by `<skill>/<version>`. An empty batch still learns the company facts. */
export async function versionFacts(
  tx: Tx,
  companyId: string,
  refs: VersionRef[],
  keep: number,
): Promise<BatchFacts> {
  const rows = await tx.$queryRawUnsafe<Row[]>(
    sqlFile(__dirname, "version-facts.sql"),
    companyId,
    JSON.stringify(refs.map((r) => ({ skillId: r.skillId, versionId: r.versionId }))),
    keep,
  );
  const company: CompanyFacts = {
    run_selection_unknown: rows.some((r) => r.run_selection_unknown),
    recovery_selection_unknown: rows.some((r) => r.recovery_selection_unknown),
  };
  return { company, versions: new Map(rows.map((r) => [`${r.skill_id}/${r.version_id}`, r])) };
}
