/**
 * Files from agent-writable trees are read without following a link and with a size limit
 * (readFileBounded): opened with O_NOFOLLOW, fstat'ed on the descriptor, at most limit+1 bytes read.
 */
import { execFileSync } from "node:child_process";
import { mkdir, symlink, writeFile } from "node:fs/promises";
import path from "node:path";
import { readFileBounded } from "@reclaim/shared";
import { outsideDir, tempDir } from "@reclaim/testkit";

let dir: { path: string; remove(): Promise<void> };
beforeEach(async () => {
  dir = await tempDir("reclaim-bounded-");
});
afterEach(async () => dir.remove());

const at = (name: string) => path.join(dir.path, name);

it("reads a regular file of up to the limit whole", async () => {
  await writeFile(at("state.json"), "x".repeat(1024));
  const read = await readFileBounded(at("state.json"), 1024);
  expect(read.status === "ok" && read.data.toString()).toBe("x".repeat(1024));
  await writeFile(at("empty"), "");
  expect(await readFileBounded(at("empty"), 1024)).toEqual({ status: "ok", data: Buffer.alloc(0) });
});

it("refuses a file over the limit without reading it", async () => {
  await writeFile(at("big.json"), Buffer.alloc(1025, 32));
  expect(await readFileBounded(at("big.json"), 1024)).toEqual({ status: "too_large" });
});

it("reads at most limit+1 bytes of a file that is larger than fstat says", async () => {
  // procfs reports size 0 for files with content: the limit holds while reading, not only by fstat.
  expect(await readFileBounded("/proc/self/status", 16)).toEqual({ status: "too_large" });
  const whole = await readFileBounded("/proc/self/status", 1024 * 1024);
  expect(whole.status === "ok" && whole.data.toString()).toMatch(/^Name:/);
});

it("never follows a symlink at its name, and reads nothing of the target", async () => {
  const outside = await outsideDir({ "state.json": '{"companyId":"x"}' });
  try {
    await symlink(path.join(outside.path, "state.json"), at("state.json"));
    expect(await readFileBounded(at("state.json"), 1024)).toEqual({ status: "symlink" });
    expect(await outside.changes()).toEqual([]);
  } finally {
    await outside.remove();
  }
});

it("refuses a directory, and a FIFO without blocking; a missing file is missing", async () => {
  await mkdir(at("dir"));
  execFileSync("mkfifo", [at("fifo")]);
  expect(await readFileBounded(at("dir"), 1024)).toEqual({ status: "not_a_file" });
  expect(await readFileBounded(at("fifo"), 1024)).toEqual({ status: "not_a_file" });
  expect(await readFileBounded(at("missing"), 1024)).toEqual({ status: "missing" });
  expect(await readFileBounded(at("missing/below"), 1024)).toEqual({ status: "missing" });
});
