/**
 * Rule: under the expiration locks the worktree must still match the captured snapshot
 * exactly; verifyUnchanged detects each single change as a typed difference, never a throw.
 */
import { chmod, writeFile } from "node:fs/promises";
import path from "node:path";
import { verifyUnchanged, type DifferenceKind } from "../../src";
import { cleanup, git, tempDir } from "./fixture";
import { busyWorktree, captureManifest } from "./round-trip";

afterAll(cleanup);

async function kindsAfter(
  change: (work: string, bare: string) => Promise<unknown>,
): Promise<DifferenceKind[]> {
  const { work, remote } = await busyWorktree(await tempDir());
  const manifest = await captureManifest(work);
  await change(work, remote.bare);
  const result = await verifyUnchanged(work, manifest);
  return result.unchanged ? [] : result.differences.map((d) => d.kind);
}

describe("verifyUnchanged", () => {
  it("reports an untouched worktree unchanged, and the same worktree gives the same manifest bytes", async () => {
    const { work } = await busyWorktree(await tempDir());
    const first = await captureManifest(work);
    await expect(verifyUnchanged(work, first)).resolves.toEqual({ unchanged: true });
    await git(work, ["status"]); // an agent's status refreshes the index's stat data: not a change
    const second = await captureManifest(work);
    expect(JSON.stringify(second)).toBe(JSON.stringify(first));
    await expect(verifyUnchanged(work, first)).resolves.toEqual({ unchanged: true });
  });

  it("detects one byte changed in an unmodified tracked file", async () => {
    await expect(kindsAfter((w) => writeFile(path.join(w, "b.txt"), "c\n"))).resolves.toContain("tracked");
  });

  it("detects one byte changed in an already modified tracked file", async () => {
    await expect(kindsAfter((w) => writeFile(path.join(w, "a.txt"), "a chanGed\n"))).resolves.toEqual([
      "tracked",
    ]);
  });

  it("detects a new untracked file", async () => {
    await expect(kindsAfter((w) => writeFile(path.join(w, "another.txt"), "x"))).resolves.toEqual([
      "untracked",
    ]);
  });

  it("detects a byte changed in an untracked file", async () => {
    await expect(kindsAfter((w) => writeFile(path.join(w, "new.txt"), "untrackeD\n"))).resolves.toEqual([
      "untracked",
    ]);
  });

  it("detects a new ignored file", async () => {
    await expect(kindsAfter((w) => writeFile(path.join(w, "more.log"), "x"))).resolves.toEqual(["ignored"]);
  });

  it("detects a mode flip of a tracked file and of an untracked file", async () => {
    await expect(kindsAfter((w) => chmod(path.join(w, "c.sh"), 0o755))).resolves.toContain("tracked");
    await expect(kindsAfter((w) => chmod(path.join(w, "new.txt"), 0o600))).resolves.toEqual(["untracked"]);
  });

  it("detects a commit followed by a reset (the HEAD reflog changed)", async () => {
    const kinds = await kindsAfter(async (w) => {
      await git(w, ["commit", "-q", "--allow-empty", "-m", "later"]);
      await git(w, ["reset", "-q", "--soft", "HEAD~1"]);
    });
    expect(kinds).toContain("history");
    expect(kinds).not.toContain("head");
  });

  it("detects ORIG_HEAD moved alone (its digest), and a HEAD reflog entry dropped alone", async () => {
    await expect(
      kindsAfter((w) => git(w, ["update-ref", "--no-deref", "ORIG_HEAD", "origin/main"])),
    ).resolves.toEqual(["history"]);
    await expect(kindsAfter((w) => git(w, ["reflog", "delete", "HEAD@{1}"]))).resolves.toEqual(["history"]);
  });

  it("detects a moved remote-tracking ref", async () => {
    await expect(
      kindsAfter((w) => git(w, ["update-ref", "refs/remotes/origin/main", "HEAD"])),
    ).resolves.toEqual(["remote_tracking"]);
  });

  it("detects a staged change (the index) and a new branch tip", async () => {
    await expect(kindsAfter((w) => git(w, ["add", "a.txt"]))).resolves.toContain("index");
    await expect(kindsAfter((w) => git(w, ["commit", "-q", "--allow-empty", "-m", "more"]))).resolves.toEqual(
      expect.arrayContaining(["head", "refs", "history"]),
    );
  });

  it("reports a merge started after the capture as a refusal", async () => {
    const { work } = await busyWorktree(await tempDir());
    const manifest = await captureManifest(work);
    await writeFile(
      path.join(work, ".git", "MERGE_HEAD"),
      `${(await git(work, ["rev-parse", "HEAD"])).trim()}\n`,
    );
    const result = await verifyUnchanged(work, manifest);
    expect(result).toEqual({
      unchanged: false,
      differences: [expect.objectContaining({ kind: "refused", reason: "special_git_state" })],
    });
  });
});
