/**
 * Benchmark: a restore-point capture through the object quarantine vs the same capture with
 * plain `git add -A` and a private index, in the same run, on identical repositories.
 *
 *   npx tsx bench/shared/quarantine-capture.ts [--large-mib 1024] [--small 5000] [--rounds 3]
 *
 * Each round builds two identical repositories (one tracked file, an untracked large file
 * of random bytes and `--small` small files) and captures one with each method, alternating
 * which goes first. Prints each time and the ratio quarantine / plain (target: under 1.1).
 * Needs about 4 x the large file in free space under the temp directory; removes it all.
 */
import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { createWriteStream } from "node:fs";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { withObjectQuarantine } from "../../packages/shared/src";

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

async function makeRepo(dir: string, large: string, small: number): Promise<void> {
  await git(os.tmpdir(), ["init", "-q", "-b", "main", dir]);
  await writeFile(path.join(dir, "tracked.txt"), "tracked\n");
  await git(dir, ["add", "tracked.txt"]);
  await git(dir, ["commit", "-q", "-m", "initial"]);
  await run("cp", ["--reflink=auto", large, path.join(dir, "large.bin")]);
  for (let i = 0; i < small; i += 1) {
    const sub = path.join(dir, "files", String(i % 50));
    if (i < 50) await mkdir(sub, { recursive: true });
    await writeFile(path.join(sub, `file-${i}.txt`), `small file ${i} ${randomBytes(16).toString("hex")}\n`);
  }
}

/** The same snapshot both ways: private index from HEAD, add everything, write a tree. */
async function plainCapture(dir: string): Promise<number> {
  const indexFile = path.join(dir, ".git", "bench-private-index");
  const started = process.hrtime.bigint();
  await git(dir, ["read-tree", "HEAD"], { GIT_INDEX_FILE: indexFile });
  await git(dir, ["add", "-A"], { GIT_INDEX_FILE: indexFile });
  await git(dir, ["write-tree"], { GIT_INDEX_FILE: indexFile });
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  await rm(indexFile, { force: true });
  return seconds;
}

async function quarantineCapture(dir: string): Promise<number> {
  const started = process.hrtime.bigint();
  await withObjectQuarantine(
    dir,
    "bench",
    async (ctx) => {
      await ctx.git(["read-tree", "HEAD"]);
      await ctx.git(["add", "-A"]);
      return ctx.git(["write-tree"]);
    },
    { env },
  );
  return Number(process.hrtime.bigint() - started) / 1e9;
}

async function main(): Promise<void> {
  const largeMiB = option("large-mib", 1024);
  const small = option("small", 5000);
  const rounds = option("rounds", 3);
  const root = await mkdtemp(path.join(os.tmpdir(), "reclaim-bench-quarantine-"));
  try {
    const large = path.join(root, "large.bin");
    await writeRandomFile(large, largeMiB * 1024 * 1024);
    const ratios: number[] = [];
    for (let round = 0; round < rounds; round += 1) {
      const plainDir = path.join(root, `plain-${round}`);
      const quarantineDir = path.join(root, `quarantine-${round}`);
      await makeRepo(plainDir, large, small);
      await makeRepo(quarantineDir, large, small);
      // Write back the freshly copied files first, so neither capture pays for the other's
      // dirty pages.
      await run("sync", []);
      // Alternate which goes first, and write back each capture's pack before timing the
      // next: otherwise the second one pays for the first one's 1 GiB of dirty pages.
      const timed = async (fn: () => Promise<number>): Promise<number> => {
        const seconds = await fn();
        await run("sync", []);
        return seconds;
      };
      let plain: number;
      let quarantined: number;
      if (round % 2 === 0) {
        plain = await timed(() => plainCapture(plainDir));
        quarantined = await timed(() => quarantineCapture(quarantineDir));
      } else {
        quarantined = await timed(() => quarantineCapture(quarantineDir));
        plain = await timed(() => plainCapture(plainDir));
      }
      ratios.push(quarantined / plain);
      console.log(
        `round ${round + 1}: plain git add -A ${plain.toFixed(2)} s, through the quarantine ${quarantined.toFixed(2)} s, ratio ${(quarantined / plain).toFixed(3)}`,
      );
      await rm(plainDir, { recursive: true, force: true });
      await rm(quarantineDir, { recursive: true, force: true });
    }
    const sorted = [...ratios].sort((a, b) => a - b);
    const median = sorted[Math.floor(sorted.length / 2)]!;
    console.log(
      `capture of ${largeMiB} MiB untracked + ${small} small files: quarantine / plain = ${median.toFixed(3)} (median of ${rounds}; target < 1.1)`,
    );
  } finally {
    await rm(root, { recursive: true, force: true });
  }
}

void main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
