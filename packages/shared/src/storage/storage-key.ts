import { StorageError } from "../errors";
import { UUID_NAME } from "../uuid";

/**
 * A validated, company-scoped object key: `companies/<companyId>/<relativeKey>`.
 *
 * Providers accept only this type, never a string, so no caller can build a key in another
 * company's namespace: the company id is a canonical lowercase UUID (Paperclip's
 * `companies.id`), and the relative key is a chain of plain segments that cannot climb out
 * (`..`), start at the root (`/`), or carry a backslash (a separator on Windows and in some
 * S3 tools). Segments may not start with `.`: local_disk keeps its temporary files under such
 * names, so a valid key can never collide with one.
 */
export class StorageKey {
  /** `companies/<companyId>/<relativeKey>`, what the ledger records and providers address. */
  readonly path: string;

  private constructor(
    readonly companyId: string,
    readonly relativeKey: string,
  ) {
    this.path = `${COMPANIES}/${companyId}/${relativeKey}`;
  }

  /** @throws StorageError RECLAIM_ERR_STORAGE_KEY_INVALID for a bad company id or relative key. */
  static of(companyId: string, relativeKey: string): StorageKey {
    if (!UUID_NAME.test(companyId)) {
      throw invalid(`company id must be a lowercase UUID (got ${JSON.stringify(companyId)})`);
    }
    validateRelativeKey(relativeKey);
    return new StorageKey(companyId, relativeKey);
  }

  /** Parses a `path` recorded earlier; the same rules as `of`. */
  static parse(path: string): StorageKey {
    const match = /^companies\/([^/]+)\/(.+)$/s.exec(path);
    if (!match) throw invalid(`expected companies/<companyId>/<key> (got ${JSON.stringify(path)})`);
    return StorageKey.of(match[1]!, match[2]!);
  }

  /** The key with `suffix` appended to its last segment, in the same company (e.g. `.seal-header`). */
  withSuffix(suffix: string): StorageKey {
    return StorageKey.of(this.companyId, this.relativeKey + suffix);
  }

  toString(): string {
    return this.path;
  }
}

const COMPANIES = "companies";
// Letters, digits and `._-=+@` only: the same bytes on every filesystem and S3 implementation,
// no normalization or case-folding surprises, nothing a shell or URL needs quoted.
const SEGMENT = /^[A-Za-z0-9_=+@-][A-Za-z0-9._=+@-]*$/;
/** S3 allows 1,024 bytes per key; leave room for the company prefix and a provider prefix. */
const MAX_RELATIVE_KEY_BYTES = 768;
/** Longest file name on ext4, xfs and btrfs. */
const MAX_SEGMENT_BYTES = 255;

function validateRelativeKey(key: string): void {
  if (key.includes("\\")) throw invalid(`backslashes are not allowed (got ${JSON.stringify(key)})`);
  if (key.startsWith("/")) throw invalid(`absolute keys are not allowed (got ${JSON.stringify(key)})`);
  if (key.length === 0 || Buffer.byteLength(key) > MAX_RELATIVE_KEY_BYTES) {
    throw invalid(`relative key must be 1 to ${MAX_RELATIVE_KEY_BYTES} bytes`);
  }
  for (const segment of key.split("/")) {
    if (segment === ".." || segment === ".") {
      throw invalid(`"${segment}" segments are not allowed (got ${JSON.stringify(key)})`);
    }
    if (!SEGMENT.test(segment) || segment.length > MAX_SEGMENT_BYTES) {
      throw invalid(
        `segment ${JSON.stringify(segment)} must be 1 to ${MAX_SEGMENT_BYTES} of [A-Za-z0-9._=+@-], not starting with "."`,
      );
    }
  }
}

function invalid(detail: string): StorageError {
  return new StorageError("RECLAIM_ERR_STORAGE_KEY_INVALID", detail);
}
