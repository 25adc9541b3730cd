/**
 * Rules fed by tables nobody writes.
 *
 * Some tables a rule reads are ones Paperclip's schema does not have (or an older Paperclip
 * lacked): Reclaim's migrations create them where absent so its queries run, but on a
 * Paperclip database nothing writes them, and an empty table would read as "nothing
 * pending" (docs/paperclip-tables.md). Such a rule cannot see what it needs, so it keeps
 * its entry and says `source_unavailable`, unless an operator states, per rule, that the
 * empty table is the truth (the domain's `..._ASSUME_EMPTY` option).
 *
 * A domain declares its rules and the tables each reads; `unavailableRules` returns the
 * rules that must keep, once per batch (a prepared statement on the job transaction's own
 * connection, db/statements.ts).
 */
import { runStatementIn, statement, type Db, type Tx } from "../../db";
import { ConfigError } from "../../errors";
import type { Env, Option } from "../../config";

export type SourceRules<R extends string> = Readonly<Record<R, readonly string[]>>;

export const SOURCE_UNAVAILABLE = "source_unavailable";

const UNWRITTEN_TABLES = statement(__dirname, "unwritten-tables.sql");

/** The rules whose source tables only Reclaim writes, minus those the operator opted out. */
export async function unavailableRules<R extends string>(
  db: Db | Tx,
  rules: SourceRules<R>,
  assumeEmpty: readonly string[],
): Promise<Set<R>> {
  const rows = await runStatementIn<{ table_name: string }>(db, UNWRITTEN_TABLES, [sourceTables(rules)]);
  return rulesWithUnwrittenSources(
    rules,
    rows.map((r) => r.table_name),
    assumeEmpty,
  );
}

/** Every table the rules read (unwritten-tables.sql's `$1`). */
export function sourceTables<R extends string>(rules: SourceRules<R>): string[] {
  return [...new Set((Object.keys(rules) as R[]).flatMap((rule) => rules[rule]))];
}

/**
 * `unavailableRules` from the tables unwritten-tables.sql listed, for a domain whose own batch
 * query reads them in the same round trip.
 */
export function rulesWithUnwrittenSources<R extends string>(
  rules: SourceRules<R>,
  unwrittenTables: readonly string[],
  assumeEmpty: readonly string[],
): Set<R> {
  const unwritten = new Set(unwrittenTables);
  return new Set(
    (Object.keys(rules) as R[]).filter(
      (rule) => !assumeEmpty.includes(rule) && rules[rule].some((table) => unwritten.has(table)),
    ),
  );
}

/**
 * `<PREFIX>_ASSUME_EMPTY`: a comma-separated list of this domain's rules whose
 * Reclaim-created source tables are to be read as the truth (empty: nothing pending).
 * Unknown rule names are refused, so a typo cannot silently keep or remove entries.
 */
export function assumeEmptyOption<R extends string>(
  env: string,
  rules: SourceRules<R>,
): Option<readonly R[]> {
  const known = Object.keys(rules) as R[];
  return {
    env,
    description:
      `Rules (comma-separated: ${known.join(", ")}) that may read a table only Reclaim created ` +
      "on a Paperclip database as empty instead of keeping entries as source_unavailable",
    defaultText: "(none)",
    read(source: Env) {
      const raw = source[env]?.trim();
      if (!raw) return [];
      const listed = raw
        .split(",")
        .map((s) => s.trim())
        .filter(Boolean);
      const unknown = listed.filter((name) => !known.includes(name as R));
      if (unknown.length > 0)
        throw new ConfigError(env, `unknown rule ${JSON.stringify(unknown[0])} (known: ${known.join(", ")})`);
      return [...new Set(listed as R[])];
    },
  };
}
