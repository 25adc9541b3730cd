/**
 * The instance job: the walk of `isolated-workspaces/` once per start, 8 issue directories per
 * sweep, continuing from its cursor in the next sweep; each directory it meets is handed to
 * its company's job (a `dir:` item due now), which classifies it (directories.ts). The walk
 * also deletes leftover `.expired-*` and `.restoring-*` directories older than an hour (a
 * crash mid-delete, an interrupted restore); a younger one, or one it could not delete, is
 * looked at again when it is an hour old (`leftovers`). Never follows a symbolic link.
 *
 * A start-up claim walks from the beginning, even when the previous start's walk stopped half
 * way (its cursor and continuation still in the ledger): every start walks every directory.
 */
import path from "node:path";
import type { Tx } from "../../db";
import { removeRetired, type ProvenDir } from "../../fs";
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
  const startup = ctx.claimed.some((c) => c.reason === "startup");
  const walking = startup || ctx.claimed.some((c) => c.reason === "continue") || ctx.kind === "sweep";
  if (!ctx.dryRun) await deleteLeftovers(ctx);
  let slice: string[] = [];
  let cursor: string | null = null;
  if (walking) {
    const all = await listIssueDirectories(ctx.instanceRoot);
    const after = startup ? null : await ctx.readCursor(WALK_CURSOR);
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
      // A dry-run sweep schedules nothing (its deadlines are dropped): woken items would be
      // judged by the company's next job, work a diagnosis must not cause.
      const diagnosis = ctx.kind === "sweep" && ctx.dryRun;
      if (!diagnosis) {
        for (const r of await wakeItems(tx, wakes, ctx.startedAt))
          ctx.deadlines.at(r.reason, r.dueAt, r.scope);
      }
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
  for (const { folder, name, symlink } of await listSideDirectories(ctx.instanceRoot)) {
    // A link with a leftover's name is never followed nor deleted (it is not ours).
    if (symlink) continue;
    const rel = path.relative(ctx.instanceRoot, folder.join(name));
    let changedMs: number | null = null;
    try {
      const stat = await folder.lstatEntry(name);
      if (stat === null || !stat.isDirectory()) continue;
      changedMs = stat.mtimeMs;
      if (stat.mtimeMs > cutoff) {
        // Perhaps still in use (a removal or restore under way): looked at when an hour old.
        ctx.deadlines.at("leftovers", hourAfter(stat.mtimeMs));
        continue;
      }
      // In the proven company folder, confirmed before the walk and the delete (never through a link).
      const bytes = await removeRetired(folder, name);
      ctx.report.removedEntry(rel, bytes, { reason: "interrupted_deletion" });
    } catch {
      ctx.report.failed(rel, "leftover_delete_failed");
      ctx.deadlines.at("leftovers", await retryLeftover(ctx, folder, name, changedMs));
    }
  }
}

/** The first moment a leftover last changed at `changedMs` is older than an hour. */
const hourAfter = (changedMs: number) => new Date(Math.ceil(changedMs) + LIMITS.leftoverAgeMs);

/**
 * When to try a leftover again that could not be deleted: an hour later, and no sooner than
 * it is an hour old again (a delete that removed part of it changed it just now).
 */
export async function retryLeftover(
  ctx: Ctx,
  folder: ProvenDir,
  name: string,
  changedMs: number | null = null,
): Promise<Date> {
  const now = await folder.lstatEntry(name).then(
    (stat) => stat?.mtimeMs ?? changedMs,
    () => changedMs,
  );
  const later = ctx.later(LIMITS.leftoverAgeMs);
  return now === null ? later : new Date(Math.max(later.getTime(), hourAfter(now).getTime()));
}
