/**
 * Names of directories on their way out. A tree is first renamed, atomically and on the same
 * filesystem, to a sibling `<prefix>-<UUID>`; only then is it deleted, after the decision is
 * committed. A crash leaves a name that says exactly what it is, and the next sweep finishes
 * the deletion (or, for `.retiring`, decides again).
 *   .expired   decided: delete (native sync folders, session backups, evidence)
 *   .trash     decided: delete, under a separate lock (skill version caches)
 *   .retiring  provisional: a final check decides between `.expired` and undoing the rename
 *   .restoring a restore's staging tree beside its target (deleted when it was not renamed in)
 * The random part is a UUID, or (`retiredName(prefix, "short")`) 24 hex digits where the
 * sibling's name must be no longer than the UUID-named tree it stands in for (task
 * directories: a path that fit before still fits while it is renamed).
 *
 * A retired tree that several jobs may delete (a shared folder's leftovers) is claimed
 * before it is deleted: renamed to `<prefix>-<pid>-<start>-<UUID>` (`claimedName`), naming
 * the process that deletes it by its pid and start time (ms since the epoch, 0 when it
 * cannot be read). Another job takes such a tree only once that process is gone (retire.ts
 * `claimantIsLive`), so a deletion under way is never taken over, and one a kill -9 cut
 * short is finished by the next sweep.
 */
import { randomBytes, randomUUID } from "node:crypto";
import { PROCESS_TAG, processTag, taggedProcess, type NamedProcess } from "../process/liveness";
import { UUID_PATTERN } from "./names";

export type RetiredPrefix = ".expired" | ".trash" | ".retiring" | ".restoring";

const SHORT_HEX = 24;
const RETIRED = new RegExp(
  `^(\\.expired|\\.trash|\\.retiring|\\.restoring)-(?:${PROCESS_TAG}-)?(?:${UUID_PATTERN}|[0-9a-f]{${SHORT_HEX}})$`,
);

export function retiredName(prefix: RetiredPrefix, form: "uuid" | "short" = "uuid"): string {
  return form === "uuid"
    ? `${prefix}-${randomUUID()}`
    : `${prefix}-${randomBytes(SHORT_HEX / 2).toString("hex")}`;
}

export function retiredPrefixOf(name: string): RetiredPrefix | null {
  // Most names of a large folder are not retired: no pattern run for them.
  if (!name.startsWith(".")) return null;
  const match = RETIRED.exec(name);
  return match ? (match[1] as RetiredPrefix) : null;
}

/** The process a claimed name says is deleting the tree. */
export type Claimant = NamedProcess;

/** A claimed name of the kind `prefix` for `claimant` (see above). */
export function claimedName(prefix: RetiredPrefix, claimant: Claimant): string {
  return `${prefix}-${processTag(claimant)}-${randomUUID()}`;
}

/** Who claimed `name`; `null` for a retired name nobody claimed (or no retired name). */
export function claimantOf(name: string): Claimant | null {
  const match = RETIRED.exec(name);
  if (!match || match[2] === undefined) return null;
  return taggedProcess(match[2], match[3]!);
}
