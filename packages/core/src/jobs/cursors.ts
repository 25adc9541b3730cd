/**
 * Cursor stores for a job. Deadline jobs persist cursors in reclaim_cursors; a requested
 * sweep (a diagnosis) carries its own, as an opaque token in the request and the report,
 * so it can be continued page by page without moving the deadline jobs' walks.
 */
import { z } from "zod";
import type { Clock } from "../clock";
import type { Db, Tx } from "../db";
import { decodeCursor, encodeCursor, storableString } from "../input";
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

/**
 * A sweep's token: each named walk's position, as the checks wrote them (walk names are
 * lower-case words like `folders`; positions are entry names and keys, which the checks
 * only compare with listed names, never open). A forged token can start a page anywhere in
 * its walks, nothing more.
 */
const sweepToken = z.record(z.string().regex(/^[a-z][a-z0-9_-]{0,63}$/), storableString({ max: 4096 }));

/** The positions in a sweep's `cursor` (none for no cursor); a 400 naming `cursor` for one this service did not issue. */
export function decodeCursorToken(token: string | undefined): Record<string, string> {
  return token ? decodeCursor(token, sweepToken) : {};
}

export function sweepCursors(token: string | undefined): CursorStore {
  const cursors = decodeCursorToken(token);
  return {
    read: async (name) => cursors[name] ?? null,
    write: async (name, value) => {
      if (value === null) delete cursors[name];
      else cursors[name] = value;
    },
    token: () => (Object.keys(cursors).length ? encodeCursor(cursors) : null),
  };
}
