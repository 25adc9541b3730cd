/** The capture the tests run: a restore-point-like snapshot of the work tree, as a commit. */
import { execFile } from "node:child_process";
import {
  withObjectQuarantine,
  type QuarantineContext,
  type QuarantineOptions,
  type QuarantineResult,
} from "../../src";
import { gitEnv, type Repo } from "./git-fixture";

export interface CaptureOptions extends QuarantineOptions {
  ref?: string;
  purpose?: string;
  /**
   * How new objects reach the quarantine. "bulk" (default): `git add -A`, which streams
   * files over core.bigFileThreshold into a pack. "separate-adds": one `git add` per path
   * in `paths`, so each large file gets a pack of its own. "keep-rev": everything loose, then
   * packed by `pack-objects | index-pack --keep` with pack.writeReverseIndex, so the one
   * pack has a `.keep` and a `.rev`.
   */
  packing?: "bulk" | "separate-adds" | "keep-rev";
  paths?: string[];
  /** Called once the capture's commit exists, before publication. */
  onCommit?: (commit: string, ctx: QuarantineContext) => void;
}

export function capture(
  repo: Repo,
  options: CaptureOptions = {},
): Promise<QuarantineResult<{ commit: string; tree: string }>> {
  const { ref, purpose, packing, paths, onCommit, ...rest } = options;
  return withObjectQuarantine(
    repo.dir,
    purpose ?? "capture",
    async (ctx) => {
      await ctx.git(["read-tree", "HEAD"]);
      if (packing === "separate-adds") {
        for (const file of paths ?? []) await ctx.git(["add", "--", file]);
        await ctx.git(["add", "-A"]);
      } else if (packing === "keep-rev") {
        await ctx.git(["-c", "core.bigFileThreshold=1g", "add", "-A"]);
      } else {
        await ctx.git(["add", "-A"]);
      }
      const tree = (await ctx.git(["write-tree"])).trim();
      const commit = (await ctx.git(["commit-tree", tree, "-p", "HEAD", "-m", "restore point"])).trim();
      if (packing === "keep-rev") await packWithKeepAndRev(repo.dir, ctx.env, commit, ctx.signal);
      if (ref) ctx.updateRefAfterPublish(ref, commit);
      onCommit?.(commit, ctx);
      return { commit, tree };
    },
    { env: gitEnv, ...rest },
  );
}

/** Packs the objects new in `commit` into the quarantine as index-pack writes a kept pack. */
function packWithKeepAndRev(
  cwd: string,
  env: NodeJS.ProcessEnv,
  commit: string,
  signal: AbortSignal,
): Promise<void> {
  const script =
    'printf "%s\\n^HEAD\\n" "$1" | git pack-objects -q --revs --stdout |' +
    " git -c pack.writeReverseIndex=true index-pack --stdin --keep=reclaim-test >/dev/null";
  return new Promise((resolve, reject) => {
    execFile("sh", ["-ec", script, "sh", commit], { cwd, env, signal }, (error) =>
      error ? reject(error) : resolve(),
    );
  });
}
