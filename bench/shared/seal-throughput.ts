/**
 * Benchmark: sealing a restore point into storage vs raw AES-256-GCM over the same bytes,
 * in the same run, each in its own child process so peak RSS is the sealing process's own.
 *
 *   npx tsx bench/shared/seal-throughput.ts [--mib 2048] [--storage local_disk|s3]
 *
 * The payload is a file of random bytes, read through the page cache by both sides. "raw"
 * is one AES-256-GCM cipher stream over it into a discarding sink; "seal" is `seal()` into
 * the provider: chunked encryption, upload, fsync (local_disk), read-back and SHA-256 check.
 * Prints the throughputs, the ratio seal / raw (target: at least 0.5), the sealing process's
 * peak RSS (target: under 200 MB), and a second baseline: raw AES-256-GCM written to the same
 * disk and fsynced, the floor for any durable store (seal+store also reads back and hashes). `--storage s3` uses the RGW of scripts/s3-rgw.sh
 * (start it first); its memstore holds 3 GiB, so use --mib 1024 or less there.
 */
import { execFile } from "node:child_process";
import { createCipheriv, randomBytes } from "node:crypto";
import { createReadStream, createWriteStream } from "node:fs";
import { mkdtemp, open, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { Writable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { promisify } from "node:util";
import { Client } from "minio";
import {
  createLocalDiskProvider,
  createS3Provider,
  deleteSealed,
  fingerprintOf,
  seal,
  StorageKey,
  type StorageProvider,
} from "../../packages/shared/src";

const run = promisify(execFile);

interface Measurement {
  seconds: number;
  maxRssMiB: number;
}

function option(name: string, fallback: string): string {
  const at = process.argv.indexOf(`--${name}`);
  return at > 0 ? process.argv[at + 1]! : fallback;
}

function discard(): Writable {
  return new Writable({
    write(_chunk, _encoding, callback) {
      callback();
    },
  });
}

async function rawChild(file: string): Promise<number> {
  const started = process.hrtime.bigint();
  const cipher = createCipheriv("aes-256-gcm", randomBytes(32), randomBytes(12));
  await pipeline(createReadStream(file, { highWaterMark: 1 << 20 }), cipher, discard());
  return Number(process.hrtime.bigint() - started) / 1e9;
}

/** The floor any durable store has here: the same cipher stream written to disk and fsynced. */
async function rawDurableChild(file: string, dir: string): Promise<number> {
  const out = path.join(dir, "raw-durable.bin");
  const started = process.hrtime.bigint();
  const cipher = createCipheriv("aes-256-gcm", randomBytes(32), randomBytes(12));
  await pipeline(
    createReadStream(file, { highWaterMark: 1 << 20 }),
    cipher,
    createWriteStream(out, { highWaterMark: 4 << 20 }),
  );
  const handle = await open(out, "r+");
  await handle.sync();
  await handle.close();
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  await rm(out);
  return seconds;
}

async function s3Storage(bucket: string): Promise<StorageProvider> {
  const endpoint = process.env.RECLAIM_TEST_S3_ENDPOINT ?? "http://127.0.0.1:7480";
  const accessKey = process.env.RECLAIM_TEST_S3_ACCESS_KEY ?? "reclaimtestaccess";
  const secretKey = process.env.RECLAIM_TEST_S3_SECRET_KEY ?? "reclaimtestsecret0123456789abcdef";
  const url = new URL(endpoint);
  const client = new Client({
    endPoint: url.hostname,
    port: Number(url.port),
    useSSL: false,
    accessKey,
    secretKey,
    pathStyle: true,
  });
  if (!(await client.bucketExists(bucket))) await client.makeBucket(bucket);
  return createS3Provider({
    bucket,
    endpoint,
    forcePathStyle: true,
    accessKeyId: accessKey,
    secretAccessKey: secretKey,
  });
}

async function sealChild(file: string, size: number, storageDir: string, kind: string): Promise<number> {
  const storage =
    kind === "s3" ? await s3Storage("reclaim-bench") : createLocalDiskProvider({ baseDir: storageDir });
  const key = randomBytes(32);
  const storageKey = StorageKey.of("00000000-0000-4000-8000-000000000000", "bench/seal/payload");
  const started = process.hrtime.bigint();
  await seal(createReadStream(file, { highWaterMark: 1 << 20 }), {
    instanceKey: { key, fingerprint: fingerprintOf(key), source: "env" },
    storage,
    storageKey,
    plaintextSize: size,
  });
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  await deleteSealed(storage, storageKey);
  return seconds;
}

async function child(): Promise<void> {
  const [, , , mode, file, size, storageDir, kind] = process.argv;
  const seconds =
    mode === "raw"
      ? await rawChild(file!)
      : mode === "raw-durable"
        ? await rawDurableChild(file!, storageDir!)
        : await sealChild(file!, Number(size), storageDir!, kind!);
  const measurement: Measurement = { seconds, maxRssMiB: process.resourceUsage().maxRSS / 1024 };
  process.stdout.write(JSON.stringify(measurement));
}

async function measure(
  mode: "raw" | "raw-durable" | "seal",
  file: string,
  size: number,
  storageDir: string,
  kind: string,
): Promise<Measurement> {
  const { stdout } = await run(
    process.execPath,
    ["--import", "tsx", __filename, "--child", mode, file, String(size), storageDir, kind],
    {
      env: process.env,
      maxBuffer: 1 << 20,
    },
  );
  return JSON.parse(stdout) as Measurement;
}

async function main(): Promise<void> {
  const mib = Number(option("mib", "2048"));
  const kind = option("storage", "local_disk");
  const size = mib * 1024 * 1024;
  const root = await mkdtemp(path.join(os.tmpdir(), "reclaim-bench-seal-"));
  try {
    const file = path.join(root, "payload.bin");
    const out = createWriteStream(file);
    for (let written = 0; written < size; written += 8 << 20) {
      if (!out.write(randomBytes(Math.min(8 << 20, size - written))))
        await new Promise<void>((r) => out.once("drain", () => r()));
    }
    await new Promise<void>((resolve) => out.end(resolve));
    await measure("raw", file, size, root, kind); // warm the page cache for both sides
    const raw = await measure("raw", file, size, root, kind);
    const durable = await measure("raw-durable", file, size, root, kind);
    const sealed = await measure("seal", file, size, path.join(root, "storage"), kind);
    const rawRate = mib / raw.seconds;
    const durableRate = mib / durable.seconds;
    const sealRate = mib / sealed.seconds;
    console.log(
      `raw AES-256-GCM: ${raw.seconds.toFixed(2)} s (${rawRate.toFixed(0)} MiB/s), peak RSS ${raw.maxRssMiB.toFixed(0)} MiB`,
    );
    console.log(
      `raw AES-256-GCM + write + fsync: ${durable.seconds.toFixed(2)} s (${durableRate.toFixed(0)} MiB/s)`,
    );
    console.log(
      `seal + store (${kind}): ${sealed.seconds.toFixed(2)} s (${sealRate.toFixed(0)} MiB/s), peak RSS ${sealed.maxRssMiB.toFixed(0)} MiB`,
    );
    console.log(
      `${mib} MiB payload: seal+store / raw throughput = ${(sealRate / rawRate).toFixed(3)} (target >= 0.5); sealing process peak RSS ${sealed.maxRssMiB.toFixed(0)} MiB (target < 200 MB)`,
    );
    // The target above compares against encryption in memory; a durable store cannot beat the
    // disk, so this second ratio shows what sealing, hashing and the read-back cost on top of it.
    console.log(
      `seal+store / (raw AES-256-GCM + write + fsync) throughput = ${(sealRate / durableRate).toFixed(3)}`,
    );
  } finally {
    await rm(root, { recursive: true, force: true });
  }
}

if (process.argv[2] === "--child") {
  void child();
} else {
  void main().catch((error: unknown) => {
    console.error(error);
    process.exit(1);
  });
}
