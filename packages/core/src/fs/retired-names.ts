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
 */
import { randomBytes, randomUUID } from "node:crypto";
import { UUID_PATTERN } from "./names";

export type RetiredPrefix = ".expired" | ".trash" | ".retiring" | ".restoring";

const SHORT_HEX = 24;
const RETIRED = new RegExp(
  `^(\\.expired|\\.trash|\\.retiring|\\.restoring)-(?:${UUID_PATTERN}|[0-9a-f]{${SHORT_HEX}})$`,
);

export function retiredName(prefix: RetiredPrefix, form: "uuid" | "short" = "uuid"): string {
  return form === "uuid"
    ? `${prefix}-${randomUUID()}`
    : `${prefix}-${randomBytes(SHORT_HEX / 2).toString("hex")}`;
}

export function retiredPrefixOf(name: string): RetiredPrefix | null {
  const match = RETIRED.exec(name);
  return match ? (match[1] as RetiredPrefix) : null;
}
