/**
 * git's `core.sharedRepository` permission rules (path.c: git_config_perm, calc_shared_perm,
 * adjust_shared_perm), so files and directories that publication creates in the real object
 * store get exactly the modes git itself would give them. Without this, a group-shared
 * repository would get a 0755 fan-out directory from us and other users' git could no
 * longer write objects into it.
 */
import { errnoCode } from "../errors";
import type { PublishFs } from "./publish-fs";

/** 0 = umask; positive = bits to add (group/everybody); negative = exact mode (-0640). */
export type SharedRepository = number;

const PERM_GROUP = 0o660;
const PERM_EVERYBODY = 0o664;

/** Parses a `core.sharedRepository` value the way git does; undefined (unset) is umask. */
export function parseSharedRepository(value: string | undefined): SharedRepository {
  if (value === undefined) return 0;
  const v = value.trim();
  if (v === "" || v === "true") return PERM_GROUP;
  if (v === "umask" || v === "false" || v === "no" || v === "off") return 0;
  if (v === "group" || v === "yes" || v === "on") return PERM_GROUP;
  if (v === "all" || v === "world" || v === "everybody") return PERM_EVERYBODY;
  if (/^[0-7]+$/.test(v)) {
    const mode = parseInt(v, 8);
    if (mode === 0) return 0;
    if (mode === 1) return PERM_GROUP;
    if (mode === 2) return PERM_EVERYBODY;
    // git dies on a mode without owner read/write; we treat it as umask rather than
    // guess, since git would refuse to run in that repository at all.
    if ((mode & 0o600) !== 0o600) return 0;
    return -(mode & 0o666);
  }
  return 0;
}

function calcSharedPerm(shared: SharedRepository, mode: number): number {
  let tweak = shared < 0 ? -shared : shared;
  if (!(mode & 0o200)) tweak &= ~0o222;
  if (mode & 0o100) tweak |= (tweak & 0o444) >> 2;
  return shared < 0 ? (mode & ~0o777) | tweak : mode | tweak;
}

/** git's adjust_shared_perm: widen (or, for an octal mode, set) the bits; directories get setgid. */
export async function adjustSharedPerm(
  fs: PublishFs,
  shared: SharedRepository,
  target: string,
): Promise<void> {
  if (shared === 0) return;
  const { mode, isDirectory } = await fs.stat(target);
  let next = calcSharedPerm(shared, mode);
  if (isDirectory) {
    next |= (next & 0o444) >> 2;
    next |= 0o2000; // FORCE_DIR_SET_GID: new entries inherit the group
  }
  if ((mode ^ next) & 0o7777) await fs.chmod(target, next & 0o7777);
}

/** Creates `dir` with the repository's shared permissions; false when it already existed. */
export async function mkdirShared(fs: PublishFs, shared: SharedRepository, dir: string): Promise<boolean> {
  try {
    await fs.mkdir(dir);
  } catch (error) {
    if (errnoCode(error) === "EEXIST") return false;
    throw error;
  }
  await adjustSharedPerm(fs, shared, dir);
  return true;
}
