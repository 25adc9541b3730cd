/**
 * Publication: moving a quarantine's objects into the real object store, the way git's
 * tmp_objdir_migrate does, plus safe compensation when it fails half-way.
 *
 * Order is the safety argument, so it is code (PACK_ORDER), not convention: loose objects
 * first, then each pack as `.keep`, `.pack`, `.rev`, `.idx` (then `.bitmap`, `.promisor`,
 * `.mtimes`). git only uses a pack through its `.idx`, so until the index is linked, a
 * published `.pack` is invisible, and once it is linked everything it needs is there.
 *
 * Every file is hard-linked, never copied and never replacing an existing file: an
 * existing object of the same name has the same content, and another capture may already
 * use it. Only where the filesystem refuses hard links (EPERM, EXDEV, ENOTSUP, ...) and the
 * target is absent is the file renamed instead. New directories and files get the
 * repository's core.sharedRepository permissions.
 *
 * Failure: an error on a loose object stops publication; loose objects already published
 * stay (each is complete and harmless; gc prunes unreferenced ones). An error inside a pack
 * removes the files of that pack that this capture created, unless its index is in the
 * store (then the pack is complete and may be in use). Files that existed before this
 * capture linked them are never removed. All of this runs while holding the pack's
 * ownership record (pack-ownership.ts), so no other Reclaim capture can adopt a file that
 * compensation is about to remove.
 *
 * Residual risk, documented rather than hidden: a plain `git` process (not a Reclaim
 * capture) writing a byte-identical pack in the same milliseconds does not take ownership;
 * compensation re-checks for a published index right before removing, which narrows but does
 * not close that window.
 */
import path from "node:path";
import { errnoCode, QuarantineError } from "../errors";
import { acquirePackOwnership, type OwnershipOptions } from "./pack-ownership";
import type { PublishFs } from "./publish-fs";
import { adjustSharedPerm, type SharedRepository } from "./shared-permissions";

export interface PublishOptions {
  fs: PublishFs;
  shared: SharedRepository;
  ownership: OwnershipOptions;
}

export interface PublishedObjects {
  /** Loose objects linked (or renamed) into the store; existing ones are not counted. */
  looseObjects: number;
  /** Names (`pack-<hash>`) of the packs this capture published or found complete. */
  packs: string[];
}

/** Publication order of a pack's files (git's pack_copy_priority, extended to newer files). */
export const PACK_ORDER = ["keep", "pack", "rev", "idx", "bitmap", "promisor", "mtimes"] as const;

const LOOSE_DIR = /^[0-9a-f]{2}$/;
const LOOSE_FILE = /^(?:[0-9a-f]{38}|[0-9a-f]{62})$/;
const PACK_FILE = /^(pack-(?:[0-9a-f]{40}|[0-9a-f]{64}))\.(keep|pack|rev|idx|bitmap|promisor|mtimes)$/;
// errno values for "this filesystem cannot hard-link here": rename is the fallback.
const NO_LINKS = new Set(["EPERM", "EXDEV", "ENOTSUP", "EOPNOTSUPP", "ENOSYS", "EMLINK"]);

export async function publishQuarantine(
  quarantine: string,
  objectsDir: string,
  options: PublishOptions,
): Promise<PublishedObjects> {
  const { fs } = options;
  let looseObjects = 0;
  for (const dir of (await fs.readdir(quarantine)).filter((n) => LOOSE_DIR.test(n)).sort()) {
    const target = path.join(objectsDir, dir);
    await step(`creating ${target}`, () => ensureDir(options, target));
    for (const name of (await fs.readdir(path.join(quarantine, dir)))
      .filter((n) => LOOSE_FILE.test(n))
      .sort()) {
      const outcome = await step(`publishing loose object ${dir}${name}`, () =>
        publishFile(options, path.join(quarantine, dir, name), path.join(target, name)),
      );
      if (outcome !== "existed") looseObjects += 1;
    }
  }
  const packs = new Map<string, Set<string>>();
  const packDir = path.join(quarantine, "pack");
  const names = await fs.readdir(packDir).catch((error: unknown) => {
    if (errnoCode(error) === "ENOENT") return [] as string[];
    throw error;
  });
  for (const name of names) {
    const match = PACK_FILE.exec(name);
    if (!match) continue; // tmp_pack_* of a killed command, never published
    const files = packs.get(match[1]!) ?? new Set<string>();
    files.add(match[2]!);
    packs.set(match[1]!, files);
  }
  const published: string[] = [];
  if (packs.size > 0)
    await step("creating the pack directory", () => ensureDir(options, path.join(objectsDir, "pack")));
  for (const [pack, extensions] of [...packs].sort(([a], [b]) => a.localeCompare(b))) {
    if (!extensions.has("idx") || !extensions.has("pack")) continue; // incomplete: git would ignore it
    await publishPack(options, packDir, path.join(objectsDir, "pack"), pack, extensions);
    published.push(pack);
  }
  return { looseObjects, packs: published };
}

async function publishPack(
  options: PublishOptions,
  from: string,
  to: string,
  pack: string,
  extensions: Set<string>,
): Promise<void> {
  const release = await acquirePackOwnership(path.dirname(to), pack, options.ownership);
  const created: string[] = [];
  try {
    for (const extension of PACK_ORDER) {
      if (!extensions.has(extension)) continue;
      const target = path.join(to, `${pack}.${extension}`);
      const outcome = await step(`publishing ${pack}.${extension}`, () =>
        publishFile(options, path.join(from, `${pack}.${extension}`), target),
      );
      if (outcome !== "existed") created.push(target);
    }
  } catch (error) {
    await compensate(options.fs, path.join(to, `${pack}.idx`), created);
    throw error;
  } finally {
    await release();
  }
}

/** Removes what this capture created of a pack whose index is not in the store. */
async function compensate(fs: PublishFs, index: string, created: string[]): Promise<void> {
  if (created.includes(index) || (await fs.lstat(index).catch(() => null)) !== null) return;
  for (const file of created.reverse()) {
    // Best effort: the publication error is what the caller needs; a file we cannot remove
    // is an invisible `.pack` without index, as after a crash.
    await fs.unlink(file).catch(() => undefined);
  }
}

async function publishFile(
  options: PublishOptions,
  from: string,
  to: string,
): Promise<"linked" | "renamed" | "existed"> {
  const { fs } = options;
  try {
    await fs.link(from, to);
  } catch (error) {
    const code = errnoCode(error);
    if (code === "EEXIST") return "existed";
    if (!code || !NO_LINKS.has(code)) throw error;
    if ((await fs.lstat(to)) !== null) return "existed";
    await fs.rename(from, to);
    await adjustSharedPerm(fs, options.shared, to);
    return "renamed";
  }
  await adjustSharedPerm(fs, options.shared, to);
  return "linked";
}

async function ensureDir(options: PublishOptions, target: string): Promise<void> {
  try {
    await options.fs.mkdir(target);
  } catch (error) {
    if (errnoCode(error) === "EEXIST") return;
    throw error;
  }
  await adjustSharedPerm(options.fs, options.shared, target);
}

async function step<T>(what: string, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (error) {
    if (error instanceof QuarantineError) throw error;
    throw new QuarantineError(
      "RECLAIM_ERR_QUARANTINE_PUBLISH_FAILED",
      `${what}: ${errnoCode(error) ?? String(error)}`,
      {
        cause: error,
      },
    );
  }
}
