/**
 * The git index, read and written in-process (a pure read is clearer here than parsing
 * `ls-files --debug`, whose flags mix in git's in-memory bits). Formats 2, 3 and 4
 * (path prefix compression) are read; 2, or 3 when an entry has extended flags, is written.
 *
 * What a restore point keeps of an entry is what git keeps beyond stat data: mode, object id,
 * stage, path and the flags `assume-valid`, `skip-worktree` and `intent-to-add`. Stat data is
 * not kept (it cannot survive a fresh checkout); a written index has zero stat data, which git
 * treats as "check the file" and refreshes. Extensions are reported by signature; the cache
 * tree (`TREE`), resolve-undo (`REUC`), end-of-index (`EOIE`), index-entry-offset (`IEOT`),
 * untracked cache (`UNTR`) and fsmonitor (`FSMN`) ones only cache or describe what the entries
 * already say, so a written index drops them.
 */
import { createHash } from "node:crypto";
import { GitRestoreError } from "./errors";

export interface IndexEntry {
  path: string;
  mode: number;
  oid: string;
  stage: number;
  assumeValid: boolean;
  skipWorktree: boolean;
  intentToAdd: boolean;
}

export interface ParsedIndex {
  version: number;
  entries: IndexEntry[];
  extensions: string[];
}

const CE_VALID = 0x8000;
const CE_EXTENDED = 0x4000;
const CE_STAGEMASK = 0x3000;
const CE_NAMEMASK = 0x0fff;
const CE_SKIP_WORKTREE = 0x4000; // in the extended flags
const CE_INTENT_TO_ADD = 0x2000; // in the extended flags

function invalid(detail: string): GitRestoreError {
  return new GitRestoreError("RECLAIM_ERR_GIT_PAYLOAD_INVALID", `index: ${detail}`);
}

export function hashLength(objectFormat: string): number {
  return objectFormat === "sha256" ? 32 : 20;
}

export function parseIndex(data: Buffer, objectFormat = "sha1"): ParsedIndex {
  const hashLen = hashLength(objectFormat);
  if (data.length < 12 + hashLen || data.toString("latin1", 0, 4) !== "DIRC")
    throw invalid("not an index file");
  const version = data.readUInt32BE(4);
  if (version < 2 || version > 4) throw invalid(`unsupported version ${version}`);
  const count = data.readUInt32BE(8);
  const end = data.length - hashLen;
  const checksum = createHash(objectFormat === "sha256" ? "sha256" : "sha1")
    .update(data.subarray(0, end))
    .digest();
  if (!checksum.equals(data.subarray(end))) throw invalid("checksum mismatch");
  const entries: IndexEntry[] = [];
  let at = 12;
  let previous: Buffer = Buffer.alloc(0);
  for (let i = 0; i < count; i++) {
    const start = at;
    const mode = data.readUInt32BE(at + 24);
    const oid = data.toString("hex", at + 40, at + 40 + hashLen);
    at += 40 + hashLen;
    const flags = data.readUInt16BE(at);
    at += 2;
    let extended = 0;
    if (flags & CE_EXTENDED) {
      if (version < 3) throw invalid("extended flags in a version 2 index");
      extended = data.readUInt16BE(at);
      at += 2;
    }
    let name: Buffer;
    if (version === 4) {
      let strip = 0;
      let byte: number;
      // git's varint: 7 bits per byte, each continuation adds one before shifting.
      byte = data[at++]!;
      strip = byte & 0x7f;
      while (byte & 0x80) {
        byte = data[at++]!;
        strip = ((strip + 1) << 7) | (byte & 0x7f);
      }
      const nul = data.indexOf(0, at);
      if (nul < 0 || strip > previous.length) throw invalid("bad path compression");
      name = Buffer.concat([previous.subarray(0, previous.length - strip), data.subarray(at, nul)]);
      at = nul + 1;
    } else {
      const nameLength = flags & CE_NAMEMASK;
      const nul = data.indexOf(0, at + (nameLength === CE_NAMEMASK ? 0 : nameLength));
      if (nul < 0) throw invalid("unterminated path");
      name = data.subarray(at, nul);
      // Entries are padded with 1-8 NULs to a multiple of 8 bytes from their start.
      at = start + Math.ceil((nul + 1 - start) / 8) * 8;
    }
    previous = name;
    entries.push({
      path: name.toString("utf8"),
      mode,
      oid,
      stage: (flags & CE_STAGEMASK) >> 12,
      assumeValid: (flags & CE_VALID) !== 0,
      skipWorktree: (extended & CE_SKIP_WORKTREE) !== 0,
      intentToAdd: (extended & CE_INTENT_TO_ADD) !== 0,
    });
  }
  const extensions: string[] = [];
  while (at + 8 <= end) {
    extensions.push(data.toString("latin1", at, at + 4));
    at += 8 + data.readUInt32BE(at + 4);
  }
  return { version, entries, extensions };
}

function compareEntries(a: IndexEntry, b: IndexEntry): number {
  const c = Buffer.compare(Buffer.from(a.path, "utf8"), Buffer.from(b.path, "utf8"));
  return c !== 0 ? c : a.stage - b.stage;
}

/**
 * An index file holding exactly `entries` (sorted as git sorts them), zero stat data except
 * the size, which is the blob's (`sizes`), as git records it for a file that matched its blob.
 */
export function writeIndex(
  entries: IndexEntry[],
  objectFormat = "sha1",
  sizes?: Map<string, number>,
): Buffer {
  const hashLen = hashLength(objectFormat);
  const sorted = [...entries].sort(compareEntries);
  const extended = sorted.some((e) => e.skipWorktree || e.intentToAdd);
  const version = extended ? 3 : 2;
  const parts: Buffer[] = [];
  const header = Buffer.alloc(12);
  header.write("DIRC", 0, "latin1");
  header.writeUInt32BE(version, 4);
  header.writeUInt32BE(sorted.length, 8);
  parts.push(header);
  for (const entry of sorted) {
    const name = Buffer.from(entry.path, "utf8");
    const hasExtended = entry.skipWorktree || entry.intentToAdd;
    const fixed = 40 + hashLen + 2 + (hasExtended ? 2 : 0);
    const length = Math.ceil((fixed + name.length + 1) / 8) * 8;
    const out = Buffer.alloc(length);
    out.writeUInt32BE(entry.mode, 24);
    if (!entry.intentToAdd) out.writeUInt32BE((sizes?.get(entry.oid) ?? 0) >>> 0, 36);
    Buffer.from(entry.oid, "hex").copy(out, 40);
    let flags = Math.min(name.length, CE_NAMEMASK) | (entry.stage << 12);
    if (entry.assumeValid) flags |= CE_VALID;
    if (hasExtended) flags |= CE_EXTENDED;
    out.writeUInt16BE(flags, 40 + hashLen);
    if (hasExtended) {
      out.writeUInt16BE(
        (entry.skipWorktree ? CE_SKIP_WORKTREE : 0) | (entry.intentToAdd ? CE_INTENT_TO_ADD : 0),
        42 + hashLen,
      );
    }
    name.copy(out, fixed);
    parts.push(out);
  }
  const body = Buffer.concat(parts);
  const checksum = createHash(objectFormat === "sha256" ? "sha256" : "sha1")
    .update(body)
    .digest();
  return Buffer.concat([body, checksum]);
}

/** The canonical text of entries (one line each), which manifests digest and compare. */
export function indexLines(entries: IndexEntry[]): string[] {
  return [...entries].sort(compareEntries).map((e) => {
    const flags = [
      e.assumeValid ? "assume-valid" : "",
      e.skipWorktree ? "skip-worktree" : "",
      e.intentToAdd ? "intent-to-add" : "",
    ]
      .filter(Boolean)
      .join(",");
    return `${e.mode.toString(8)} ${e.oid} ${e.stage} ${flags || "-"}\t${e.path}`;
  });
}
