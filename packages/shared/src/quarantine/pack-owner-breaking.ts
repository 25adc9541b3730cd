/**
 * Taking a name in the owners directory, and breaking a dead holder's record to take it
 * (the contract: pack-ownership.ts, "Take" and "Break"): the break lock is taken exactly as
 * a record is, the new record is written under a temporary name and renamed over the dead
 * one, so the name is never free for another capture to take without learning that the pack
 * was abandoned. Also the removal of a dead breaker's leftovers.
 */
import { randomUUID } from "node:crypto";
import path from "node:path";
import type { OwnershipOptions } from "./pack-ownership";
import { isDead } from "./pack-owner-liveness";
import { OwnerEntries, packOf, type Held, type Taken } from "./pack-owner-record";

/** Creates `name` for this capture, replacing a dead holder's; "busy" while a live one holds it. */
export async function tryTake(entries: OwnerEntries, name: string): Promise<Taken | "busy"> {
  for (;;) {
    const lockId = randomUUID();
    const created = await entries.create(name, lockId);
    if (created) return { lockId, ino: created.ino, brokeDead: false };
    const seen = await entries.read(name);
    if (seen.kind === "gone") continue;
    if (!(await isDead(seen, entries.options))) return "busy";
    const outcome = await replaceDead(entries, name, seen);
    if (outcome !== "changed") return outcome;
  }
}

/**
 * Replaces `name`, if it still is the dead record `seen`, by a record of this capture,
 * under that record's break lock: the new record is written under a temporary name and
 * renamed over the dead one, so the name is never free for another capture to take
 * without learning that the pack was abandoned.
 */
export async function replaceDead(
  entries: OwnerEntries,
  name: string,
  seen: Held,
): Promise<Taken | "changed" | "busy"> {
  const pack = packOf(name);
  const guard = await tryTake(entries, `${pack}.break-${seen.lockId}`);
  if (guard === "busy") return "busy";
  try {
    const lockId = randomUUID();
    const temp = `${pack}.new-${lockId}`;
    const created = await entries.create(temp, lockId);
    if (!created) throw new Error(`${temp} exists`); // a fresh random name: never
    try {
      // Still the record seen, and still dead: an unreadable record is named by its inode,
      // which a new file may have reused; its fresh mtime then says so.
      const now = await entries.read(name);
      if (
        now.kind !== "held" ||
        now.lockId !== seen.lockId ||
        now.ino !== seen.ino ||
        !(await isDead(now, entries.options))
      ) {
        await entries.discard(temp, lockId, created.ino);
        return "changed";
      }
      await entries.options.fs.rename(path.join(entries.dir, temp), path.join(entries.dir, name));
    } catch (error) {
      await entries.discard(temp, lockId, created.ino);
      throw error;
    }
    return { lockId, ino: created.ino, brokeDead: true };
  } finally {
    // A break lock left behind is clutter for recovery, never a reason to undo the take.
    await entries.release(`${pack}.break-${seen.lockId}`, guard).catch(() => undefined);
  }
}

/**
 * Removes the other entries of pack `packName` (break locks, temporary records) whose
 * holders are dead: a breaker that crashed leaves them. The caller holds the pack.
 */
export async function removeDeadLeftovers(
  objectsDir: string,
  packName: string,
  options: OwnershipOptions,
): Promise<void> {
  const owners = new OwnerEntries(objectsDir, options);
  for (const name of await owners.list()) {
    if (!name.startsWith(`${packName}.`)) continue;
    const seen = await owners.read(name);
    if (seen.kind !== "held" || !(await isDead(seen, options))) continue;
    const taken = await replaceDead(owners, name, seen);
    if (taken !== "busy" && taken !== "changed") await owners.release(name, taken);
  }
}
