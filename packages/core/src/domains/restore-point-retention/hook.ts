/**
 * The expiry hook: before an expired restore point's object is deleted, Reclaim tells the
 * Paperclip server (RECLAIM_RESTORE_POINT_EXPIRY_HOOK_URL), which drops the saved recipe
 * and warns on reopen. Without a URL the hook is a no-op. The POST is signed exactly like
 * report callbacks (`X-Reclaim-Signature: sha256=<HMAC of the body>`, callbacks/signature.ts)
 * and any 2xx answer is success. Delivery is at least once: a crash after the server
 * answered but before the row moved on calls it again, so the receiver must treat a repeated
 * `id` as done.
 */
import { sign, SIGNATURE_HEADER } from "../../callbacks/signature";
import { LIMITS, type ExpiryHook } from "./config";
import type { DueRow } from "./rules";

export const EXPIRY_HOOK_EVENT = "restore_point.expiring";

export interface ExpiryHookBody {
  type: typeof EXPIRY_HOOK_EVENT;
  restorePoint: {
    id: string;
    companyId: string;
    executionWorkspaceId: string;
    sourceIssueId: string;
    generation: number;
    kind: string;
    checkoutName: string | null;
    storageKey: string;
  };
}

export function expiryHookBody(row: DueRow): ExpiryHookBody {
  return {
    type: EXPIRY_HOOK_EVENT,
    restorePoint: {
      id: row.id,
      companyId: row.company_id,
      executionWorkspaceId: row.execution_workspace_id,
      sourceIssueId: row.source_issue_id,
      generation: row.generation,
      kind: row.kind,
      checkoutName: row.checkout_name,
      storageKey: row.storage_key,
    },
  };
}

/** Resolves when the hook accepted the expiry (or there is none); rejects otherwise. */
export async function runExpiryHook(
  hook: ExpiryHook | null,
  row: DueRow,
  signal: AbortSignal,
): Promise<void> {
  if (hook === null) return;
  const body = JSON.stringify(expiryHookBody(row));
  const response = await fetch(hook.url, {
    method: "POST",
    headers: { "content-type": "application/json", [SIGNATURE_HEADER]: sign(body, hook.secret) },
    body,
    signal: AbortSignal.any([signal, AbortSignal.timeout(LIMITS.hookTimeoutMs)]),
  });
  // The body is not needed; reading it frees the connection.
  await response.arrayBuffer().catch(() => undefined);
  if (!response.ok) throw new Error(`expiry hook answered ${response.status}`);
}
