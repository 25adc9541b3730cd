/**
 * A directory deep below a configured top folder, reached level by level with proven-dir.ts
 * (no level is a symbolic link, each is proven when it is reached): for domains that keep
 * absolute paths in their records (a workspace's `cwd`, a clone's path) and must act on them
 * without following a link an agent planted anywhere on the way.
 *
 *   provenDirBelow(top, target)   the directory, `missing` when a level does not exist,
 *                                 `unsafe` when one is a link or not a directory, or `target`
 *                                 is not strictly below `top`
 *   ensureDirBelow(top, target)   the same, creating missing levels one at a time (never a
 *                                 recursive mkdir, which follows links); `unsafe` as above
 */
import path from "node:path";
import { PathRefused, ProvenDir } from "./proven-dir";

function levelsBelow(top: string, target: string): string[] | null {
  const rel = path.relative(top, target);
  if (rel === "" || rel.startsWith("..") || path.isAbsolute(rel)) return null;
  return rel.split(path.sep);
}

async function walk(
  top: string,
  target: string,
  next: (dir: ProvenDir, name: string) => Promise<ProvenDir | null>,
): Promise<ProvenDir | "missing" | "unsafe"> {
  const parts = levelsBelow(top, target);
  if (parts === null) return "unsafe";
  let dir: ProvenDir | null;
  try {
    dir = await ProvenDir.top(top);
    if (dir === null) return "missing";
    for (const part of parts) {
      const child: ProvenDir | null = await next(dir, part);
      if (child === null) return "missing";
      dir = child;
    }
  } catch (error) {
    if (error instanceof PathRefused) return error.reason === "missing" ? "missing" : "unsafe";
    throw error;
  }
  return dir;
}

export function provenDirBelow(top: string, target: string): Promise<ProvenDir | "missing" | "unsafe"> {
  return walk(top, target, (dir, name) => dir.child(name));
}

export function ensureDirBelow(top: string, target: string): Promise<ProvenDir | "missing" | "unsafe"> {
  return walk(top, target, (dir, name) => dir.ensureDir(name));
}
