/**
 * What keeps a nested `.paperclip-repositories` checkout that is a standalone clone from
 * expiring even in restore-point mode (spec, "Git workspace restore points"), beyond what
 * every capture refuses:
 *
 *  - another local branch or tag has commits its remote lacks (`other_branch_unpushed`);
 *  - a reflog holds commits that are neither on the remote nor part of the checked-out
 *    history the restore point bundles: HEAD, ORIG_HEAD, the HEAD reflog, the checked-out
 *    branch's reflog, and the remote-tracking refs with their reflogs, which a restore point
 *    saves as history-only objects (`unique_branch_reflog_commits`);
 *  - objects reachable from nothing (`unreachable_objects`; fsck's roots are every ref, every
 *    reflog and the index), except those reachable from the history-only commits an earlier
 *    restore point of this checkout imported (`restored`, from the caller's manifest: the
 *    bundle saves them again, so nothing the rule protects is left unsaved);
 *  - a `COMMIT_EDITMSG` draft that matches no commit (worktree-state.ts, so verify sees it).
 *
 * A nested worktree of a shared clone has none of these rules: branches outside its
 * `paperclip/<id>/` prefix and the shared clone's history never block (scope, worktree-state.ts).
 */
import { CaptureRefusedError } from "./errors";
import type { SafeRepository } from "./safe-git";
import { reflogOids, type WorktreeState } from "./worktree-state";

/** A git runner for capture's throwaway helper repository (bundle.ts). */
export type HelperGit = (args: string[], input?: string) => Promise<string>;

/** Runs `rev-list --count` over `positives` minus `negatives` (only objects that exist). */
async function countMissing(
  helperGit: HelperGit,
  positives: string[],
  negatives: Iterable<string>,
): Promise<number> {
  if (positives.length === 0) return 0;
  const input = [...positives, ...[...negatives].map((oid) => `^${oid}`)].join("\n") + "\n";
  return Number((await helperGit(["rev-list", "--count", "--stdin"], input)).trim());
}

export async function refuseNestedHistory(
  repo: SafeRepository,
  state: WorktreeState,
  helperGit: HelperGit,
  base: string[],
  types: Map<string, string>,
  restored: string[] = [],
): Promise<void> {
  const exists = (oid: string): boolean => types.get(oid) === "commit" || types.get(oid) === "tag";

  const others = state.allRefs.filter(
    (r) => (r.name.startsWith("refs/heads/") || r.name.startsWith("refs/tags/")) && r.name !== state.head.ref,
  );
  if ((await countMissing(helperGit, others.map((r) => r.oid).filter(exists), base)) > 0) {
    const ahead: string[] = [];
    for (const ref of others) {
      if (exists(ref.oid) && (await countMissing(helperGit, [ref.oid], base)) > 0) ahead.push(ref.name);
      if (ahead.length === 5) break;
    }
    throw new CaptureRefusedError("other_branch_unpushed", ahead);
  }

  const bundled = new Set<string>([...base, state.head.oid, ...restored]);
  if (state.origHead) bundled.add(state.origHead);
  for (const oid of reflogOids(state.headReflog)) bundled.add(oid);
  for (const ref of state.remoteTracking ?? []) bundled.add(ref.oid);
  for (const log of state.remoteTrackingReflogs) for (const oid of reflogOids(log.log)) bundled.add(oid);
  const otherLogs = state.refReflogs.filter((l) => l.name !== state.head.ref);
  for (const log of state.refReflogs)
    if (log.name === state.head.ref) for (const oid of reflogOids(log.log)) bundled.add(oid);
  const held = [...new Set(otherLogs.flatMap((l) => reflogOids(l.log)))].filter(exists);
  if ((await countMissing(helperGit, held, [...bundled].filter(exists))) > 0) {
    throw new CaptureRefusedError(
      "unique_branch_reflog_commits",
      otherLogs.map((l) => l.name),
    );
  }

  const fsck = await repo.git([
    "fsck",
    "--unreachable",
    "--connectivity-only",
    "--no-progress",
    "--no-dangling",
  ]);
  let unreachable = fsck.stdout
    .toString("utf8")
    .split("\n")
    .filter((line) => line.startsWith("unreachable "))
    .map((line) => line.split(" ")[2]!);
  if (unreachable.length > 0 && restored.length > 0) {
    // Everything the restored commits reach that no ref does: a superset of the unreachable
    // objects among what they reach, and nothing they do not reach (the bundle saves it all).
    const saved = new Set(
      (
        await repo.text(["rev-list", "--objects", "--no-object-names", "--stdin", "--not", "--all"], {
          input: restored.join("\n") + "\n",
        })
      ).split("\n"),
    );
    unreachable = unreachable.filter((oid) => !saved.has(oid));
  }
  if (unreachable.length > 0) throw new CaptureRefusedError("unreachable_objects", unreachable);
}
