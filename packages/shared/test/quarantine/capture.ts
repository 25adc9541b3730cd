/** The capture the tests run: a restore-point-like snapshot of the work tree, as a commit. */
import { withObjectQuarantine, type QuarantineOptions, type QuarantineResult } from "../../src";
import { gitEnv, type Repo } from "./git-fixture";

export function capture(
  repo: Repo,
  options: QuarantineOptions & { ref?: string; purpose?: string } = {},
): Promise<QuarantineResult<{ commit: string; tree: string }>> {
  const { ref, purpose, ...rest } = options;
  return withObjectQuarantine(
    repo.dir,
    purpose ?? "capture",
    async (ctx) => {
      await ctx.git(["read-tree", "HEAD"]);
      await ctx.git(["add", "-A"]);
      const tree = (await ctx.git(["write-tree"])).trim();
      const commit = (await ctx.git(["commit-tree", tree, "-p", "HEAD", "-m", "restore point"])).trim();
      if (ref) ctx.updateRefAfterPublish(ref, commit);
      return { commit, tree };
    },
    { env: gitEnv, ...rest },
  );
}
