/**
 * Issue directories (`dir:<issue>` items): what points at or into each, and the orphan rule.
 *
 *  - an open workspace row points at or into it: that row's item is woken (rules.ts judges it);
 *  - a closed row its issue is still bound to: saved on that row and removed like an open one
 *    (`preserved_and_removed`): the row's item is woken and judged as a bound row;
 *  - otherwise an orphan: removed, without a restore point (no row can reopen it), once the
 *    orphan rule holds (rules.ts `judgeOrphan`), re-checked under the issue's source lock and
 *    the lifecycle locks of the directory's rows, renamed to `.expired-<random>` in that
 *    transaction and deleted after it. A failed delete leaves the name for the walk's
 *    leftover pass, scheduled an hour later.
 * Each directory logs `execution_workspace.task_directory_cleanup`.
 */
import path from "node:path";
import type { Tx } from "../../db";
import { PathRefused, removeRetired, retire, sameIdentity, treeStats, type ProvenDir } from "../../fs";
import { INSTANCE_SCOPE, settleItems, wakeItems, type DueItem, type ItemWake } from "../../ledger";
import {
  consumersOf,
  subjectFacts,
  tryLockIssueSource,
  tryLockWorkspaceLifecycle,
  workspaceRows,
} from "../../workspaces";
import type { JobContext } from "../types";
import { LIMITS, type TaskDirectoriesConfig } from "./config";
import { DOMAIN, itemOf, verdictOf, wsItem, type Settle } from "./events";
import { directoryRefs, type DirectoryRef } from "./queries";
import { classify, judgeOrphan, type Verdict } from "./rules";
import { cleanupLog, type BatchBytes } from "./logs";
import { retryLeftover } from "./orphans";
import { provenTask, sideName, taskDirectory, type ProvenTask } from "./survey";

type Ctx = JobContext<TaskDirectoriesConfig>;

export interface RetiredOrphan {
  /** The proven company folder it was renamed in, and its `.expired-*` name there. */
  folder: ProvenDir;
  name: string;
  companyId: string;
  issueId: string;
  bytes: number;
}

export interface DirectoryWork {
  /** Settles the items; renames removable orphans (deleted after commit: `deleteRetiredOrphans`). */
  apply(tx: Tx): Promise<RetiredOrphan[]>;
}

interface Judged {
  item: DueItem;
  issueId: string;
  path: string;
  refs: DirectoryRef[];
  verdict: Verdict;
  bytes: number;
  /** The directory as proven when it was judged: only that one is renamed. */
  proven: ProvenTask & { kind: "directory" };
}

async function judgeOrphans(ctx: Ctx, db: Ctx["db"] | Tx, companyId: string, items: DueItem[]) {
  const dirs = items.map((item) => ({ item, issueId: itemOf(item.itemId).id }));
  const paths = dirs.map((d) => ({
    key: d.issueId,
    path: taskDirectory(ctx.instanceRoot, companyId, d.issueId),
  }));
  const refs = await directoryRefs(db, companyId, paths);
  const facts = await subjectFacts(
    db,
    companyId,
    dirs.map((d) => ({
      key: d.issueId,
      rootIssueId: d.issueId,
      workspaceIds: (refs.get(d.issueId) ?? []).filter((r) => r.kind === "workspace").map((r) => r.id),
    })),
    ctx.startedAt,
  );
  const rows = await workspaceRows(
    db,
    companyId,
    [...refs.values()]
      .flat()
      .filter((r) => r.kind === "workspace")
      .map((r) => r.id),
  );
  return { dirs, paths, refs, facts, rows };
}

/**
 * Judges the due `dir:` items. `judgedHere`: the workspaces whose own items this batch judged
 * already; a directory they point at does not wake them again (each would be judged twice).
 * `sizes`: the bytes this batch measured already (a directory of an open workspace is logged
 * with them, not walked again).
 */
export async function judgeDirectories(
  ctx: Ctx,
  companyId: string,
  items: DueItem[],
  judgedHere: ReadonlySet<string>,
  sizes: BatchBytes,
): Promise<DirectoryWork> {
  const wakes: ItemWake[] = [];
  const settle: Settle[] = [];
  const orphans: Judged[] = [];
  const read = await judgeOrphans(ctx, ctx.db, companyId, items);
  for (const [i, d] of read.dirs.entries()) {
    if (ctx.signal.aborted) {
      // Cancelled between entries: the rest stay due for the next batch, and what this batch
      // saved already is still applied.
      ctx.continueNow();
      break;
    }
    const dir = read.paths[i]!.path;
    const id = `isolated-workspaces/${companyId}/${d.issueId}`;
    const proven = await provenTask(ctx.instanceRoot, dir);
    const kind = proven.kind;
    ctx.report.examined();
    if (kind === "missing") {
      settle.push({ item: d.item, dueAt: null, reason: "missing" });
      continue;
    }
    if (proven.kind !== "directory") {
      cleanupLog(ctx, companyId, d.issueId, "skipped", "unsafe_task_directory", 0);
      ctx.report.skip(id, "unsafe_task_directory", { companyId });
      settle.push({ item: d.item, dueAt: null, reason: "unsafe_task_directory" });
      continue;
    }
    const refs = read.refs.get(d.issueId) ?? [];
    const facts = read.facts.get(d.issueId);
    const boundTo = facts?.root_bound
      ? (refs.find((r) => r.exact && r.kind === "workspace")?.id ?? null)
      : null;
    const classification = classify(refs, boundTo);
    if (classification.kind !== "orphan") {
      // The row is judged by its own item (open, or closed and still bound), and logs it.
      if (classification.kind === "open") {
        cleanupLog(ctx, companyId, d.issueId, "skipped", "workspace_open", await sizes.of(dir, ctx.signal));
      }
      if (!judgedHere.has(classification.workspaceId))
        wakes.push({
          domain: DOMAIN,
          scope: companyId,
          itemId: wsItem(classification.workspaceId),
          reason: "item",
          dueAt: ctx.startedAt,
        });
      settle.push({ item: d.item, dueAt: null, reason: classification.kind });
      continue;
    }
    const stats = await treeStats(proven.dir.path, ctx.signal, proven.info);
    const rows = refs.filter((r) => r.kind === "workspace").map((r) => read.rows.get(r.id)?.metadata);
    const verdict = judgeOrphan(
      {
        facts: facts?.root_exists ? facts : undefined,
        consumers: facts ? consumersOf(facts, rows, ctx.startedAt) : [],
        projectRefs: refs.filter((r) => r.kind === "project_workspace").length,
        newestMtimeMs: stats.newestMtimeMs,
      },
      { now: ctx.startedAt, graceMs: ctx.config.orphanGraceMs, busyRetryMs: LIMITS.busyRetryMs },
    );
    if (!verdict.save) {
      ctx.report.skip(id, verdict.reason, { companyId, bytes: stats.allocatedBytes });
      cleanupLog(ctx, companyId, d.issueId, "skipped", verdict.reason, stats.allocatedBytes);
      settle.push({ item: d.item, dueAt: verdict.recheckAt, reason: verdict.reason });
      continue;
    }
    orphans.push({
      item: d.item,
      issueId: d.issueId,
      path: dir,
      refs,
      verdict,
      bytes: stats.allocatedBytes,
      proven,
    });
  }
  return {
    async apply(tx) {
      const retired: RetiredOrphan[] = [];
      for (const o of orphans) {
        const id = `isolated-workspaces/${companyId}/${o.issueId}`;
        if (ctx.dryRun) {
          ctx.report.candidate(id, o.bytes, { companyId });
          cleanupLog(ctx, companyId, o.issueId, "dry_run", null, o.bytes);
          settle.push({ item: o.item, dueAt: null, reason: "dry_run" });
          continue;
        }
        // Judged without a lock; what follows acts only on the directory judged.
        await ctx.faults.hit("task-directories.orphan-judged");
        const kept = await recheckOrphan(ctx, tx, companyId, o);
        if (kept) {
          ctx.report.skip(id, kept.reason, { companyId });
          cleanupLog(ctx, companyId, o.issueId, "skipped", kept.reason, o.bytes);
          settle.push({ item: o.item, dueAt: kept.recheckAt, reason: kept.reason });
          continue;
        }
        // Only the directory judged (device + inode), in its proven company folder.
        const { company, dir } = o.proven;
        let name: string;
        try {
          name = await retire(company, path.basename(o.path), ".expired", dir.identity, sideName(".expired"));
        } catch (error) {
          if (!(error instanceof PathRefused)) throw error;
          const reason = error.reason === "missing" ? "task_directory_missing" : "unsafe_task_directory";
          ctx.report.skip(id, reason, { companyId });
          cleanupLog(ctx, companyId, o.issueId, "skipped", reason, 0);
          settle.push({ item: o.item, dueAt: null, reason });
          continue;
        }
        retired.push({ folder: company, name, companyId, issueId: o.issueId, bytes: o.bytes });
        settle.push({ item: o.item, dueAt: null, reason: "removed" });
      }
      await settleItems(tx, DOMAIN, settle.map(verdictOf), ctx.startedAt);
      for (const s of settle) if (s.dueAt) ctx.deadlines.at("item", s.dueAt);
      for (const r of await wakeItems(tx, wakes, ctx.startedAt)) ctx.deadlines.at(r.reason, r.dueAt);
      return retired;
    },
  };
}

/** Deletes the orphans renamed in the committed transaction. */
export async function deleteRetiredOrphans(ctx: Ctx, retired: RetiredOrphan[]): Promise<void> {
  for (const r of retired) {
    const id = `isolated-workspaces/${r.companyId}/${r.issueId}`;
    try {
      await ctx.faults.hit("task-directories.orphan-renamed");
      await removeRetired(r.folder, r.name);
      ctx.report.removedEntry(id, r.bytes, { companyId: r.companyId });
      cleanupLog(ctx, r.companyId, r.issueId, "removed", null, r.bytes);
    } catch {
      ctx.report.failed(id, "delete_failed", { companyId: r.companyId });
      // The walk's leftover pass deletes it, an hour later.
      ctx.deadlines.at("leftovers", await retryLeftover(ctx, r.folder, r.name), INSTANCE_SCOPE);
    }
  }
}

/** Under the issue's source lock and the directory's rows' lifecycle locks, the orphan rule again. */
async function recheckOrphan(
  ctx: Ctx,
  tx: Tx,
  companyId: string,
  o: Judged,
): Promise<(Verdict & { save: false }) | null> {
  const busy = { save: false as const, reason: "lock_busy", recheckAt: ctx.later(LIMITS.busyRetryMs) };
  if ((await tryLockIssueSource(tx, companyId, o.issueId)) === "busy") return busy;
  for (const r of o.refs.filter((x) => x.kind === "workspace")) {
    if (!(await tryLockWorkspaceLifecycle(tx, r.id))) return busy;
  }
  const read = await judgeOrphans(ctx, tx, companyId, [o.item]);
  const refs = read.refs.get(o.issueId) ?? [];
  const facts = read.facts.get(o.issueId);
  const boundTo = facts?.root_bound
    ? (refs.find((r) => r.exact && r.kind === "workspace")?.id ?? null)
    : null;
  if (classify(refs, boundTo).kind !== "orphan")
    return { save: false, reason: "workspace_appeared", recheckAt: ctx.startedAt };
  let stats: Awaited<ReturnType<typeof treeStats>>;
  try {
    // The directory judged, still reached without a link: only it is walked again.
    await o.proven.dir.recheck();
    stats = await treeStats(o.proven.dir.path, undefined, await lstatProven(o.proven));
  } catch (error) {
    if (!(error instanceof PathRefused)) throw error;
    return { save: false, reason: "unsafe_task_directory", recheckAt: null };
  }
  const verdict = judgeOrphan(
    {
      facts: facts?.root_exists ? facts : undefined,
      consumers: facts
        ? consumersOf(
            facts,
            refs.map((r) => read.rows.get(r.id)?.metadata),
            ctx.startedAt,
          )
        : [],
      projectRefs: refs.filter((r) => r.kind === "project_workspace").length,
      newestMtimeMs: stats.newestMtimeMs,
    },
    { now: ctx.startedAt, graceMs: ctx.config.orphanGraceMs, busyRetryMs: LIMITS.busyRetryMs },
  );
  return verdict.save ? null : verdict;
}

/** The proven directory's own lstat now: still that directory (device + inode), not a link. */
async function lstatProven(p: ProvenTask & { kind: "directory" }) {
  const info = await p.company.lstatEntry(path.basename(p.dir.path));
  if (info === null || !info.isDirectory() || !sameIdentity(p.dir.identity, { dev: info.dev, ino: info.ino }))
    throw new PathRefused("path_changed", p.dir.path);
  return info;
}
