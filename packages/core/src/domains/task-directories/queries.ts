/** The database reads of this domain beyond the shared workspace facts (SQL beside this file). */
import type { Db, Tx } from "../../db";
import { sqlFile } from "../../db/sql";

export interface DirectoryRef {
  key: string;
  kind: "workspace" | "project_workspace";
  id: string;
  status: string | null;
  source_issue_id: string | null;
  exact: boolean;
}

export async function directoryRefs(
  db: Db | Tx,
  companyId: string,
  dirs: { key: string; path: string }[],
): Promise<Map<string, DirectoryRef[]>> {
  const found = new Map<string, DirectoryRef[]>(dirs.map((d) => [d.key, []]));
  if (dirs.length === 0) return found;
  const rows = await db.$queryRawUnsafe<DirectoryRef[]>(
    sqlFile(__dirname, "directory-refs.sql"),
    JSON.stringify(dirs),
    companyId,
  );
  for (const row of rows) found.get(row.key)?.push(row);
  return found;
}
