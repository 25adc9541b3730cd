/**
 * Names of directories on their way out. A tree is first renamed, atomically and on the same
 * filesystem, to a sibling `<prefix>-<UUID>`; only then is it deleted, after the decision is
 * committed. A crash leaves a name that says exactly what it is, and the next sweep finishes
 * the deletion (or, for `.retiring`, decides again).
 *   .expired   decided: delete (native sync folders, session backups, evidence)
 *   .trash     decided: delete, under a separate lock (skill version caches)
 *   .retiring  provisional: a final check decides between `.expired` and undoing the rename
 */
import { randomUUID } from "node:crypto";
import { UUID_PATTERN } from "./names";

export type RetiredPrefix = ".expired" | ".trash" | ".retiring";

const RETIRED = new RegExp(`^(\\.expired|\\.trash|\\.retiring)-${UUID_PATTERN}$`);

export function retiredName(prefix: RetiredPrefix): string {
  return `${prefix}-${randomUUID()}`;
}

export function retiredPrefixOf(name: string): RetiredPrefix | null {
  const match = RETIRED.exec(name);
  return match ? (match[1] as RetiredPrefix) : null;
}
