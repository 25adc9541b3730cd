/**
 * A capture that is interrupted while `git add` streams a large file into a pack leaves
 * nothing in the repository: real git, a filter that holds `git add` at that point, no sleeps.
 */
import { spawn } from "node:child_process";
import { readdir, rm, writeFile } from "node:fs/promises";
import path from "node:path";
import { QuarantineError, realPublishFs, withObjectQuarantine, type PublishFs, type Timer } from "../../src";
import { capture } from "./capture";
import {
  bigContent,
  cleanup,
  fsckStrict,
  gitEnv,
  indexAndHead,
  installBlockingFilter,
  listTree,
  makeRepo,
  type Repo,
} from "./git-fixture";
import { startPublisher } from "./publisher";
import { rejectionOf } from "../rejection";

afterEach(cleanup);

/** The repository with a planted foreign tmp_pack_* and another capture's live quarantine. */
async function busyRepository(): Promise<{
  repo: Repo;
  startCapture: () => { started: Promise<void> };
  releaseOther: () => void;
  other: Promise<unknown>;
  before: string[];
  realFiles: Buffer[];
}> {
  const repo = await makeRepo();
  await writeFile(
    path.join(repo.objects, "pack", "tmp_pack_foreign"),
    "another git command's pack in progress",
  );
  let releaseOther!: () => void;
  let otherStarted!: () => void;
  const otherIsLive = new Promise<void>((resolve) => (otherStarted = resolve));
  const other = withObjectQuarantine(
    repo.dir,
    "other",
    async () => {
      otherStarted();
      await new Promise<void>((resolve) => (releaseOther = resolve));
    },
    { env: gitEnv },
  );
  await otherIsLive;
  await writeFile(path.join(repo.dir, "a-large.bin"), bigContent(1));
  const startCapture = await installBlockingFilter(repo, "z-blocker.txt");
  return {
    repo,
    startCapture,
    releaseOther,
    other,
    before: await listTree(repo.objects),
    realFiles: await indexAndHead(repo),
  };
}

async function ownQuarantine(repo: Repo, purpose: string): Promise<string> {
  const names = (await readdir(repo.objects)).filter((n) => n.startsWith(`tmp_objdir-reclaim-${purpose}-`));
  expect(names).toHaveLength(1);
  return path.join(repo.objects, names[0]!);
}

async function expectNothingLeftBehind(
  state: Awaited<ReturnType<typeof busyRepository>>,
  error: QuarantineError,
  code: string,
): Promise<void> {
  const { repo } = state;
  expect(error.code).toBe(code);
  expect(error.permanent).toBe(false);
  // Unchanged: no tmp_pack_* of the capture, no quarantine; the foreign tmp_pack_* and the
  // other capture's live quarantine are still there.
  const after = await listTree(repo.objects);
  expect(after).toEqual(state.before);
  expect(after.some((f) => f.startsWith("pack/tmp_pack_foreign"))).toBe(true);
  expect(after.some((f) => f.startsWith("tmp_objdir-reclaim-other-"))).toBe(true);
  expect(await indexAndHead(repo)).toEqual(state.realFiles);
  state.releaseOther();
  await state.other;
  await fsckStrict(repo);
}

/** A later capture, without the blocking filter, stores the large file correctly. */
async function expectLaterCaptureStoresTheFile(repo: Repo): Promise<void> {
  await rm(path.join(repo.dir, ".gitattributes"));
  const { value } = await capture(repo, { ref: "refs/reclaim/later" });
  const blob = await repo.git(["cat-file", "blob", `${value.commit}:a-large.bin`]).catch(() => "");
  expect(Buffer.from(blob, "latin1").length).toBeGreaterThan(0);
  const stored = (await repo.git(["rev-parse", `${value.commit}:a-large.bin`])).trim();
  const expected = (await repo.git(["hash-object", "a-large.bin"])).trim();
  expect(stored).toBe(expected);
  await fsckStrict(repo);
}

describe("a capture interrupted while git add streams a large file", () => {
  it("leaves the object store unchanged when aborted by its signal", async () => {
    const state = await busyRepository();
    const { started } = state.startCapture();
    const controller = new AbortController();
    const running = capture(state.repo, { signal: controller.signal });
    await started;
    // Proof that the interruption hits the streaming case: the large file is in a
    // tmp_pack_* of the capture's own quarantine right now.
    const quarantine = await ownQuarantine(state.repo, "capture");
    expect((await readdir(path.join(quarantine, "pack"))).some((n) => n.startsWith("tmp_pack_"))).toBe(true);
    controller.abort();
    await expectNothingLeftBehind(state, await rejectionOf(running), "RECLAIM_ERR_QUARANTINE_ABORTED");
    await expectLaterCaptureStoresTheFile(state.repo);
  });

  it("leaves the object store unchanged when it times out", async () => {
    const state = await busyRepository();
    const { started } = state.startCapture();
    // The capture's own timeout path, on a timer the test fires once git is blocked.
    const { timer, fire } = manualTimer();
    const running = capture(state.repo, { timeoutMs: 30_000, timer });
    await started;
    fire();
    await expectNothingLeftBehind(state, await rejectionOf(running), "RECLAIM_ERR_QUARANTINE_TIMEOUT");
    await expectLaterCaptureStoresTheFile(state.repo);
  });

  it("leaves the object store unchanged when the process gets SIGTERM, and still exits by it", async () => {
    const state = await busyRepository();
    const { started } = state.startCapture();
    const child = spawn(
      process.execPath,
      ["--import", "tsx", path.join(__dirname, "capture-process.ts"), state.repo.dir],
      {
        cwd: path.resolve(__dirname, "../../../.."),
        env: { ...process.env, ...gitEnv },
        stdio: ["ignore", "ignore", "pipe"],
      },
    );
    let stderr = "";
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    const exited = new Promise<NodeJS.Signals | number | null>((resolve) =>
      child.on("exit", (code, signal) => resolve(signal ?? code)),
    );
    await started;
    child.kill("SIGTERM");
    expect(await exited).toBe("SIGTERM");
    expect(stderr).not.toMatch(/error/i);
    const after = await listTree(state.repo.objects);
    expect(after).toEqual(state.before);
    expect(await indexAndHead(state.repo)).toEqual(state.realFiles);
    state.releaseOther();
    await state.other;
    await fsckStrict(state.repo);
    await expectLaterCaptureStoresTheFile(state.repo);
  });
});

/** A timer whose one timeout the test fires by hand. */
function manualTimer(): { timer: Timer; fire: () => void } {
  let callback: (() => void) | undefined;
  return {
    timer: {
      setTimeout: (fn) => {
        callback = fn;
        return 1;
      },
      clearTimeout: () => undefined,
    },
    fire: () => callback!(),
  };
}

/** `ref` is at `commit`, whose large file (of `seed`) is readable; no quarantine or record is left. */
async function expectPublishedCompletely(
  repo: Repo,
  ref: string,
  commit: string,
  seed: number,
  realFiles: Buffer[],
): Promise<void> {
  expect((await repo.git(["rev-parse", ref])).trim()).toBe(commit);
  expect((await repo.git(["cat-file", "-s", `${commit}:a-large.bin`])).trim()).toBe(
    String(bigContent(seed).length),
  );
  expect((await readdir(repo.objects)).filter((n) => n.startsWith("tmp_objdir-"))).toEqual([]);
  expect(await readdir(path.join(repo.objects, "info"))).not.toContain("reclaim-pack-owners");
  expect(await indexAndHead(repo)).toEqual(realFiles);
  await fsckStrict(repo);
}

describe("an interruption that arrives during publication", () => {
  it("neither an abort nor a timeout stops publication: it completes, then the quarantine is removed", async () => {
    const repo = await makeRepo();
    await writeFile(path.join(repo.dir, "a-large.bin"), bigContent(41));
    await writeFile(path.join(repo.dir, "small.txt"), "small\n");
    const realFiles = await indexAndHead(repo);
    const controller = new AbortController();
    const { timer, fire: fireTimeout } = manualTimer();
    let interrupted = false;
    const fs: PublishFs = {
      ...realPublishFs,
      link: async (from, to) => {
        if (!interrupted && to.endsWith(".pack")) {
          interrupted = true; // between the loose objects and the pack
          controller.abort();
          fireTimeout();
        }
        return realPublishFs.link(from, to);
      },
    };
    const { value, published } = await capture(repo, {
      ref: "refs/reclaim/interrupted",
      signal: controller.signal,
      timeoutMs: 30_000,
      timer,
      testHooks: { fs },
    });
    expect(interrupted).toBe(true);
    expect(published.packs).toHaveLength(1);
    await expectPublishedCompletely(repo, "refs/reclaim/interrupted", value.commit, 41, realFiles);
  });

  it("SIGTERM does not stop publication: it completes, the quarantine is removed, the process exits by SIGTERM", async () => {
    const repo = await makeRepo();
    await writeFile(path.join(repo.dir, "a-large.bin"), bigContent(42));
    const realFiles = await indexAndHead(repo);
    const publisher = startPublisher(repo, {
      ref: "refs/reclaim/sigterm",
      at: "pack",
      action: "await-sigterm",
    });
    const commit = (await publisher.line("commit ")).slice("commit ".length);
    await publisher.line("at ");
    publisher.kill("SIGTERM");
    expect(await publisher.exited).toBe("SIGTERM");
    expect(publisher.stderr()).toBe("");
    await expectPublishedCompletely(repo, "refs/reclaim/sigterm", commit, 42, realFiles);
  });
});
