import { SealError } from "../errors";
import type { StorageProviderKind } from "../storage/provider";
import type { InstanceKeySource } from "./instance-key";

/**
 * Paperclip's rule: restore points are refused when the file storage is `s3` and the
 * secrets key does not come from PAPERCLIP_SECRETS_MASTER_KEY. A key file lives on the host
 * that is being cleaned up; with objects off-host, losing that host would leave restore
 * points nobody can open, so the key must be managed (and backed up) outside it.
 *
 * @throws SealError RECLAIM_ERR_RESTORE_POINTS_REFUSED (permanent).
 */
export function assertRestorePointsAllowed(storage: StorageProviderKind, keySource: InstanceKeySource): void {
  if (storage === "s3" && keySource !== "env") {
    throw new SealError(
      "RECLAIM_ERR_RESTORE_POINTS_REFUSED",
      `storage is s3 and the key comes from a ${keySource}`,
    );
  }
}
