/** list: a workspace's restore points, newest first, a page at a time (keyset cursor). */
import { z } from "zod";
import type { Db } from "../db";
import { decodeCursor, encodeCursor, timestamp } from "../input";
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

/** Where a page ended: the last row's `createdAt` and `id` (the keyset of the ordering). */
const cursor = z.object({ createdAt: timestamp(), id: z.guid() }).strict();

/** Newest first; `nextCursor` is set when more rows follow. */
export async function listRestorePoints(
  db: Db,
  input: ListInput,
): Promise<{ restorePoints: RestorePointView[]; nextCursor: string | null }> {
  const after = input.cursor === undefined ? null : decodeCursor(input.cursor, cursor);
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
      ? encodeCursor({ createdAt: last.createdAt.toISOString(), id: last.id })
      : null;
  return { restorePoints: page.map(viewOf), nextCursor };
}
