/** list: a workspace's restore points, newest first, a page at a time (keyset cursor). */
import type { Db } from "../db";
import { invalid } from "./refusals";
import { viewOf, type RestorePointView } from "./view";
import type { RestorePointStatus } from "./vocabulary";

export interface ListInput {
  companyId: string;
  executionWorkspaceId: string;
  statuses?: RestorePointStatus[];
  limit: number;
  /** A previous answer's `nextCursor`. */
  cursor?: string;
}

interface Cursor {
  createdAt: string;
  id: string;
}

function decodeCursor(token: string): Cursor {
  try {
    const value = JSON.parse(Buffer.from(token, "base64url").toString("utf8")) as Partial<Cursor>;
    if (
      typeof value.createdAt === "string" &&
      typeof value.id === "string" &&
      !Number.isNaN(Date.parse(value.createdAt))
    ) {
      return { createdAt: value.createdAt, id: value.id };
    }
  } catch {
    // falls through to the 400 below
  }
  throw invalid("cursor", "is not a cursor this API returned");
}

/** Newest first; `nextCursor` is set when more rows follow. */
export async function listRestorePoints(
  db: Db,
  input: ListInput,
): Promise<{ restorePoints: RestorePointView[]; nextCursor: string | null }> {
  const after = input.cursor === undefined ? null : decodeCursor(input.cursor);
  const rows = await db.executionWorkspaceRestorePoint.findMany({
    where: {
      companyId: input.companyId,
      executionWorkspaceId: input.executionWorkspaceId,
      ...(input.statuses ? { status: { in: input.statuses } } : {}),
      ...(after
        ? {
            OR: [
              { createdAt: { lt: new Date(after.createdAt) } },
              { createdAt: new Date(after.createdAt), id: { lt: after.id } },
            ],
          }
        : {}),
    },
    orderBy: [{ createdAt: "desc" }, { id: "desc" }],
    take: input.limit + 1,
  });
  const page = rows.slice(0, input.limit);
  const last = page.at(-1);
  const nextCursor =
    rows.length > input.limit && last
      ? Buffer.from(JSON.stringify({ createdAt: last.createdAt.toISOString(), id: last.id })).toString(
          "base64url",
        )
      : null;
  return { restorePoints: page.map(viewOf), nextCursor };
}
