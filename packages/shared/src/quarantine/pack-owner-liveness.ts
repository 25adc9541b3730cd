/**
 * The liveness judgement of a pack owner: whether the holder of a record or break lock is
 * dead, by the rules of the contract in pack-ownership.ts ("Holder dead?"), first rule that
 * applies: marked abandoned; unreadable and `staleAfterMs` old; this copy of the module (live
 * while registered); this process; then the process identity (process-identity.ts), or by
 * age where it cannot be checked from here.
 */
import type { OwnershipOptions } from "./pack-ownership";
import { INSTANCE, registered, type Held } from "./pack-owner-record";
import { isThisProcess, livenessOf } from "./process-identity";

/** Whether the holder of `seen` is dead, so that its record may be broken. */
export async function isDead(
  seen: Held,
  options: Pick<OwnershipOptions, "clock" | "staleAfterMs" | "fs">,
): Promise<boolean> {
  const { clock, staleAfterMs, fs } = options;
  const holder = seen.record;
  if (!holder) return clock.now().getTime() - seen.mtimeMs > staleAfterMs;
  if (holder.abandoned) return true;
  if (isThisProcess(holder)) {
    // Another copy of this module holds what it holds: live while this process runs.
    return holder.instance === INSTANCE && !registered.has(holder.lockId);
  }
  const liveness = await livenessOf(holder, (file) => fs.readFile(file));
  if (liveness === "unknown") return clock.now().getTime() - holder.createdAt > staleAfterMs;
  return liveness === "dead";
}
