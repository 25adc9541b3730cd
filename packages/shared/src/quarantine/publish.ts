/**
 * Publication: moving a quarantine's objects into the real object store, the way git's
 * tmp_objdir_migrate does, plus safe compensation when it fails half-way.
 *
 * Order is the safety argument, so it is code (PACK_ORDER), not convention: first the
 * recovery of packs abandoned by dead captures (pack-recovery.ts; best effort per pack: a
 * pack it cannot recover is reported, not fatal), then loose objects, then
 * each pack as `.keep`, `.pack`, `.rev`, `.idx` (then `.bitmap`, `.promisor`, `.mtimes`).
 * git only uses a pack through its `.idx`, so until the index is linked, a published `.pack`
 * is invisible, and once it is linked everything it needs is there.
 *
 * Placing a file never replaces one: a hard link, which fails on an existing name. A `.pack`
 * or `.rev` found there is adopted only if it has this capture's size and trailing checksum;
 * otherwise (a dead capture's empty placeholder or truncated copy, invisible without the
 * index) it is removed under the pack's ownership and this capture's placed. Where the
 * filesystem refuses hard links (EPERM, EXDEV, ENOTSUP, ...), the file is renamed instead:
 *  - files before the index (`.keep`, `.pack`, `.rev`) first reserve their name with an
 *    exclusive create (an empty placeholder, invisible to git without the index), then are
 *    renamed over their own placeholder, so nothing that appeared meanwhile is replaced;
 *  - loose objects, `.idx` and later files are renamed after checking that the name is
 *    free (a placeholder there would be visible to git as a corrupt object or index). The
 *    check-then-rename window can only replace a file that appeared in those microseconds,
 *    and that is harmless: names are content addresses (object id; pack checksum), so the
 *    replaced file had the same content, rename swaps it atomically (readers see one or the
 *    other, never neither), and no compensation depends on who created those files (loose
 *    objects are never removed; nothing is removed once a pack's `.idx` is in the store).
 * New directories and files get the repository's core.sharedRepository permissions; a file
 * counts as this capture's the moment it exists, before its permissions are adjusted, so a
 * failing chmod still leaves it to compensation.
 *
 * Failure: an error on a loose object stops publication; loose objects already published
 * stay (each is complete and harmless; gc prunes unreferenced ones). An error inside a pack
 * removes the files of that pack that this capture created, unless its index is in the
 * store (then the pack is complete and may be in use). Files that existed before this
 * capture placed them are never removed. All of this runs while holding the pack's
 * ownership record (pack-ownership.ts), so no other Reclaim capture, in this process or
 * another, can adopt a file that compensation is about to remove; if the record was lost
 * (another host broke it by age), the index is not published and nothing is removed. If
 * compensation cannot remove a file, the record is left for recovery.
 *
 * Residual risk, documented rather than hidden: a plain `git` process (not a Reclaim
 * capture) writing a byte-identical pack in the same milliseconds does not take ownership;
 * compensation re-checks for a published index right before removing, which narrows but does
 * not close that window.
 */
import path from "node:path";
import { errnoCode, ignoreErrno, QuarantineError } from "../errors";
import { BEFORE_INDEX, PACK_FILE, PACK_ORDER } from "./pack-files";
import { acquirePackOwnership, type OwnershipOptions, type PackOwnership } from "./pack-ownership";
import { recoverAbandonedPacks, removeUnindexedPack, type RecoveryFailure } from "./pack-recovery";
import type { PublishFs } from "./publish-fs";
import { adjustSharedPerm, mkdirShared, type SharedRepository } from "./shared-permissions";

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
  /** Packs abandoned by dead captures whose leftover files this publication removed first. */
  recoveredPacks: string[];
  /**
   * Abandoned packs whose recovery failed (their records stay for a later publication);
   * they do not fail this publication.
   */
  recoveryFailures: RecoveryFailure[];
}

const LOOSE_DIR = /^[0-9a-f]{2}$/;
const LOOSE_FILE = /^(?:[0-9a-f]{38}|[0-9a-f]{62})$/;
// errno values for "this filesystem cannot hard-link here": rename is the fallback.
const NO_LINKS = new Set(["EPERM", "EXDEV", "ENOTSUP", "EOPNOTSUPP", "ENOSYS", "EMLINK"]);
// Files before the index whose content git checks (trailing checksums): one found in the
// store is adopted only if it is identical. A `.keep` means the same whatever it holds.
const VERIFIED = new Set(["pack", "rev"]);

/** Whether placeFile put this capture's file at the name, or found one there already. */
type Placed = "placed" | "existing";

export async function publishQuarantine(
  quarantine: string,
  objectsDir: string,
  options: PublishOptions,
): Promise<PublishedObjects> {
  const { fs } = options;
  const recovery = await step("recovering abandoned pack publications", () =>
    recoverAbandonedPacks(objectsDir, options.ownership),
  );
  let looseObjects = 0;
  for (const dir of (await fs.readdir(quarantine)).filter((n) => LOOSE_DIR.test(n)).sort()) {
    const target = path.join(objectsDir, dir);
    await step(`creating ${target}`, () => mkdirShared(options.fs, options.shared, target));
    for (const name of (await fs.readdir(path.join(quarantine, dir)))
      .filter((n) => LOOSE_FILE.test(n))
      .sort()) {
      await step(`publishing loose object ${dir}${name}`, () =>
        placeFile(options, path.join(quarantine, dir, name), path.join(target, name), "check", () => {
          looseObjects += 1;
        }),
      );
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
    await step("creating the pack directory", () =>
      mkdirShared(options.fs, options.shared, path.join(objectsDir, "pack")),
    );
  for (const [pack, extensions] of [...packs].sort(([a], [b]) => a.localeCompare(b))) {
    if (!extensions.has("idx") || !extensions.has("pack")) continue; // incomplete: git would ignore it
    await publishPack(options, packDir, path.join(objectsDir, "pack"), pack, extensions);
    published.push(pack);
  }
  return {
    looseObjects,
    packs: published,
    recoveredPacks: recovery.recovered,
    recoveryFailures: recovery.failed,
  };
}

async function publishPack(
  options: PublishOptions,
  from: string,
  to: string,
  pack: string,
  extensions: Set<string>,
): Promise<void> {
  const { fs } = options;
  const ownership = await step(`taking ownership of ${pack}`, () =>
    acquirePackOwnership(path.dirname(to), pack, options.ownership),
  );
  const created: string[] = [];
  // A capture that died holding this pack may have left some of its files in the store.
  let leftovers = ownership.tookOverAbandoned;
  try {
    if (leftovers) {
      await step(`recovering ${pack}`, () => removeUnindexedPack(fs, to, pack));
      leftovers = false;
    }
    for (const extension of PACK_ORDER) {
      if (!extensions.has(extension)) continue;
      const target = path.join(to, `${pack}.${extension}`);
      // The index makes the pack visible: never publish it for a pack this capture no longer
      // owns (another host broke the record by age and may be removing what is there).
      if (extension === "idx" && !(await step(`checking ownership of ${pack}`, () => ownership.held()))) {
        throw new QuarantineError(
          "RECLAIM_ERR_QUARANTINE_PUBLISH_FAILED",
          `${pack}: its ownership record was taken over before the index was published`,
        );
      }
      const place = (): Promise<Placed> =>
        placeFile(
          options,
          path.join(from, `${pack}.${extension}`),
          target,
          BEFORE_INDEX.has(extension) ? "reserve" : "check",
          () => created.push(target),
        );
      const placed = await step(`publishing ${pack}.${extension}`, place);
      if (placed === "existing" && VERIFIED.has(extension)) {
        await step(`checking the existing ${pack}.${extension}`, () =>
          replaceIfDifferent(
            fs,
            path.join(from, `${pack}.${extension}`),
            target,
            path.join(to, `${pack}.idx`),
            place,
          ),
        );
      }
    }
  } catch (error) {
    const clean = !leftovers && (await compensate(fs, ownership, path.join(to, `${pack}.idx`), created));
    if (clean)
      await ownership.release().catch(() => undefined); // the publication error is what matters
    else await ownership.abandon();
    throw error;
  }
  await step(`releasing ownership of ${pack}`, () => ownership.release());
}

/**
 * A `.pack` or `.rev` that was already in the store before the index: adopted only if it is
 * this capture's file byte for byte (same size and trailing checksum). Anything else (an
 * empty placeholder or a truncated copy a dead capture left) is a leftover: with the index
 * absent git cannot see it, and this capture holds the pack, so it is removed and this
 * capture's file placed instead. With the index present the store already has a pack that
 * does not match its name: nothing is adopted, nothing removed.
 */
async function replaceIfDifferent(
  fs: PublishFs,
  from: string,
  to: string,
  index: string,
  place: () => Promise<Placed>,
): Promise<void> {
  const [ours, theirs] = await Promise.all([fs.fingerprint(from), fs.fingerprint(to)]);
  if (ours.size === theirs.size && ours.tail === theirs.tail) return;
  if ((await fs.lstat(index)) !== null) {
    throw new QuarantineError(
      "RECLAIM_ERR_QUARANTINE_PUBLISH_FAILED",
      `${path.basename(to)} in the store differs from this capture's, and its index is published`,
    );
  }
  await fs.unlink(to).catch(ignoreErrno("ENOENT"));
  if ((await place()) === "existing") {
    throw new QuarantineError("RECLAIM_ERR_QUARANTINE_PUBLISH_FAILED", `${path.basename(to)} reappeared`);
  }
}

/**
 * Removes what this capture created of a pack whose index is not in the store, if it still
 * holds the pack. Resolves false when a file may be left that recovery should remove.
 */
async function compensate(
  fs: PublishFs,
  ownership: PackOwnership,
  index: string,
  created: string[],
): Promise<boolean> {
  if (created.length === 0 || created.includes(index)) return true;
  try {
    if ((await fs.lstat(index)) !== null) return true; // complete after all: may be in use
    if (!(await ownership.held())) return true; // someone else holds the pack now: not ours to remove
    for (const file of [...created].reverse()) {
      await fs.unlink(file).catch(ignoreErrno("ENOENT"));
    }
    return true;
  } catch {
    // The publication error is what the caller needs; what is left is recovery's.
    return false;
  }
}

/**
 * Puts `from` at `to` without replacing anything there (see the header for the fallback
 * where hard links are refused). `onCreated` runs as soon as a file of this capture exists
 * at `to`, before its permissions are adjusted.
 */
async function placeFile(
  options: PublishOptions,
  from: string,
  to: string,
  fallback: "reserve" | "check",
  onCreated: () => void,
): Promise<Placed> {
  const { fs } = options;
  try {
    await fs.link(from, to);
    onCreated();
  } catch (error) {
    const code = errnoCode(error);
    if (code === "EEXIST") return "existing";
    if (!code || !NO_LINKS.has(code)) throw error;
    if (fallback === "reserve") {
      try {
        await fs.createExclusive(to, "");
      } catch (reserveError) {
        if (errnoCode(reserveError) === "EEXIST") return "existing";
        throw reserveError;
      }
      onCreated(); // the placeholder is ours from here on, even if the rename fails
      await fs.rename(from, to);
    } else {
      if ((await fs.lstat(to)) !== null) return "existing";
      await fs.rename(from, to);
      onCreated();
    }
  }
  await adjustSharedPerm(fs, options.shared, to);
  return "placed";
}

async function step<T>(what: string, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (error) {
    if (error instanceof QuarantineError) throw error;
    throw new QuarantineError(
      "RECLAIM_ERR_QUARANTINE_PUBLISH_FAILED",
      `${what}: ${errnoCode(error) ?? String(error)}`,
      { cause: error },
    );
  }
}
