/**
 * A directory outside the instance that a test points a planted symlink at, and the proof that
 * a sweep neither read, renamed, deleted nor wrote anything there.
 *
 * Every entry's kind, mode, size, modification and change times and content are recorded; a
 * rename, a deletion, a write, a `utimes` or a new entry changes one of them (a new or removed
 * entry changes its directory's times). Reads are caught by access times: each entry's atime
 * is set far in the past (2001), and under `relatime` (or `strictatime`) the kernel updates an
 * atime older than a day on the next readdir or read. The check itself uses only lstat until
 * the times are compared, so it never disturbs them. A filesystem mounted `noatime` cannot
 * prove reads: `outsideDir` then fails instead of passing without checking.
 */
import { createHash } from "node:crypto";
import { lstat, mkdir, readdir, readFile, readlink, rm, symlink, utimes, writeFile } from "node:fs/promises";
import path from "node:path";
import { tempDir, writeTree } from "./files";

const LONG_AGO = new Date("2001-01-01T00:00:00Z");

interface Seen {
  kind: string;
  mode: number;
  size: number;
  mtimeMs: number;
  ctimeMs: number;
  atimeMs: number;
}

export interface Outside {
  path: string;
  /** What happened to the tree since it was planted: empty when nothing did. */
  changes(): Promise<string[]>;
  remove(): Promise<void>;
}

const kindOf = (s: Awaited<ReturnType<typeof lstat>>) =>
  s.isSymbolicLink() ? "symlink" : s.isDirectory() ? "directory" : s.isFile() ? "file" : "other";

async function walk(root: string): Promise<string[]> {
  const found: string[] = [""];
  for (let i = 0; i < found.length; i++) {
    const rel = found[i]!;
    const at = path.join(root, rel);
    if (!(await lstat(at)).isDirectory()) continue;
    for (const name of (await readdir(at)).sort()) found.push(rel === "" ? name : `${rel}/${name}`);
  }
  return found;
}

async function contentOf(file: string): Promise<string> {
  const s = await lstat(file);
  if (s.isSymbolicLink()) return `-> ${await readlink(file)}`;
  if (!s.isFile()) return "";
  return createHash("sha256")
    .update(await readFile(file))
    .digest("hex");
}

const seen = async (file: string): Promise<Seen | null> => {
  try {
    const s = await lstat(file);
    return {
      kind: kindOf(s),
      mode: s.mode,
      size: s.size,
      mtimeMs: s.mtimeMs,
      ctimeMs: s.ctimeMs,
      atimeMs: s.atimeMs,
    };
  } catch {
    return null;
  }
};

/** Whether this filesystem records reads in access times (it is not mounted noatime). */
async function atimesRecordReads(dir: string): Promise<boolean> {
  const probe = path.join(dir, ".atime-probe");
  await writeFile(probe, "probe");
  await utimes(probe, LONG_AGO, new Date());
  await readFile(probe);
  const moved = (await lstat(probe)).atimeMs !== LONG_AGO.getTime();
  await rm(probe);
  return moved;
}

/**
 * Writes `files` (relative path -> content or byte count) into a fresh directory outside any
 * instance, every entry modified at `mtime`, and starts watching it.
 */
export async function outsideDir(files: Record<string, string | number>, mtime?: Date): Promise<Outside> {
  const dir = await tempDir("reclaim-outside-");
  if (!(await atimesRecordReads(dir.path))) {
    await dir.remove();
    throw new Error("this filesystem does not record access times (noatime): reads cannot be checked");
  }
  await writeTree(dir.path, files, mtime);
  const entries = await walk(dir.path);
  const contents = new Map<string, string>();
  for (const rel of entries) contents.set(rel, await contentOf(path.join(dir.path, rel)));
  // Deepest first, so setting a child's times is done before its directory's are.
  for (const rel of [...entries].reverse()) {
    const at = path.join(dir.path, rel);
    const s = await lstat(at);
    if (!s.isSymbolicLink()) await utimes(at, LONG_AGO, s.mtime);
  }
  const before = new Map<string, Seen | null>();
  for (const rel of entries) before.set(rel, await seen(path.join(dir.path, rel)));

  return {
    path: dir.path,
    remove: () => dir.remove(),
    async changes() {
      const found: string[] = [];
      // lstat only, before anything reads the tree.
      for (const rel of entries) {
        const was = before.get(rel)!;
        const now = await seen(path.join(dir.path, rel));
        const name = rel === "" ? "." : rel;
        if (now === null) {
          found.push(`${name}: gone`);
          continue;
        }
        for (const field of ["kind", "mode", "size", "mtimeMs", "ctimeMs"] as const)
          if (now[field] !== was![field]) found.push(`${name}: ${field} changed`);
        if (now.atimeMs !== was!.atimeMs) found.push(`${name}: read`);
      }
      const after = await walk(dir.path);
      for (const rel of after) if (!before.has(rel)) found.push(`${rel}: created`);
      for (const rel of entries) {
        if (!after.includes(rel)) continue;
        if ((await contentOf(path.join(dir.path, rel))) !== contents.get(rel))
          found.push(`${rel}: content changed`);
      }
      return found;
    },
  };
}

/**
 * Plants `link` (replacing whatever is there) as a symlink to a new directory outside any
 * instance holding `files`, modified at `mtime`; the caller removes the directory.
 */
export async function plantOutside(
  link: string,
  files: Record<string, string | number>,
  mtime?: Date,
): Promise<Outside> {
  const outside = await outsideDir(files, mtime);
  await rm(link, { recursive: true, force: true });
  await mkdir(path.dirname(link), { recursive: true });
  await symlink(outside.path, link);
  return outside;
}

/** Planted outside directories of a test file, removed together (`afterAll(() => dirs.removeAll())`). */
export function outsideDirs(mtime?: Date) {
  const all: Outside[] = [];
  return {
    async plant(link: string, files: Record<string, string | number>): Promise<Outside> {
      const outside = await plantOutside(link, files, mtime);
      all.push(outside);
      return outside;
    },
    async removeAll(): Promise<void> {
      for (const outside of all.splice(0)) await outside.remove();
    },
  };
}
