/**
 * Reading `EXPLAIN (ANALYZE, FORMAT JSON)` output in tests that prove a statement reads only
 * the rows it needs (by key, never a table scan), whatever plan PostgreSQL keeps.
 */

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
