/**
 * The payload container (the plaintext that goes into `seal()`), schema 2:
 *
 *   magic    8 bytes  "RCLGITP" + 0x02 (the schema: a reader refuses any other)
 *   count    u32      number of sections (6)
 *   sizes    count x u64
 *   sections in order: bundle, index (JSON), history (JSON), tracked files, untracked files,
 *            ignored files (each a tree-snapshot)
 *
 * Sizes are known before the first byte (seal needs the total up front); each section is a
 * stream, so memory stays constant. Reading writes every section to a staging directory and
 * resolves only after the whole stream ended without error: a seal error (truncated,
 * tampered, wrong key) rejects before anything was applied, with the seal's own error.
 */
import { createWriteStream } from "node:fs";
import path from "node:path";
import { Readable } from "node:stream";
import { GitRestoreError } from "./errors";

export const PAYLOAD_MAGIC = Buffer.from([0x52, 0x43, 0x4c, 0x47, 0x49, 0x54, 0x50, 0x02]); // RCLGITP\x02
export const SECTIONS = ["bundle", "index", "history", "tracked", "untracked", "ignored"] as const;
export type SectionName = (typeof SECTIONS)[number];

export interface Section {
  size: number;
  open(): Readable;
}

export function headerBytes(): number {
  return PAYLOAD_MAGIC.length + 4 + 8 * SECTIONS.length;
}

export function payloadSize(sections: Record<SectionName, Section>): number {
  return headerBytes() + SECTIONS.reduce((sum, name) => sum + sections[name].size, 0);
}

export function payloadStream(sections: Record<SectionName, Section>): Readable {
  async function* generate(): AsyncGenerator<Buffer> {
    const header = Buffer.alloc(headerBytes());
    PAYLOAD_MAGIC.copy(header, 0);
    header.writeUInt32BE(SECTIONS.length, 8);
    SECTIONS.forEach((name, i) => header.writeBigUInt64BE(BigInt(sections[name].size), 12 + 8 * i));
    yield header;
    for (const name of SECTIONS) {
      if (sections[name].size === 0) continue;
      let sent = 0;
      for await (const chunk of sections[name].open()) {
        sent += (chunk as Buffer).length;
        yield chunk as Buffer;
      }
      if (sent !== sections[name].size) {
        throw new GitRestoreError(
          "RECLAIM_ERR_GIT_CAPTURE_CHANGED",
          `${name}: ${sent} bytes, expected ${sections[name].size}`,
        );
      }
    }
  }
  return Readable.from(generate(), { objectMode: false });
}

/** Writes each section of `payload` to `<staging>/<name>`; resolves with their sizes. */
export async function stagePayload(payload: Readable, staging: string): Promise<Record<SectionName, number>> {
  const sizes = {} as Record<SectionName, number>;
  let buffered = Buffer.alloc(0);
  let sectionIndex = -1;
  let remaining = 0;
  let out: ReturnType<typeof createWriteStream> | null = null;

  const finishSection = async (): Promise<void> => {
    if (out) {
      const stream = out;
      out = null;
      await new Promise<void>((resolve, reject) =>
        stream.end((error?: Error | null) => (error ? reject(error) : resolve())),
      );
    }
  };
  const startNext = async (): Promise<void> => {
    await finishSection();
    while (++sectionIndex < SECTIONS.length) {
      const name = SECTIONS[sectionIndex]!;
      out = createWriteStream(path.join(staging, name), { flags: "wx", mode: 0o600 });
      await new Promise<void>((resolve, reject) => {
        out!.once("open", () => resolve());
        out!.once("error", reject);
      });
      remaining = sizes[name];
      if (remaining > 0) return;
      await finishSection();
    }
  };
  const write = async (chunk: Buffer): Promise<void> => {
    if (!out!.write(chunk)) await new Promise<void>((resolve) => out!.once("drain", () => resolve()));
  };

  try {
    for await (const raw of payload) {
      let chunk = raw as Buffer;
      if (sectionIndex < 0) {
        buffered = Buffer.concat([buffered, chunk]);
        if (buffered.length < headerBytes()) continue;
        if (!buffered.subarray(0, PAYLOAD_MAGIC.length).equals(PAYLOAD_MAGIC)) {
          throw new GitRestoreError(
            "RECLAIM_ERR_GIT_PAYLOAD_SCHEMA",
            "not a schema 2 git restore-point payload",
          );
        }
        if (buffered.readUInt32BE(8) !== SECTIONS.length) {
          throw new GitRestoreError("RECLAIM_ERR_GIT_PAYLOAD_INVALID", "section count");
        }
        SECTIONS.forEach((name, i) => (sizes[name] = Number(buffered.readBigUInt64BE(12 + 8 * i))));
        chunk = buffered.subarray(headerBytes());
        await startNext();
      }
      while (chunk.length > 0) {
        if (sectionIndex >= SECTIONS.length) {
          throw new GitRestoreError("RECLAIM_ERR_GIT_PAYLOAD_INVALID", "bytes after the last section");
        }
        const take = Math.min(remaining, chunk.length);
        await write(chunk.subarray(0, take));
        remaining -= take;
        chunk = chunk.subarray(take);
        if (remaining === 0) await startNext();
      }
    }
    if (sectionIndex < SECTIONS.length) {
      throw new GitRestoreError("RECLAIM_ERR_GIT_PAYLOAD_INVALID", "payload ends inside a section");
    }
  } finally {
    await finishSection().catch(() => undefined);
  }
  return sizes;
}
