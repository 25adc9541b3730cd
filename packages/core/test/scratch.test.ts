/**
 * Scratch directories (process/scratch.ts): a worker's work files live in a directory named for
 * the process; what a process killed mid-capture left there is removed by the next sweep, and
 * nothing a live process may still use is. Real processes, a real temporary folder.
 */
import { spawn } from "node:child_process";
import { once } from "node:events";
import { mkdir, mkdtemp, readdir, rm, stat, symlink, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { hostProcessProbe, scratchDir, sweepScratch } from "../src/process";

let root: string;
beforeEach(async () => {
  root = await mkdtemp(path.join(os.tmpdir(), "reclaim-scratch-test-"));
});
afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

/** A scratch directory of `pid` started at `startMs`, holding files and a folder, as a capture leaves it. */
async function leftBy(pid: number, startMs: number, suffix = "AbC123"): Promise<string> {
  const name = `reclaim-${pid}-${startMs}-${suffix}`;
  await mkdir(path.join(root, name, "capture-x", "helper.git"), { recursive: true });
  await writeFile(path.join(root, name, "capture-x", "restore.bundle"), "bundle");
  return name;
}

/** A process that ran and ended: its pid and the start time it had. */
async function endedProcess(): Promise<{ pid: number; startMs: number }> {
  const child = spawn(process.execPath, ["-e", "setTimeout(() => {}, 200)"], { stdio: "ignore" });
  const startMs = hostProcessProbe.startTime(child.pid!)!.getTime();
  await once(child, "exit");
  return { pid: child.pid!, startMs };
}

test("the scratch directory of a process that ended is removed by the next sweep", async () => {
  const ended = await endedProcess();
  const name = await leftBy(ended.pid, ended.startMs);
  expect(await sweepScratch(root)).toEqual([name]);
  expect(await readdir(root)).toEqual([]);
});

test("a live process's scratch directory is kept, and so is one whose owner's start cannot be told", async () => {
  const child = spawn(process.execPath, ["-e", "setTimeout(() => {}, 60000)"], { stdio: "ignore" });
  try {
    const startMs = hostProcessProbe.startTime(child.pid!)!.getTime();
    const live = await leftBy(child.pid!, startMs);
    const unknownStart = await leftBy(child.pid!, 0, "DeF456");
    expect(await sweepScratch(root)).toEqual([]);
    expect((await readdir(root)).sort()).toEqual([live, unknownStart].sort());
  } finally {
    child.kill("SIGKILL");
    await once(child, "exit");
  }
});

test("a directory named for a pid now used by another process (a different start) is removed", async () => {
  // This process's pid with a start time it does not have: the pid was reused.
  const name = await leftBy(process.pid, 12_345);
  expect(await sweepScratch(root)).toEqual([name]);
});

test("a link or a file carrying a scratch name is left alone, and what a link points to untouched", async () => {
  const ended = await endedProcess();
  const elsewhere = await mkdtemp(path.join(os.tmpdir(), "reclaim-scratch-target-"));
  try {
    await writeFile(path.join(elsewhere, "keep.txt"), "keep");
    await symlink(elsewhere, path.join(root, `reclaim-${ended.pid}-${ended.startMs}-Link01`));
    await writeFile(path.join(root, `reclaim-${ended.pid}-${ended.startMs}-File01`), "file");
    expect(await sweepScratch(root)).toEqual([]);
    expect((await readdir(root)).length).toBe(2);
    expect(await readdir(elsewhere)).toEqual(["keep.txt"]);
  } finally {
    await rm(elsewhere, { recursive: true, force: true });
  }
});

test("a process has one scratch directory, named for it, that only it can enter, and its own sweep keeps it", async () => {
  const dir = await scratchDir(root);
  expect(await scratchDir(root)).toBe(dir);
  const startMs = hostProcessProbe.startTime(process.pid)!.getTime();
  expect(path.basename(dir)).toMatch(new RegExp(`^reclaim-${process.pid}-${startMs}-[A-Za-z0-9]{6}$`));
  expect((await stat(dir)).mode & 0o777).toBe(0o700);
  expect(await sweepScratch(root)).toEqual([]);
  expect(await readdir(root)).toEqual([path.basename(dir)]);
});

test("a process whose scratch directory was removed under it gets a new one at its next capture", async () => {
  const first = await scratchDir(root);
  await rm(first, { recursive: true });
  const second = await scratchDir(root);
  expect(second).not.toBe(first);
  expect((await stat(second)).isDirectory()).toBe(true);
  expect(await scratchDir(root)).toBe(second);
});
