/**
 * Benchmark: a git restore point's capture + seal + store, and its apply, against plain git
 * and raw AES-256-GCM doing the same work, in the same run on the same bytes.
 *
 *   npx tsx bench/shared/git-capture.ts [--files 5000] [--commits 200] [--large-mib 1024] [--rounds 1]
 *
 * The worktree: a remote with `--files` small files, a clone with `--commits` unpushed commits
 * and one untracked file of `--large-mib` MiB of random bytes.
 *
 *   capture   Reclaim: captureWorktree (remote-verified base, bundle, snapshots) piped into
 *             seal() into local-disk storage (write, fsync, read-back hash).
 *             Baseline: `git add -A` into a private index, `git bundle create` of the
 *             unpushed commits, and AES-256-GCM of the bundle and the large file into one
 *             file, fsynced. Target: Reclaim / baseline <= 1.3.
 *   apply     Reclaim: `git clone` of the remote, then applyPayload from storage (decrypt,
 *             stage, import, checkout, restore). Baseline: `git clone --no-local` of a
 *             repository holding the same work as commits (the large file included), with
 *             its checkout. Target: Reclaim / baseline <= 1.5.
 *
 * Each measured step runs in its own process, so its peak RSS (VmHWM, git's children not
 * included) is its own: target under 250 MB. The capture uses the local-transfer limits with
 * room for the large file (the limits are not what is measured). Needs about 8 x the large
 * file in free space under the temp directory; removes it all.
 */
import { execFile, spawn } from "node:child_process";
import { createCipheriv, createHash, randomBytes } from "node:crypto";
import { createReadStream, createWriteStream } from "node:fs";
import { mkdir, mkdtemp, open as openFile, readFile, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { pipeline } from "node:stream/promises";
import { promisify } from "node:util";
import {
  applyPayload,
  captureWorktree,
  createLocalDiskProvider,
  fingerprintOf,
  LOCAL_TRANSFER_LIMITS,
  open,
  seal,
  StorageKey,
} from "../../packages/shared/src";

const run = promisify(execFile);
const env: NodeJS.ProcessEnv = {
  PATH: process.env.PATH,
  HOME: os.tmpdir(),
  GIT_CONFIG_NOSYSTEM: "1",
  GIT_AUTHOR_NAME: "bench",
  GIT_AUTHOR_EMAIL: "bench@reclaim.invalid",
  GIT_COMMITTER_NAME: "bench",
  GIT_COMMITTER_EMAIL: "bench@reclaim.invalid",
};
const COMPANY = "00000000-0000-4000-8000-000000000001";

function option(name: string, fallback: number): number {
  const at = process.argv.indexOf(`--${name}`);
  return at > 0 ? Number(process.argv[at + 1]) : fallback;
}

async function git(cwd: string, args: string[], extra: NodeJS.ProcessEnv = {}): Promise<string> {
  return (await run("git", args, { cwd, env: { ...env, ...extra }, maxBuffer: 1 << 26 })).stdout;
}

async function writeRandomFile(file: string, bytes: number): Promise<void> {
  const out = createWriteStream(file);
  const block = 8 * 1024 * 1024;
  for (let written = 0; written < bytes; written += block) {
    if (!out.write(randomBytes(Math.min(block, bytes - written))))
      await new Promise<void>((r) => out.once("drain", () => r()));
  }
  await new Promise<void>((resolve, reject) =>
    out.end((error?: Error | null) => (error ? reject(error) : resolve())),
  );
}

/** The remote (5,000 files), the worktree (200 unpushed commits, the large untracked file). */
async function setUp(
  root: string,
  files: number,
  commits: number,
  largeMiB: number,
): Promise<{ bare: string; work: string }> {
  const bare = path.join(root, "remote.git");
  const seed = path.join(root, "seed");
  await git(root, ["init", "-q", "--bare", "-b", "main", bare]);
  await git(root, ["init", "-q", "-b", "main", seed]);
  for (let i = 0; i < files; i += 1) {
    const dir = path.join(seed, "src", String(i % 50));
    if (i < 50) await mkdir(dir, { recursive: true });
    await writeFile(
      path.join(dir, `file-${i}.ts`),
      `export const value${i} = "${randomBytes(24).toString("hex")}";\n`,
    );
  }
  await git(seed, ["add", "-A"]);
  await git(seed, ["commit", "-q", "-m", "initial"]);
  await git(seed, ["push", "-q", bare, "main"]);
  const work = path.join(root, "work");
  await git(root, ["clone", "-q", bare, work]);
  // 200 commits through fast-import: each changes one file.
  const head = (await git(work, ["rev-parse", "HEAD"])).trim();
  const stream: string[] = [];
  for (let c = 0; c < commits; c += 1) {
    const body = `export const changed${c} = "${randomBytes(24).toString("hex")}";\n`;
    stream.push(
      "commit refs/heads/main",
      `committer bench <bench@reclaim.invalid> ${1_800_000_000 + c} +0000`,
      `data ${`unpushed ${c}`.length}`,
      `unpushed ${c}`,
      ...(c === 0 ? [`from ${head}`] : []),
      `M 100644 inline src/${c % 50}/file-${c}.ts`,
      `data ${Buffer.byteLength(body)}`,
      body,
    );
  }
  await new Promise<void>((resolve, reject) => {
    const child = spawn("git", ["fast-import", "--quiet", "--force"], {
      cwd: work,
      env,
      stdio: ["pipe", "ignore", "inherit"],
    });
    child.on("exit", (code) => (code === 0 ? resolve() : reject(new Error(`fast-import ${code}`))));
    child.stdin.end(stream.join("\n") + "\n");
  });
  await git(work, ["reset", "-q", "--hard", "main"]);
  await writeRandomFile(path.join(work, "large.bin"), largeMiB * 1024 * 1024);
  return { bare, work };
}

function instanceKey(): { key: Buffer; fingerprint: string; source: "env" } {
  const key = Buffer.alloc(32, 7);
  return { key, fingerprint: fingerprintOf(key), source: "env" };
}

/** One measured step, run in this process (spawned as `--phase <name> <json>`). */
async function phase(name: string, args: Record<string, string>): Promise<unknown> {
  const started = process.hrtime.bigint();
  if (name === "reclaim-capture") {
    const storage = createLocalDiskProvider({ baseDir: args.storage! });
    const limits = {
      ...LOCAL_TRANSFER_LIMITS,
      maxTotalBytes: 4 * LOCAL_TRANSFER_LIMITS.maxTotalBytes,
      maxFileBytes: 4 * LOCAL_TRANSFER_LIMITS.maxFileBytes,
    };
    const capture = await captureWorktree(args.work!, { base: { kind: "remote" }, limits });
    try {
      const storageKey = StorageKey.of(COMPANY, "git-restore-points/bench/payload");
      await seal(capture.stream, {
        instanceKey: instanceKey(),
        storage,
        storageKey,
        plaintextSize: capture.payloadSize,
      });
      await writeFile(args.manifest!, JSON.stringify(await capture.manifest));
    } finally {
      await capture.dispose();
    }
  } else if (name === "baseline-capture") {
    const index = path.join(args.work!, ".git", "bench-index");
    await git(args.work!, ["read-tree", "HEAD"], { GIT_INDEX_FILE: index });
    await git(args.work!, ["add", "-A"], { GIT_INDEX_FILE: index });
    await git(args.work!, ["write-tree"], { GIT_INDEX_FILE: index });
    const bundle = path.join(args.out!, "plain.bundle");
    await git(args.work!, ["bundle", "create", "-q", bundle, "origin/main..main"]);
    const cipher = createCipheriv("aes-256-gcm", randomBytes(32), randomBytes(12));
    const target = path.join(args.out!, "plain.enc");
    const sources = [bundle, path.join(args.work!, "large.bin")];
    async function* plaintext(): AsyncGenerator<Buffer> {
      for (const file of sources) for await (const chunk of createReadStream(file)) yield chunk as Buffer;
    }
    await pipeline(plaintext, cipher, createWriteStream(target));
    const handle = await openFile(target, "r");
    await handle.sync();
    await handle.close();
  } else if (name === "reclaim-apply") {
    await git(path.dirname(args.target!), ["clone", "-q", args.bare!, args.target!]);
    const storage = createLocalDiskProvider({ baseDir: args.storage! });
    const storageKey = StorageKey.of(COMPANY, "git-restore-points/bench/payload");
    const manifest = JSON.parse(await readFile(args.manifest!, "utf8"));
    await applyPayload(args.target!, () => open(storage, storageKey, instanceKey()), manifest);
  } else if (name === "baseline-apply") {
    await git(path.dirname(args.target!), ["clone", "-q", "--no-local", args.source!, args.target!]);
  }
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  const hwm = /VmHWM:\s+(\d+) kB/.exec(await readFile("/proc/self/status", "utf8"))?.[1];
  return { seconds, peakRssMiB: Number(hwm) / 1024 };
}

async function measured(
  name: string,
  args: Record<string, string>,
): Promise<{ seconds: number; peakRssMiB: number }> {
  await run("sync", []);
  const { stdout, stderr } = await run(
    process.execPath,
    ["--import", "tsx", __filename, "--phase", name, JSON.stringify(args)],
    {
      cwd: path.resolve(__dirname, "../.."),
      maxBuffer: 1 << 20,
    },
  );
  const last = stdout.trim().split("\n").pop() ?? "";
  if (!last.startsWith("{")) throw new Error(`${name} printed no result: ${stderr}`);
  return JSON.parse(last);
}

async function main(): Promise<void> {
  const at = process.argv.indexOf("--phase");
  if (at > 0) {
    console.log(JSON.stringify(await phase(process.argv[at + 1]!, JSON.parse(process.argv[at + 2]!))));
    return;
  }
  const files = option("files", 5000);
  const commits = option("commits", 200);
  const largeMiB = option("large-mib", 1024);
  const rounds = option("rounds", 1);
  const root = await mkdtemp(path.join(os.tmpdir(), "reclaim-bench-git-capture-"));
  try {
    const { bare, work } = await setUp(root, files, commits, largeMiB);
    for (let round = 0; round < rounds; round += 1) {
      const dir = path.join(root, `round-${round}`);
      const storage = path.join(dir, "storage");
      const out = path.join(dir, "plain");
      await mkdir(out, { recursive: true });
      const manifest = path.join(dir, "manifest.json");
      // The baseline's `git add -A` writes the large file into the repository: give it a copy.
      const plainWork = path.join(dir, "plain-work");
      await run("cp", ["-a", work, plainWork]);
      const reclaim = await measured("reclaim-capture", { work, storage, manifest });
      const baseline = await measured("baseline-capture", { work: plainWork, out });
      // The baseline's clone source: the same work as commits.
      await git(plainWork, ["add", "-A"]);
      await git(plainWork, ["commit", "-q", "-m", "the work as a commit"]);
      const reclaimApply = await measured("reclaim-apply", {
        bare,
        storage,
        manifest,
        target: path.join(dir, "reopened"),
      });
      const baselineApply = await measured("baseline-apply", {
        source: plainWork,
        target: path.join(dir, "cloned"),
      });
      const digest = async (file: string): Promise<string> =>
        createHash("sha256")
          .update(await readFile(file))
          .digest("hex")
          .slice(0, 12);
      const same =
        (await digest(path.join(dir, "reopened", "large.bin"))) ===
        (await digest(path.join(work, "large.bin")));
      console.log(
        [
          `round ${round + 1} (${files} files, ${commits} unpushed commits, ${largeMiB} MiB untracked):`,
          `  capture+seal+store ${reclaim.seconds.toFixed(2)} s (peak RSS ${reclaim.peakRssMiB.toFixed(0)} MiB) vs git add -A + bundle + AES-256-GCM ${baseline.seconds.toFixed(2)} s: ratio ${(reclaim.seconds / baseline.seconds).toFixed(3)} (target <= 1.3)`,
          `  clone+apply ${reclaimApply.seconds.toFixed(2)} s (peak RSS ${reclaimApply.peakRssMiB.toFixed(0)} MiB) vs git clone + checkout ${baselineApply.seconds.toFixed(2)} s: ratio ${(reclaimApply.seconds / baselineApply.seconds).toFixed(3)} (target <= 1.5)`,
          `  restored large file identical: ${same}`,
        ].join("\n"),
      );
      await rm(dir, { recursive: true, force: true });
    }
  } finally {
    await rm(root, { recursive: true, force: true });
  }
}

// A phase whose promise never settles would otherwise let the process exit 0 silently.
process.on("exit", (code) => {
  if (code === 0 && !finished) console.error("exited before finishing");
});
let finished = false;
void main()
  .then(() => (finished = true))
  .catch((error: unknown) => {
    console.error(error);
    process.exit(1);
  });
