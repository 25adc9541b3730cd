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

/**
 * A deadline job's cursors in reclaim_cursors. With `known` (what the job's claim read: every
 * cursor of the key, claimDue), reads cost no statement, and a write of the value the cursor
 * already has costs none either; a key's jobs run one at a time, so nothing else moves its
 * cursors meanwhile. A value is remembered once its write succeeded (in a transaction that
 * then fails, the job fails with it).
 */
export function ledgerCursors(
  db: Db,
  key: LedgerKey,
  clock: Clock,
  known?: Map<string, string>,
): CursorStore {
  return {
    read: async (name) => (known ? (known.get(name) ?? null) : readCursor(db, key, name)),
    write: async (name, value, tx) => {
      if (known && (known.get(name) ?? null) === value) return;
      await writeCursor(tx ?? db, key, name, value, clock.now());
      if (value === null) known?.delete(name);
      else known?.set(name, value);
    },
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
