/**
 * Rules (spec, "Git workspace restore points", nested managed checkouts that are standalone
 * clones): in restore-point mode, commits only remote-tracking refs or their reflogs hold are
 * saved as history-only objects and the remote-tracking refs' digest is verified; another
 * branch or tag ahead of the remote, a reflog holding commits neither on the remote nor in
 * the bundled checked-out history, and objects reachable from nothing still keep the checkout.
 */
import { writeFile } from "node:fs/promises";
import path from "node:path";
import { captureWorktree, verifyUnchanged, type RefusalReason } from "../../src";
import { cleanup, clone, git, makeRemote, tempDir, type Remote } from "./fixture";
import {
  applyStored,
  captureAndStore,
  captureManifest,
  localStorage,
  makeKey,
  repoFacts,
} from "./round-trip";

afterAll(cleanup);
const key = makeKey();

async function nestedClone(): Promise<{ root: string; remote: Remote; work: string }> {
  const root = await tempDir();
  const remote = await makeRemote(root, { "a.txt": "a\n" });
  const work = await clone(remote, path.join(root, "task", ".paperclip-repositories", "repo-1"));
  await writeFile(path.join(work, "a.txt"), "a1\n");
  await git(work, ["commit", "-qam", "unpushed on the checked-out branch"]);
  return { root, remote, work };
}

async function reason(work: string): Promise<RefusalReason | "captured"> {
  return captureManifest(work, { nested: true }).then(
    () => "captured" as const,
    (error: { reason?: RefusalReason }) => {
      if (!error.reason) throw error;
      return error.reason;
    },
  );
}

/** A commit that only `refs/remotes/origin/gone` (a branch deleted upstream) and its reflog hold. */
async function historyOnly(remote: Remote, work: string): Promise<{ tip: string; older: string }> {
  await git(remote.seed, ["checkout", "-q", "-b", "gone"]);
  await git(remote.seed, ["commit", "-q", "--allow-empty", "-m", "older, force-pushed away"]);
  const older = (await git(remote.seed, ["rev-parse", "HEAD"])).trim();
  await git(remote.seed, ["push", "-q", "origin", "gone"]);
  await git(work, ["fetch", "-q", "origin"]);
  await git(remote.seed, ["commit", "-q", "--amend", "--allow-empty", "-m", "squash-merged, then deleted"]);
  const tip = (await git(remote.seed, ["rev-parse", "HEAD"])).trim();
  await git(remote.seed, ["push", "-q", "-f", "origin", "gone"]);
  await git(work, ["fetch", "-q", "origin"]);
  await git(remote.seed, ["push", "-q", "origin", ":gone"]);
  return { tip, older };
}

describe("nested standalone checkouts", () => {
  it("saves history-only commits of remote-tracking refs and their reflogs; they come back as objects only", async () => {
    const { root, remote, work } = await nestedClone();
    const { tip, older } = await historyOnly(remote, work);
    const storage = localStorage(path.join(root, "storage"));
    const stored = await captureAndStore(work, storage, key, { nested: true });
    expect(stored.manifest.remoteTracking).not.toBeNull();
    const fresh = await clone(remote, path.join(root, "reopened"));
    await expect(applyStored(fresh, storage, key, stored)).resolves.toEqual({
      status: "applied",
      keptIgnored: [],
    });
    expect(await repoFacts(fresh)).toEqual(await repoFacts(work));
    for (const oid of [tip, older])
      await expect(git(fresh, ["cat-file", "-t", oid])).resolves.toBe("commit\n");
    await expect(git(fresh, ["for-each-ref", "refs/remotes/origin/gone"])).resolves.toBe("");
    // Not nested: the remote-tracking history is not the capture's business.
    const plain = await captureManifest(work);
    expect(plain.bundle!.commits).toBeLessThan(stored.manifest.bundle!.commits);
  });

  it("verify rolls back when a remote-tracking ref or its reflog changed after capture", async () => {
    const { work } = await nestedClone();
    const manifest = await captureManifest(work, { nested: true });
    await git(work, ["update-ref", "-m", "moved", "refs/remotes/origin/main", "HEAD"]);
    const result = await verifyUnchanged(work, manifest);
    expect(result.unchanged ? [] : result.differences.map((d) => d.kind)).toEqual(["remote_tracking"]);
  });

  it("another branch or tag ahead of the remote keeps the checkout; one on the remote does not", async () => {
    const branch = await nestedClone();
    await git(branch.work, ["branch", "-q", "on-remote", "origin/main"]);
    await expect(reason(branch.work)).resolves.toBe("captured");
    await git(branch.work, ["checkout", "-q", "-b", "ahead"]);
    await git(branch.work, ["commit", "-q", "--allow-empty", "-m", "only here"]);
    await git(branch.work, ["checkout", "-q", "main"]);
    await expect(reason(branch.work)).resolves.toBe("other_branch_unpushed");
    const tag = await nestedClone();
    await git(tag.work, ["tag", "-a", "-m", "release", "v1", "HEAD"]);
    await git(tag.work, ["reset", "-q", "--hard", "origin/main"]);
    await expect(reason(tag.work)).resolves.toBe("other_branch_unpushed");
  });

  it("a commit only another branch's reflog holds keeps the checkout", async () => {
    const { work } = await nestedClone();
    await git(work, ["checkout", "-q", "-b", "side", "origin/main"]);
    await git(work, ["commit", "-q", "--allow-empty", "-m", "then reset away"]);
    await git(work, ["reset", "-q", "--hard", "origin/main"]);
    await git(work, ["checkout", "-q", "main"]);
    // The HEAD reflog and ORIG_HEAD hold it too, and both are bundled; without them only
    // the side branch's reflog does.
    await expect(reason(work)).resolves.toBe("captured");
    await git(work, ["reflog", "expire", "--expire=all", "HEAD"]);
    await expect(reason(work)).resolves.toBe("captured");
    await git(work, ["update-ref", "-d", "ORIG_HEAD"]);
    await expect(reason(work)).resolves.toBe("unique_branch_reflog_commits");
  });

  it("a restored checkout expires again: the objects its restore point imported are accepted (restoredFrom) and saved again; an object nobody saved still keeps it", async () => {
    const { root, remote, work } = await nestedClone();
    const { tip, older } = await historyOnly(remote, work);
    // A staged blob: apply imports it with the index carrier commit, reachable from nothing.
    await writeFile(path.join(work, "b.txt"), "staged\n");
    await git(work, ["add", "b.txt"]);
    const storage = localStorage(path.join(root, "storage"));
    const first = await captureAndStore(work, storage, key, { nested: true });
    expect(first.manifest.bundle!.historyOnly).toEqual([older, tip].sort());

    const checkout = (name: string): string => path.join(root, name, ".paperclip-repositories", "repo-1");
    const reopened = await clone(remote, checkout("reopened"));
    await expect(applyStored(reopened, storage, key, first)).resolves.toMatchObject({ status: "applied" });
    // The imported history-only commits and the carrier are reachable from nothing there.
    await expect(reason(reopened)).resolves.toBe("unreachable_objects");

    const second = await captureAndStore(reopened, storage, key, {
      nested: true,
      restoredFrom: first.manifest,
    });
    expect(second.manifest.bundle!.historyOnly).toEqual(
      [older, tip, first.manifest.bundle!.indexCarrier!].sort(),
    );
    const again = await clone(remote, checkout("again"));
    await expect(applyStored(again, storage, key, second)).resolves.toMatchObject({ status: "applied" });
    expect(await repoFacts(again)).toEqual(await repoFacts(work));
    for (const oid of [tip, older])
      await expect(git(again, ["cat-file", "-t", oid])).resolves.toBe("commit\n");
    // And the cycle goes on from the second restore point.
    await expect(
      captureManifest(again, { nested: true, restoredFrom: second.manifest }),
    ).resolves.toMatchObject({
      bundle: { historyOnly: second.manifest.bundle!.historyOnly },
    });

    // An object written after the reopen that no restore point saved still keeps the checkout.
    const unsaved = (await git(reopened, ["hash-object", "-w", "--stdin"], "nobody saved this\n")).trim();
    await expect(
      captureManifest(reopened, { nested: true, restoredFrom: first.manifest }),
    ).rejects.toMatchObject({ reason: "unreachable_objects", paths: [unsaved] });
  });

  it("objects reachable from nothing keep the checkout", async () => {
    const { work } = await nestedClone();
    await writeFile(path.join(work, "b.txt"), "first\n");
    await git(work, ["add", "b.txt"]);
    await writeFile(path.join(work, "b.txt"), "second\n");
    await git(work, ["add", "b.txt"]);
    await expect(reason(work)).resolves.toBe("unreachable_objects");
    await expect(
      captureWorktree(work, { base: { kind: "remote" } }).then((c) => c.dispose()),
    ).resolves.toBeUndefined();
  });
});
