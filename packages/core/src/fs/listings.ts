/**
 * Listings of large directories, kept for reuse while the directory is unchanged.
 *
 * A sweep's batches each list the same large top folder (10,000 sync folders: ~6 ms of a
 * batch, a third of its time), though between two batches it seldom changes. A directory's
 * ctime is set by the kernel at every change of its entries (a create, a remove, a rename in or
 * out), and no call can set it back. So a listing is reused when `ProvenDir.list`'s confirm
 * finds the same directory (device and inode) with the same ctime and mtime as when it was
 * read, and only when it could not have missed a change in the same tick of the filesystem's
 * clock: the directory's ctime was the same before and after the readdir, and more than
 * UNCHANGED_MARGIN_MS before the readdir began (a change after that gets a later ctime). A
 * ctime ahead of this process's clock is never trusted.
 * Only listings of at least REUSED_LISTING_MIN_ENTRIES entries are kept (a small directory
 * costs one quick readdir), at most KEPT_ENTRIES_MAX entries in all, the oldest dropped first.
 * A reused listing is shared: callers never change it (`readonly`).
 */
import type { Dirent, Stats } from "node:fs";

export const REUSED_LISTING_MIN_ENTRIES = 1000;
export const KEPT_ENTRIES_MAX = 200_000;
export const UNCHANGED_MARGIN_MS = 2000;

interface Kept {
  dev: number;
  ino: number;
  ctimeMs: number;
  mtimeMs: number;
  entries: readonly Dirent[];
}

/** By path, oldest first (a Map keeps insertion order). */
const kept = new Map<string, Kept>();
let keptEntries = 0;

function drop(at: string): void {
  const old = kept.get(at);
  if (old === undefined) return;
  kept.delete(at);
  keptEntries -= old.entries.length;
}

const unchanged = (a: Stats | Kept, b: Stats) =>
  a.dev === b.dev && a.ino === b.ino && a.ctimeMs === b.ctimeMs && a.mtimeMs === b.mtimeMs;

/** The listing kept for the directory `at`, when `now` (its lstat or stat) shows it unchanged. */
export function reusableListing(at: string, now: Stats): readonly Dirent[] | null {
  const listing = kept.get(at);
  if (listing === undefined) return null;
  if (unchanged(listing, now)) return listing.entries;
  drop(at);
  return null;
}

/**
 * Keeps `entries`, read from `at` between the stats `before` and `after`, the readdir begun
 * at `startedAt` (Date.now()), when they qualify (see the header).
 */
export function keepListing(
  at: string,
  before: Stats,
  after: Stats,
  startedAt: number,
  entries: readonly Dirent[],
): void {
  drop(at);
  if (entries.length < REUSED_LISTING_MIN_ENTRIES || entries.length > KEPT_ENTRIES_MAX) return;
  if (!unchanged(before, after) || startedAt - before.ctimeMs <= UNCHANGED_MARGIN_MS) return;
  for (const [oldest] of kept) {
    if (keptEntries + entries.length <= KEPT_ENTRIES_MAX) break;
    drop(oldest);
  }
  const { dev, ino, ctimeMs, mtimeMs } = before;
  kept.set(at, { dev, ino, ctimeMs, mtimeMs, entries });
  keptEntries += entries.length;
}

/** Forgets every kept listing (tests). */
export function forgetListings(): void {
  kept.clear();
  keptEntries = 0;
}

/** What callers made of each listing, by computation (fromListing). */
const derived = new WeakMap<readonly Dirent[], Map<string, unknown>>();

/**
 * What `compute` makes of `listing` (its names filtered and sorted, say), computed once per
 * listing: a reused listing is the same array, so a sweep's batches do not sort the same
 * 10,000 names again each. `key` names the computation (one per caller); the result is
 * shared: never changed.
 */
export function fromListing<T>(
  listing: readonly Dirent[],
  key: string,
  compute: (listing: readonly Dirent[]) => T,
): T {
  let results = derived.get(listing);
  if (results === undefined) derived.set(listing, (results = new Map()));
  if (!results.has(key)) results.set(key, compute(listing));
  return results.get(key) as T;
}
