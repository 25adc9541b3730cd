/**
 * Benchmark: sealing a restore point into storage vs raw AES-256-GCM over the same bytes,
 * in the same run, each measurement in its own child process so peak RSS is that process's.
 *
 *   npx tsx bench/shared/seal-throughput.ts [--mib 2048] [--rounds 3] [--storage local_disk|s3]
 *                                           [--dir <directory>]
 *
 * The payload is a file of random bytes, read through the page cache by every measurement.
 * Each round runs, in this order:
 *
 *   raw      one AES-256-GCM cipher stream over the payload into a discarding sink: the
 *            target's baseline (seal+store should reach at least 0.5 of it)
 *   floor    the same cipher stream written to a file, fsynced, and read back: what any
 *            durable, verified store of encrypted bytes costs at least here
 *   seal     `seal()` into the provider: chunked AES-256-GCM, the write, fsync, read-back
 *            with byte comparison and SHA-256 (local_disk; s3: upload, read back, SHA-256)
 *
 * and, once, the breakdown of where seal+store spends its time, each part alone:
 *
 *   seal-transform   the sealing transform (1 MiB chunks, framing) into a discarding sink
 *   sha256           one SHA-256 pass over the payload
 *   write-fsync      the payload written to a file and fsynced (no encryption)
 *   read-sha256      a file of that size, just written and fsynced, read back and hashed
 *
 * Every figure is the median over the rounds; the ratios are of medians. Each row also shows
 * the CPU time the measuring process used (all its threads), which other work on the machine
 * changes far less than wall time. Also prints the sealing process's peak RSS (target: under
 * 200 MB). `--storage s3` uses the RGW of
 * scripts/s3-rgw.sh (start it first); its memstore holds 3 GiB, so use --mib 1024 or less.
 *
 * `--dir` puts the payload and the local_disk store in that directory (default: the system's
 * temporary directory). `--dir /dev/shm` (tmpfs: fsync costs nothing, reads come from memory)
 * measures what sealing itself costs where the storage keeps up: on a disk slower than
 * AES-256-GCM, the floor row is the bound and seal+store is judged against it.
 *
 * The machine is shared: a run while other work uses the cores or the disk is slower and
 * noisier in every row, which is why each round measures raw, floor and seal back to back.
 */
import { execFile } from "node:child_process";
import { createCipheriv, createHash, randomBytes } from "node:crypto";
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
import { SealTransform } from "../../packages/shared/src/crypto/chunk-cipher";
import {
  DEFAULT_CHUNK_SIZE,
  encodePreamble,
  PAYLOAD_ID_BYTES,
} from "../../packages/shared/src/crypto/seal-format";

const run = promisify(execFile);
const SOURCE_HWM = 1 << 20;

const MODES = ["raw", "floor", "seal", "seal-transform", "sha256", "write-fsync", "read-sha256"] as const;
type Mode = (typeof MODES)[number];

interface Measurement {
  seconds: number;
  /**
   * User + system CPU time of the measuring process (all its threads; not the kernel's
   * writeback): the work done, which another process competing for the cores does not change
   * the way it changes `seconds`.
   */
  cpuSeconds: number;
  maxRssMiB: number;
}

function option(name: string, fallback: string): string {
  const at = process.argv.indexOf(`--${name}`);
  return at > 0 ? process.argv[at + 1]! : fallback;
}

function discard(): Writable {
  return new Writable({
    highWaterMark: 4 << 20,
    write(_chunk, _encoding, callback) {
      callback();
    },
  });
}

const source = (file: string) => createReadStream(file, { highWaterMark: SOURCE_HWM });

type Timing = Omit<Measurement, "maxRssMiB">;

/** Wall time and CPU time (user + system, every thread of this process) of `fn`. */
async function timed(fn: () => Promise<void>): Promise<Timing> {
  const started = process.hrtime.bigint();
  const cpu = process.cpuUsage();
  await fn();
  const used = process.cpuUsage(cpu);
  return {
    seconds: Number(process.hrtime.bigint() - started) / 1e9,
    cpuSeconds: (used.user + used.system) / 1e6,
  };
}

async function fsyncFile(file: string): Promise<void> {
  const handle = await open(file, "r+");
  await handle.sync();
  await handle.close();
}

async function sha256Of(file: string): Promise<void> {
  const hash = createHash("sha256");
  await pipeline(
    createReadStream(file, { highWaterMark: 4 << 20 }),
    new Writable({
      highWaterMark: 4 << 20,
      write(chunk: Buffer, _encoding, callback) {
        hash.update(chunk);
        callback();
      },
    }),
  );
  hash.digest();
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

async function measureInChild(
  mode: Mode,
  file: string,
  size: number,
  dir: string,
  kind: string,
): Promise<Timing> {
  const out = path.join(dir, `${mode}.out`);
  const cipher = () => createCipheriv("aes-256-gcm", randomBytes(32), randomBytes(12));
  switch (mode) {
    case "raw":
      return timed(() => pipeline(source(file), cipher(), discard()));
    case "floor": {
      const timing = await timed(async () => {
        await pipeline(source(file), cipher(), createWriteStream(out, { highWaterMark: 4 << 20 }));
        await fsyncFile(out);
        await pipeline(createReadStream(out, { highWaterMark: 4 << 20 }), discard());
      });
      await rm(out);
      return timing;
    }
    case "seal-transform": {
      const params = { chunkSize: DEFAULT_CHUNK_SIZE, payloadId: randomBytes(PAYLOAD_ID_BYTES) };
      const sealer = new SealTransform(randomBytes(32), encodePreamble(params), params, size);
      return timed(() => pipeline(source(file), sealer, discard()));
    }
    case "sha256":
      return timed(() => sha256Of(file));
    case "write-fsync": {
      const timing = await timed(async () => {
        await pipeline(source(file), createWriteStream(out, { highWaterMark: 4 << 20 }));
        await fsyncFile(out);
      });
      await rm(out);
      return timing;
    }
    case "read-sha256": {
      await pipeline(source(file), createWriteStream(out, { highWaterMark: 4 << 20 }));
      await fsyncFile(out);
      const timing = await timed(() => sha256Of(out));
      await rm(out);
      return timing;
    }
    case "seal": {
      const storage =
        kind === "s3"
          ? await s3Storage("reclaim-bench")
          : createLocalDiskProvider({ baseDir: path.join(dir, "storage") });
      const key = randomBytes(32);
      const storageKey = StorageKey.of("00000000-0000-4000-8000-000000000000", "bench/seal/payload");
      const timing = await timed(async () => {
        await seal(source(file), {
          instanceKey: { key, fingerprint: fingerprintOf(key), source: "env" },
          storage,
          storageKey,
          plaintextSize: size,
        });
      });
      await deleteSealed(storage, storageKey);
      return timing;
    }
  }
}

async function child(): Promise<void> {
  const [, , , mode, file, size, dir, kind] = process.argv;
  const timing = await measureInChild(mode as Mode, file!, Number(size), dir!, kind!);
  const measurement: Measurement = { ...timing, maxRssMiB: process.resourceUsage().maxRSS / 1024 };
  process.stdout.write(JSON.stringify(measurement));
}

async function measure(
  mode: Mode,
  file: string,
  size: number,
  dir: string,
  kind: string,
): Promise<Measurement> {
  const { stdout } = await run(
    process.execPath,
    ["--import", "tsx", __filename, "--child", mode, file, String(size), dir, kind],
    { env: process.env, maxBuffer: 1 << 20 },
  );
  return JSON.parse(stdout) as Measurement;
}

const median = (values: number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
};

async function main(): Promise<void> {
  const mib = Number(option("mib", "2048"));
  const rounds = Number(option("rounds", "3"));
  const kind = option("storage", "local_disk");
  const size = mib * 1024 * 1024;
  const root = await mkdtemp(path.join(option("dir", os.tmpdir()), "reclaim-bench-seal-"));
  try {
    const file = path.join(root, "payload.bin");
    const out = createWriteStream(file);
    for (let written = 0; written < size; written += 8 << 20) {
      if (!out.write(randomBytes(Math.min(8 << 20, size - written))))
        await new Promise<void>((r) => out.once("drain", () => r()));
    }
    await new Promise<void>((resolve) => out.end(resolve));
    await measure("raw", file, size, root, kind); // warms the page cache for every measurement
    const seen = new Map<Mode, Measurement[]>(MODES.map((m) => [m, []]));
    for (let round = 1; round <= rounds; round += 1) {
      const line: string[] = [];
      for (const mode of ["raw", "floor", "seal"] as const) {
        const m = await measure(mode, file, size, root, kind);
        seen.get(mode)!.push(m);
        line.push(`${mode} ${m.seconds.toFixed(2)} s`);
      }
      console.log(`round ${round}: ${line.join(", ")}`);
    }
    for (const mode of ["seal-transform", "sha256", "write-fsync", "read-sha256"] as const) {
      seen.get(mode)!.push(await measure(mode, file, size, root, kind));
    }
    const seconds = (mode: Mode) => median(seen.get(mode)!.map((m) => m.seconds));
    const cpu = (mode: Mode) => median(seen.get(mode)!.map((m) => m.cpuSeconds));
    const rate = (mode: Mode) => mib / seconds(mode);
    const row = (label: string, mode: Mode) =>
      console.log(
        `  ${label.padEnd(48)} ${seconds(mode).toFixed(2).padStart(6)} s  ${rate(mode).toFixed(0).padStart(5)} MiB/s` +
          `  CPU ${cpu(mode).toFixed(2).padStart(5)} s`,
      );
    console.log(`${mib} MiB payload, ${kind} in ${path.dirname(root)}, median of ${rounds} round(s):`);
    row("raw AES-256-GCM (in memory)", "raw");
    row("floor: AES-256-GCM + write + fsync + read back", "floor");
    row("seal + store", "seal");
    console.log("breakdown, each part alone (1 run):");
    row("sealing transform (AES-256-GCM, framing)", "seal-transform");
    row("SHA-256, one pass", "sha256");
    row("write + fsync (no encryption)", "write-fsync");
    row("read back + SHA-256", "read-sha256");
    const peak = Math.max(...seen.get("seal")!.map((m) => m.maxRssMiB));
    console.log(
      `seal+store / raw AES-256-GCM = ${(rate("seal") / rate("raw")).toFixed(3)} (target >= 0.5); ` +
        `seal+store / floor = ${(rate("seal") / rate("floor")).toFixed(3)}; ` +
        `sealing process peak RSS ${peak.toFixed(0)} MiB (target < 200 MB; a bare tsx process: ` +
        `${Math.max(...seen.get("raw")!.map((m) => m.maxRssMiB)).toFixed(0)} MiB in the raw run)`,
    );
    console.log(
      `CPU time: seal+store / raw AES-256-GCM = ${(cpu("seal") / cpu("raw")).toFixed(2)}, ` +
        `seal+store / floor = ${(cpu("seal") / cpu("floor")).toFixed(2)}; load average at the end ${os.loadavg()[0]!.toFixed(1)} on ${os.cpus().length} cores`,
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
