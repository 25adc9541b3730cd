/**
 * The manifests a git workspace's restore points keep (as their exact text, in the restore
 * point row's metadata: verification and apply compare the manifest's own serialization), and
 * which ones its checkouts were last restored from.
 *
 * A reopen records, in the workspace's metadata (`gitCacheRestoredFrom`), the restore point
 * each nested checkout was restored from. A restored nested clone holds that restore point's
 * history-only commits and index carrier as objects nothing reaches; its next capture passes
 * the manifest as `restoredFrom` (packages/shared README, "Capturing a restored checkout
 * again"), so they are accepted and saved again instead of refusing the capture for
 * `unreachable_objects`. The list comes from Reclaim's own rows, never from a file in the
 * checkout. A restore point row that is gone leaves the capture without it: it is refused,
 * and the workspace kept.
 */
import { parseManifest, type RestoreManifest } from "@reclaim/shared";
import { z } from "zod";
import type { Db, Tx } from "../../db";

export const RESTORED_FROM_KEY = "gitCacheRestoredFrom";

const restoredFromSchema = z.record(z.string().min(1), z.uuid());

/** The manifest a restore point row keeps, or null when it has none. */
export function manifestOf(row: { metadata: unknown } | null): RestoreManifest | null {
  const text = (row?.metadata as { manifest?: unknown } | null)?.manifest;
  return typeof text === "string" ? parseManifest(text) : null;
}

/** The manifest of restore point `id` of the company, or null when the row or its manifest is gone. */
export async function storedManifest(
  db: Db | Tx,
  companyId: string,
  id: string,
): Promise<RestoreManifest | null> {
  return manifestOf(await db.executionWorkspaceRestorePoint.findFirst({ where: { id, companyId } }));
}

/** Nested checkout name -> the manifest it was last restored from (the workspace's metadata). */
export async function restoredFromManifests(
  db: Db | Tx,
  companyId: string,
  metadata: Record<string, unknown>,
): Promise<Map<string, RestoreManifest>> {
  const parsed = restoredFromSchema.safeParse(metadata[RESTORED_FROM_KEY] ?? {});
  const found = new Map<string, RestoreManifest>();
  if (!parsed.success) return found;
  for (const [name, id] of Object.entries(parsed.data)) {
    // A manifest that no longer parses is left out like a missing one (the capture is refused).
    const manifest = await storedManifest(db, companyId, id).catch(() => null);
    if (manifest) found.set(name, manifest);
  }
  return found;
}
