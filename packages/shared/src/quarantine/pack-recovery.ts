/**
 * Recovery of pack publications abandoned by a capture that died (SIGKILL, OOM kill, power
 * loss) between publishing a pack's first file and its `.idx`, or while compensating. Such a
 * pack is invisible to git, and `git gc` never removes a `.pack` without its index, so
 * without this it would stay forever. The evidence is the dead capture's ownership record
 * (pack-ownership.ts), which is durable before the first file of the pack is published.
 *
 * At the start of every publication, each pack named in the owners directory whose holder
 * is dead is taken over (breaking the dead record) and, while held, whatever of it is in the
 * store without its `.idx` is removed, in reverse publication order. Dead breakers' leftover
 * break locks and temporary records are removed too. A pack held by a live capture is skipped, never waited for.
 * A pack that has its `.idx` is complete and left alone. Each pack is recovered on its own:
 * one whose recovery fails (EIO, EACCES) is reported (`published.recoveryFailures`), its
 * record stays for a later publication, and this publication goes on.
 *
 * Why removing is safe: git ignores a pack without its index; no live Reclaim capture can be
 * publishing it (this capture holds its record); files of identical name have identical
 * content, so a later capture that needs the pack publishes its own copy. The one party this
 * cannot exclude is a plain `git` finalizing the same byte-identical pack in the same instant
 * (publish.ts, residual risk).
 */
import path from "node:path";
import { errnoCode } from "../errors";
import { PACK_NAME, PACK_ORDER } from "./pack-files";
import {
  listOwnerEntries,
  packOf,
  removeDeadLeftovers,
  tryAcquirePackOwnership,
  type OwnershipOptions,
  type PackOwnership,
} from "./pack-ownership";
import type { PublishFs } from "./publish-fs";

/** A pack whose recovery failed; its record stays for a later publication. */
export interface RecoveryFailure {
  pack: string;
  reason: string;
}

/**
 * Recovers every abandoned pack of `objectsDir`, each on its own: one that fails (its files
 * cannot be removed, its record cannot be taken) is reported in `failed` and left for a
 * later publication, and the others are still recovered. Only listing the owners directory
 * failing rejects.
 */
export async function recoverAbandonedPacks(
  objectsDir: string,
  options: OwnershipOptions,
): Promise<{ recovered: string[]; failed: RecoveryFailure[] }> {
  const entries = await listOwnerEntries(objectsDir, options.fs);
  const packs = [...new Set(entries.map(packOf))].filter((name) => PACK_NAME.test(name)).sort();
  const recovered: string[] = [];
  const failed: RecoveryFailure[] = [];
  for (const pack of packs) {
    try {
      if (await recoverPack(objectsDir, pack, options)) recovered.push(pack);
    } catch (error) {
      failed.push({ pack, reason: error instanceof Error ? error.message : String(error) });
    }
  }
  return { recovered, failed };
}

/** Recovers `pack` unless a live capture holds it; resolves true when it removed files. */
async function recoverPack(objectsDir: string, pack: string, options: OwnershipOptions): Promise<boolean> {
  const ownership = await tryAcquirePackOwnership(objectsDir, pack, options);
  if (!ownership) return false; // a live capture holds it
  return whileHolding(ownership, async () => {
    let removed: string[] = [];
    if (ownership.tookOverAbandoned) {
      removed = await removeUnindexedPack(options.fs, path.join(objectsDir, "pack"), pack);
    }
    await removeDeadLeftovers(objectsDir, pack, options);
    return removed.length > 0;
  });
}

/**
 * Runs `fn` holding `ownership`, then releases it; if `fn` fails, the record is abandoned
 * instead (left in place, marked, for the next publication to recover) and the error rethrown.
 */
async function whileHolding<T>(ownership: PackOwnership, fn: () => Promise<T>): Promise<T> {
  let value: T;
  try {
    value = await fn();
  } catch (error) {
    await ownership.abandon();
    throw error;
  }
  await ownership.release();
  return value;
}

/**
 * Removes the files of `pack` in `packDir` when its `.idx` is absent; resolves with what it
 * removed. The caller holds the pack.
 */
export async function removeUnindexedPack(fs: PublishFs, packDir: string, pack: string): Promise<string[]> {
  if ((await fs.lstat(path.join(packDir, `${pack}.idx`))) !== null) return [];
  const removed: string[] = [];
  for (const extension of [...PACK_ORDER].reverse()) {
    if (extension === "idx") continue;
    const file = path.join(packDir, `${pack}.${extension}`);
    try {
      await fs.unlink(file);
      removed.push(file);
    } catch (error) {
      if (errnoCode(error) !== "ENOENT") throw error;
    }
  }
  return removed;
}
