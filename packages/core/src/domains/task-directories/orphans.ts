/**
 * The instance job: the walk of `isolated-workspaces/` once per start, 8 issue directories per
 * sweep, continuing from its cursor in the next sweep; each directory it meets is handed to
 * its company's job (a `dir:` item due now), which classifies it (directories.ts). The walk
 * also deletes leftover `.expired-*` and `.restoring-*` directories older than an hour (a
 * crash mid-delete, an interrupted restore). Never follows a symbolic link.
 */
import { rm } from "node:fs/promises";
import { lstat } from "node:fs/promises";
import path from "node:path";
import type { Tx } from "../../db";
import { treeStats } from "../../fs";
import { wakeItems, type ItemWake } from "../../ledger";
import type { JobContext } from "../types";
import { LIMITS, type TaskDirectoriesConfig } from "./config";
import { DOMAIN, dirItem } from "./events";
import { listIssueDirectories, listSideDirectories } from "./survey";

type Ctx = JobContext<TaskDirectoriesConfig>;

export interface OrphanWalk {
  apply(tx: Tx): Promise<{ removals: []; orphans: [] }>;
}

const WALK_CURSOR = "walk";

export async function prepareOrphanWalk(ctx: Ctx): Promise<OrphanWalk> {
  const walking =
    ctx.claimed.some((c) => c.reason === "startup" || c.reason === "continue") || ctx.kind === "sweep";
  if (!ctx.dryRun) await deleteLeftovers(ctx);
  let slice: string[] = [];
  let cursor: string | null = null;
  if (walking) {
    const all = await listIssueDirectories(ctx.instanceRoot);
    const after = await ctx.readCursor(WALK_CURSOR);
    const rest = after === null ? all : all.filter((name) => name > after);
    slice = rest.slice(0, LIMITS.directoriesPerSweep);
    cursor = rest.length > slice.length ? slice.at(-1)! : null;
  }
  return {
    async apply(tx) {
      const wakes: ItemWake[] = slice.map((rel) => {
        const [companyId, issueId] = rel.split("/") as [string, string];
        return {
          domain: DOMAIN,
          scope: companyId,
          itemId: dirItem(issueId),
          reason: "item",
          dueAt: ctx.startedAt,
        };
      });
      for (let i = 0; i < wakes.length; i++) ctx.report.examined();
      for (const r of await wakeItems(tx, wakes, ctx.startedAt)) ctx.deadlines.at(r.reason, r.dueAt, r.scope);
      if (walking) {
        await ctx.writeCursor(WALK_CURSOR, cursor, tx);
        if (cursor !== null) ctx.continueNow();
      }
      return { removals: [], orphans: [] };
    },
  };
}

async function deleteLeftovers(ctx: Ctx): Promise<void> {
  const cutoff = ctx.startedAt.getTime() - LIMITS.leftoverAgeMs;
  for (const leftover of await listSideDirectories(ctx.instanceRoot)) {
    const rel = path.relative(ctx.instanceRoot, leftover);
    try {
      const stat = await lstat(leftover);
      if (!stat.isDirectory() || stat.mtimeMs > cutoff) continue;
      const bytes = (await treeStats(leftover)).allocatedBytes;
      await rm(leftover, { recursive: true, force: false, maxRetries: 2 });
      ctx.report.removedEntry(rel, bytes, { reason: "interrupted_deletion" });
    } catch {
      ctx.report.failed(rel, "leftover_delete_failed");
      ctx.deadlines.at("leftovers", ctx.later(LIMITS.leftoverAgeMs));
    }
  }
}
