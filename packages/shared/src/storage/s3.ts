import { createHash } from "node:crypto";
import { pipeline, type Readable } from "node:stream";
import { Client } from "minio";
import { ConfigError, StorageError } from "../errors";
import { validateRange } from "./byte-range";
import { measure, MeteredStream, validateByteLength } from "./metered-stream";
import type { GetOptions, ObjectHead, StorageProvider, StoredObject } from "./provider";
import { isS3NotFound, s3StorageError } from "./s3-errors";
import { idleLimitedTransport } from "./s3-transport";
import type { StorageKey } from "./storage-key";
import { mapStreamErrors } from "./stream-errors";

export interface S3Options {
  /** Bucket that holds every object. It must exist; the provider never creates buckets. */
  bucket: string;
  /** Signing region. Default "us-east-1". */
  region?: string;
  /**
   * Endpoint URL (`http://127.0.0.1:7480`, `https://s3.example.com`). Default: AWS S3
   * (`https://s3.amazonaws.com`).
   */
  endpoint?: string;
  /** Key prefix inside the bucket, without leading or trailing `/`. Default "" (none). */
  prefix?: string;
  /** Address the bucket in the path instead of the host name. Default false. */
  forcePathStyle?: boolean;
  accessKeyId?: string;
  secretAccessKey?: string;
  sessionToken?: string;
  /**
   * Bytes per multipart part, and the size above which uploads are multipart. One part is held
   * in memory at a time. Default 8 MiB (with S3's 10,000 parts: objects up to 78 GiB); S3
   * allows 5 MiB to 5 GiB per part. 16 MiB parts cost ~45 MiB more peak RSS when sealing 1 GiB
   * into RGW here.
   */
  partSize?: number;
  /**
   * Milliseconds a request may go without receiving or sending a byte before it fails as
   * RECLAIM_ERR_STORAGE_UNAVAILABLE. Default 60000.
   */
  requestIdleTimeoutMs?: number;
}

export const DEFAULT_S3_PART_SIZE = 8 * 1024 * 1024;
const MIN_PART_SIZE = 5 * 1024 * 1024;

/**
 * `s3`: objects in one bucket under `<prefix>/companies/<companyId>/...`, through the minio
 * client. Uploads up to `partSize` are one PUT; larger ones are multipart, driven here rather
 * than by the client's `putObject`, whose stream path never settles when its source errors
 * (it pipes without forwarding errors) and which resumes any stray upload of the same name.
 * A failed multipart upload is aborted, so no parts linger. After the upload the object is
 * read back and hashed.
 */
export function createS3Provider(options: S3Options): StorageProvider {
  const partSize = options.partSize ?? DEFAULT_S3_PART_SIZE;
  if (!Number.isSafeInteger(partSize) || partSize < MIN_PART_SIZE) {
    throw new ConfigError(
      "partSize",
      `must be an integer of at least ${MIN_PART_SIZE} bytes (got ${partSize})`,
    );
  }
  const idleMs = options.requestIdleTimeoutMs ?? 60_000;
  if (!Number.isFinite(idleMs) || idleMs <= 0) {
    throw new ConfigError(
      "requestIdleTimeoutMs",
      `must be a positive number of milliseconds (got ${idleMs})`,
    );
  }
  const bucket = options.bucket;
  const prefix = (options.prefix ?? "").replace(/^\/+|\/+$/g, "");
  const endpoint = new URL(options.endpoint ?? "https://s3.amazonaws.com");
  const useSSL = endpoint.protocol === "https:";
  const client = new Client({
    endPoint: endpoint.hostname,
    port: endpoint.port ? Number(endpoint.port) : undefined,
    useSSL,
    transport: idleLimitedTransport(useSSL, idleMs),
    region: options.region ?? "us-east-1",
    pathStyle: options.forcePathStyle ?? false,
    accessKey: options.accessKeyId,
    secretKey: options.secretAccessKey,
    sessionToken: options.sessionToken,
    partSize,
  });
  const objectName = (key: StorageKey): string => (prefix ? `${prefix}/${key.path}` : key.path);

  async function upload(name: string, body: Readable, byteLength: number): Promise<void> {
    // A small object (a 132-byte seal header) gets a buffer of its own size, not a part's.
    const parts = partsOf(body, Math.max(1, Math.min(partSize, byteLength)));
    if (byteLength <= partSize) {
      const only = await parts.next();
      const rest = only.done ? only : await parts.next(); // drives the length check to the end
      if (!rest.done)
        throw new StorageError("RECLAIM_ERR_STORAGE_LENGTH_MISMATCH", `more than ${byteLength} bytes`);
      await client.putObject(bucket, name, only.done ? Buffer.alloc(0) : only.value);
      return;
    }
    const uploadId = await client.initiateNewMultipartUpload(bucket, name, {});
    try {
      const etags: { part: number; etag: string }[] = [];
      for await (const chunk of parts) {
        const part = etags.length + 1;
        const md5 = createHash("md5").update(chunk).digest("base64");
        const uploaded = await client.uploadPart(
          {
            bucketName: bucket,
            objectName: name,
            uploadID: uploadId,
            partNumber: part,
            headers: { "Content-Length": chunk.length, "Content-MD5": md5 },
          },
          chunk,
        );
        etags.push({ part, etag: uploaded.etag });
      }
      await client.completeMultipartUpload(bucket, name, uploadId, etags);
    } catch (error) {
      await client.abortMultipartUpload(bucket, name, uploadId).catch(() => undefined);
      throw error;
    }
  }

  const provider: StorageProvider = {
    kind: "s3",

    async put(key, body, byteLength): Promise<StoredObject> {
      validateByteLength(byteLength);
      const name = objectName(key);
      const meter = new MeteredStream(byteLength);
      const metered = pipeline(body, meter, () => undefined);
      try {
        await upload(name, metered, byteLength);
      } catch (error) {
        body.destroy();
        throw s3StorageError(`put ${key.path}`, error);
      }
      const sent = meter.digest();
      const stored = await measure(await provider.get(key));
      if (stored.sha256 !== sent.sha256 || stored.byteSize !== sent.byteSize) {
        throw new StorageError("RECLAIM_ERR_STORAGE_VERIFY_FAILED", `${key.path} read back differently`);
      }
      return { key, ...stored };
    },

    async get(key, getOptions: GetOptions = {}): Promise<Readable> {
      const range = getOptions.range;
      if (range) validateRange(range);
      const what = `get ${key.path}`;
      try {
        const stream = range
          ? await client.getPartialObject(bucket, objectName(key), range.offset, range.length)
          : await client.getObject(bucket, objectName(key));
        return mapStreamErrors(stream, (error) => s3StorageError(what, error));
      } catch (error) {
        throw s3StorageError(what, error);
      }
    },

    async head(key): Promise<ObjectHead | null> {
      try {
        const stat = await client.statObject(bucket, objectName(key));
        return { byteSize: stat.size };
      } catch (error) {
        if (isS3NotFound(error)) return null;
        throw s3StorageError(`head ${key.path}`, error);
      }
    },

    async delete(key): Promise<void> {
      try {
        await client.removeObject(bucket, objectName(key));
      } catch (error) {
        if (!isS3NotFound(error)) throw s3StorageError(`delete ${key.path}`, error);
      }
      if ((await provider.head(key)) !== null) {
        throw new StorageError("RECLAIM_ERR_STORAGE_DELETE_UNCONFIRMED", key.path);
      }
    },
  };
  return provider;
}

/**
 * Parts of exactly `size` bytes (the last one shorter), copied straight into one buffer per
 * part: one part is held at a time, which is what keeps a multi-GiB upload's memory flat.
 */
async function* partsOf(source: Readable, size: number): AsyncGenerator<Buffer> {
  let part = Buffer.allocUnsafe(size);
  let filled = 0;
  for await (const chunk of source as AsyncIterable<Buffer>) {
    let offset = 0;
    while (offset < chunk.length) {
      const copied = chunk.copy(part, filled, offset);
      filled += copied;
      offset += copied;
      if (filled === size) {
        yield part;
        part = Buffer.allocUnsafe(size);
        filled = 0;
      }
    }
  }
  if (filled > 0) yield part.subarray(0, filled);
}
