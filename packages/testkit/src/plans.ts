/**
 * Reading `EXPLAIN (ANALYZE, FORMAT JSON)` output in tests that prove a statement reads only
 * the rows it needs (by key, never a table scan), whatever plan PostgreSQL keeps.
 */

import type pg from "pg";

type PlanRows = { "QUERY PLAN": unknown }[];

/** Every node of the plan, depth first. */
export function planNodes(rows: PlanRows): Record<string, unknown>[] {
  const nodes: Record<string, unknown>[] = [];
  const walk = (node: Record<string, unknown>) => {
    nodes.push(node);
    for (const child of (node.Plans as Record<string, unknown>[] | undefined) ?? []) walk(child);
  };
  walk((rows[0]!["QUERY PLAN"] as { Plan: Record<string, unknown> }[])[0]!.Plan);
  return nodes;
}

/** Every scan of a table: [table, node type, rows it read (returned and filtered out, all loops)]. */
export function tableScans(rows: PlanRows): [string, string, number][] {
  return planNodes(rows)
    .filter((n) => String(n["Node Type"]).includes("Scan") && typeof n["Relation Name"] === "string")
    .map((n): [string, string, number] => [
      String(n["Relation Name"]),
      String(n["Node Type"]),
      (Number(n["Actual Rows"]) + Number(n["Rows Removed by Filter"] ?? 0)) * Number(n["Actual Loops"] ?? 1),
    ]);
}

/** The rows the plan's scans read, by table. */
export function rowsReadByTable(rows: PlanRows): Map<string, number> {
  const read = new Map<string, number>();
  for (const [table, , n] of tableScans(rows)) read.set(table, (read.get(table) ?? 0) + n);
  return read;
}

/** What `readsUnderEveryPlan` saw under one plan. */
export interface PlanReads {
  analyzed: boolean;
  mode: "force_custom_plan" | "force_generic_plan";
  /** The rows the plan's scans read, by table (`rowsReadByTable`). */
  read: Map<string, number>;
}

/**
 * A statement prepared (`PREPARE s (<types>) AS <text>`) and run as `EXECUTE s (<args>)` (SQL
 * literals) under each plan PostgreSQL can keep for it: on tables never analyzed (a young
 * database, as a fresh install's), then after `analyze` (default: the whole database), each with
 * a custom and a generic plan (a custom one only for a statement sent unnamed); the rows each
 * plan's scans read, by table. The caller asserts
 * what a keyed read allows. A statement that writes runs in a transaction rolled back.
 */
export async function readsUnderEveryPlan(
  pool: pg.Pool,
  statement: {
    text: string;
    types: string;
    args: string;
    analyze?: string;
    /** A statement that writes: every run is rolled back (EXPLAIN ANALYZE executes it). */
    writes?: boolean;
    /**
     * Sent unnamed (Prisma's raw queries): PostgreSQL plans it with its values every time, so
     * only custom plans are tried.
     */
    unnamed?: boolean;
  },
): Promise<PlanReads[]> {
  const client = await pool.connect();
  const seen: PlanReads[] = [];
  try {
    if (statement.writes) await client.query("BEGIN");
    for (const analyzed of [false, true]) {
      if (analyzed) await client.query(statement.analyze ?? "ANALYZE");
      const modes = statement.unnamed
        ? (["force_custom_plan"] as const)
        : (["force_custom_plan", "force_generic_plan"] as const);
      for (const mode of modes) {
        await client.query(`SET plan_cache_mode = ${mode}`);
        await client.query(`PREPARE under_every_plan (${statement.types}) AS ${statement.text}`);
        try {
          if (statement.writes) await client.query("SAVEPOINT under_every_plan");
          const { rows } = await client.query<{ "QUERY PLAN": unknown }>(
            `EXPLAIN (ANALYZE, FORMAT JSON) EXECUTE under_every_plan (${statement.args})`,
          );
          if (statement.writes) await client.query("ROLLBACK TO SAVEPOINT under_every_plan");
          seen.push({ analyzed, mode, read: rowsReadByTable(rows) });
        } finally {
          // (After a failure in a transaction this fails too: the failure is what the caller sees.)
          await client.query("DEALLOCATE under_every_plan").catch(() => undefined);
        }
      }
    }
  } finally {
    if (statement.writes) await client.query("ROLLBACK").catch(() => undefined);
    await client.query("RESET plan_cache_mode").catch(() => undefined);
    client.release();
  }
  return seen;
}
