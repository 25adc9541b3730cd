/**
 * Native workspace sync folders: below the configured top folder
 * (`<instance>/native-workspace-sync`) nothing is followed, read through or written through.
 * A run's sync folder, an `.expired-*` leftover and a link inside a folder are planted as
 * symlinks to directories outside the instance holding entries shaped like real ones, with
 * rows that would make them removable: the sweeps leave the targets exactly as they were
 * (listing, times, contents; atimes show nothing read) and the report names the link
 * `symlink`. The top folder itself is taken as configured: an operator may put it on another
 * disk with a symlink, and it then works as a real directory would.
 */
import { randomUUID } from "node:crypto";
import { existsSync } from "node:fs";
import { lutimes, rename, symlink, utimes } from "node:fs/promises";
import path from "node:path";
import { daysAgo, outsideDirs, startStack, tempDir, type Stack } from "@reclaim/testkit";
import { insertRun, makeFolder, sweep, syncRoot } from "@reclaim/testkit/src/fixtures/native-workspace-sync";

let stack: Stack;
beforeAll(async () => {
  stack = await startStack();
});
afterAll(async () => {
  await stack?.stop();
  await targets.removeAll();
});
const targets = outsideDirs(daysAgo(30));
const plant = targets.plant;

const FOLDER = { "descriptor.json": "{}", "manifest.json": "{}", "seeds/workspace.tar": 16 * 1024 };

const reasonsOf = (report: { entries: { id: string; reason?: string; outcome: string }[] }, id: string) =>
  report.entries.filter((e) => e.id === id).map((e) => e.reason ?? e.outcome);

describe("nothing below native-workspace-sync/ is followed through a symlink", () => {
  it("a run's sync folder and an .expired-* leftover that are symlinks stay, and so does what they point at", async () => {
    const c = randomUUID();
    const run = await insertRun(stack, { companyId: c });
    const folder = await plant(path.join(syncRoot(stack), run), FOLDER);
    const expired = `.expired-${randomUUID()}`;
    const leftover = await plant(path.join(syncRoot(stack), expired), FOLDER);
    const reports = [await sweep(stack, c), await sweep(stack, null), await sweep(stack, c)];
    expect(await folder.changes()).toEqual([]);
    expect(await leftover.changes()).toEqual([]);
    expect(reasonsOf(reports[0]!, `native-workspace-sync/${run}`)).toEqual(["symlink"]);
    expect(reasonsOf(reports[0]!, `native-workspace-sync/${expired}`)).toEqual(["symlink"]);
  });

  it("a link inside a removed folder is removed as a link; its target stays", async () => {
    const c = randomUUID();
    const run = await insertRun(stack, { companyId: c });
    const dir = await makeFolder(stack, run);
    const target = await plant(path.join(dir, "seeds", "elsewhere"), FOLDER);
    await lutimes(path.join(dir, "seeds", "elsewhere"), daysAgo(30), daysAgo(30));
    await utimes(path.join(dir, "seeds"), daysAgo(30), daysAgo(30));
    const report = await sweep(stack, c);
    expect(reasonsOf(report, `native-workspace-sync/${run}`)).toContain("removed");
    expect(existsSync(dir)).toBe(false);
    expect(await target.changes()).toEqual([]);
  });

  it("the top folder is taken as configured: a symlinked native-workspace-sync works like a real one", async () => {
    const elsewhere = await tempDir("reclaim-sync-disk-");
    try {
      const c = randomUUID();
      const run = await insertRun(stack, { companyId: c });
      await makeFolder(stack, run);
      await rename(syncRoot(stack), path.join(elsewhere.path, "sync"));
      await symlink(path.join(elsewhere.path, "sync"), syncRoot(stack));
      const report = await sweep(stack, c);
      expect(reasonsOf(report, `native-workspace-sync/${run}`)).toContain("removed");
      expect(existsSync(path.join(elsewhere.path, "sync", run))).toBe(false);
    } finally {
      await elsewhere.remove();
    }
  });
});
