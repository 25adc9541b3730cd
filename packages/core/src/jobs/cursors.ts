/**
 * Cursor stores for a job. Deadline jobs persist cursors in reclaim_cursors; a requested
 * sweep (a diagnosis) carries its own, as an opaque token in the request and the report,
 * so it can be continued page by page without moving the deadline jobs' walks.
 */
import type { Clock } from "../clock";
import type { Db, Tx } from "../db";
import { ReclaimError } from "../errors";
import { readCursor, writeCursor, type LedgerKey } from "../ledger";

export interface CursorStore {
  read(name: string): Promise<string | null>;
  write(name: string, value: string | null, tx?: Tx): Promise<void>;
  /** Sweeps: the token to continue from, `null` when every walk reached its end. */
  token(): string | null;
}

export function ledgerCursors(db: Db, key: LedgerKey, clock: Clock): CursorStore {
  return {
    read: (name) => readCursor(db, key, name),
    write: (name, value, tx) => writeCursor(tx ?? db, key, name, value, clock.now()),
    token: () => null,
  };
}

export function decodeCursorToken(token: string | undefined): Record<string, string> {
  if (!token) return {};
  try {
    const parsed: unknown = JSON.parse(Buffer.from(token, "base64url").toString("utf8"));
    if (parsed && typeof parsed === "object" && Object.values(parsed).every((v) => typeof v === "string")) {
      return parsed as Record<string, string>;
    }
  } catch {
    // fall through
  }
  throw new ReclaimError("RECLAIM_ERR_VALIDATION", {
    message: "cursor is not a token this service issued",
    field: "cursor",
  });
}

export function sweepCursors(token: string | undefined): CursorStore {
  const cursors = decodeCursorToken(token);
  return {
    read: async (name) => cursors[name] ?? null,
    write: async (name, value) => {
      if (value === null) delete cursors[name];
      else cursors[name] = value;
    },
    token: () =>
      Object.keys(cursors).length ? Buffer.from(JSON.stringify(cursors)).toString("base64url") : null,
  };
}
