/** Names of the files that make up a pack, as git spells them. */

/**
 * Publication order of a pack's files (git's pack_copy_priority, extended to newer files).
 * git uses a pack only through its `.idx`: everything before it is invisible until the index
 * is published, and once it is, everything the index needs is there.
 */
export const PACK_ORDER = ["keep", "pack", "rev", "idx", "bitmap", "promisor", "mtimes"] as const;

/** The files published before the index: invisible to git while the index is absent. */
export const BEFORE_INDEX: ReadonlySet<string> = new Set(PACK_ORDER.slice(0, PACK_ORDER.indexOf("idx")));

/** `pack-<hash>` (SHA-1 or SHA-256); the hash is the pack's own checksum, so one name is one content. */
export const PACK_NAME = /^pack-(?:[0-9a-f]{40}|[0-9a-f]{64})$/;

export const PACK_FILE = /^(pack-(?:[0-9a-f]{40}|[0-9a-f]{64}))\.(keep|pack|rev|idx|bitmap|promisor|mtimes)$/;
