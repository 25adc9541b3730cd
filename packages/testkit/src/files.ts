/** Building real directory trees for tests, with controlled modification times. */
import { mkdir, mkdtemp, rm, utimes, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";

export async function tempDir(prefix = "reclaim-test-"): Promise<{ path: string; remove(): Promise<void> }> {
  const dir = await mkdtemp(path.join(tmpdir(), prefix));
  return { path: dir, remove: () => rm(dir, { recursive: true, force: true }) };
}

/**
 * Writes files (relative path -> content or byte count) under `root` and sets every entry,
 * the root included, to `mtime`.
 */
export async function writeTree(
  root: string,
  files: Record<string, string | number>,
  mtime?: Date,
): Promise<void> {
  await mkdir(root, { recursive: true });
  const dirs = new Set<string>([root]);
  for (const [rel, content] of Object.entries(files)) {
    const full = path.join(root, rel);
    await mkdir(path.dirname(full), { recursive: true });
    for (let d = path.dirname(full); d.startsWith(root) && d !== root; d = path.dirname(d)) dirs.add(d);
    await writeFile(full, typeof content === "number" ? Buffer.alloc(content, 7) : content);
    if (mtime) await utimes(full, mtime, mtime);
  }
  if (mtime) for (const d of [...dirs].sort((a, b) => b.length - a.length)) await utimes(d, mtime, mtime);
}

export function daysAgo(days: number, from = Date.now()): Date {
  return new Date(from - days * 24 * 3600 * 1000);
}
