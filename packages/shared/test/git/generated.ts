/**
 * The generated round-trip suite (Proof): repositories built from random sequences of git
 * operations, each with a fixed seed (a small PRNG, so a failure names its seed and replays
 * exactly), round-tripped capture -> seal -> store -> open -> apply into a fresh clone and
 * compared: `git status --porcelain=v2`, `git ls-files -s --debug` without stat fields, every
 * file's bytes and mode, the HEAD reflog's commits and ORIG_HEAD.
 *
 * Kept fast for CI: one remote and one pristine clone per test file, copied (not cloned) for
 * each repository; the comparison's git calls run as one shell script; `it.concurrent`
 * overlaps repositories; the seeds are split over several test files so Jest's workers share them.
 */
import { execFile } from "node:child_process";
import { mkdir, rm } from "node:fs/promises";
import path from "node:path";
import { promisify } from "node:util";
import { agentEnv, git, makeRemote, tempDir, type Remote } from "./fixture";
import { applyStored, captureAndStore, describeFiles, localStorage, makeKey } from "./round-trip";

const execFileAsync = promisify(execFile);

/** mulberry32: a tiny deterministic PRNG (same seed, same sequence on every machine). */
export function prng(seed: number): {
  next: () => number;
  int: (n: number) => number;
  pick: <T>(list: readonly T[]) => T;
} {
  let a = seed >>> 0;
  const next = (): number => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const int = (n: number): number => Math.floor(next() * n);
  return { next, int, pick: (list) => list[int(list.length)]! };
}

const NAMES = [
  "a.txt",
  "b.txt",
  "dir/c.txt",
  "dir/sub/d.bin",
  "with space.txt",
  "naïve ü.md",
  "run.sh",
  "e.txt",
];
const IGNORED = ["out/build.o", "debug.log", "node_modules/pkg/index.js", "dist/bundle.js", "cache/x.log"];
const BRANCHES = ["main", "topic", "fix"];

function content(r: ReturnType<typeof prng>): Buffer {
  const size = r.int(3) === 0 ? r.int(2048) : r.int(40);
  const bytes = Buffer.alloc(size);
  const binary = r.int(4) === 0;
  for (let i = 0; i < size; i++) bytes[i] = binary ? r.int(256) : 97 + r.int(26);
  return bytes;
}

const q = (text: string): string => `'${text.replace(/'/g, "'\\''")}'`;

/** Writes `data` at `rel` (replacing a file or link there), as a shell command. */
function writeAt(rel: string, data: Buffer): string {
  const dir = path.posix.dirname(rel);
  return `mkdir -p ${q(dir)} && rm -f ${q(rel)} && printf %s ${q(data.toString("base64"))} | base64 -d > ${q(rel)}`;
}

/**
 * One random operation, as a shell command: a file change an agent makes, or a git command
 * it runs. The whole sequence runs as one script (one process start instead of one per step);
 * a step git refuses in that state (nothing to commit, no parent) just does not happen.
 */
function randomOp(r: ReturnType<typeof prng>): string {
  const name = r.pick(NAMES);
  const ops: (() => string)[] = [
    () => writeAt(name, content(r)),
    () => writeAt(name, content(r)),
    () => `rm -f ${q(name)}`,
    () => `chmod ${r.pick(["644", "755", "600"])} ${q(name)}`,
    () => `ln -s ${q(r.pick(["a.txt", "../outside", "dir"]))} link-${r.int(3)}`,
    () => writeAt(r.pick(IGNORED), content(r)),
    () => writeAt(r.pick([".env", "dir/.env.local"]), Buffer.from("SECRET=1\n")),
    () => `git add ${q(name)}`,
    () => "git add -A",
    () => `git add -N ${q(name)}`,
    () => `git rm -q --cached ${q(name)}`,
    () => `git commit -q -m 'commit ${r.int(1000)}'`,
    () => `git commit -qa -m 'commit -a ${r.int(1000)}'`,
    () => `git commit -q --amend -m 'amended ${r.int(1000)}'`,
    () => "git reset -q --hard HEAD~1",
    () => "git reset -q --soft HEAD~1",
    () => "git reset -q HEAD~1",
    () => `git checkout -q -B ${r.pick(BRANCHES)}`,
    () => `git checkout -q ${r.pick(BRANCHES)}`,
    () => "git checkout -q --detach",
    () => `git tag -f t${r.int(3)}`,
    () => `git update-index ${r.pick(["--chmod=+x", "--chmod=-x"])} ${q(name)}`,
  ];
  return r.pick(ops)();
}

/** Everything the comparison reads, from one shell process (the file walk is in-process). */
export async function facts(dir: string): Promise<Record<string, unknown>> {
  const script = [
    "git status --porcelain=v2 --untracked-files=all --ignored=matching --branch",
    "git ls-files -s --debug",
    "git rev-parse HEAD",
    "git symbolic-ref -q HEAD",
    "git log -g --format='%H %gs' HEAD",
    "git rev-parse -q --verify ORIG_HEAD",
  ]
    .map((command) => `${command}; printf '\\0'`)
    .join("\n");
  const { stdout } = await execFileAsync("sh", ["-c", script], {
    cwd: dir,
    env: agentEnv,
    maxBuffer: 64 * 1024 * 1024,
  });
  const [status, index, head, branch, reflog, origHead] = stdout.split("\0");
  const leftOut = (line: string): boolean =>
    line.startsWith("# branch.upstream") ||
    line.startsWith("# branch.ab") ||
    /^[?!] (.*\/)?\.env/.test(line) ||
    /^! (node_modules|dist)\//.test(line);
  return {
    status: status!.split("\n").filter((l) => !leftOut(l)),
    index: index!.split("\n").filter((l) => !/^\s+(ctime|mtime|dev|uid):/.test(l)),
    files: await describeFiles(dir, { leaveOut: true }),
    head,
    branch,
    reflog,
    origHead,
  };
}

export interface GeneratedContext {
  remote: Remote;
  template: string;
  root: string;
}

export async function generatedContext(): Promise<GeneratedContext> {
  const root = await tempDir("reclaim-gen-");
  const remote = await makeRemote(root, {
    ".gitignore": "*.log\nout/\nnode_modules/\ndist/\ncache/\n",
    "a.txt": "a\n",
    "b.txt": "b\n",
    "dir/c.txt": "c\n",
    "run.sh": "#!/bin/sh\n",
  });
  const template = path.join(root, "template");
  await git(root, ["clone", "-q", "--template=", remote.bare, template]);
  await git(template, ["branch", "-q", "topic"]);
  return { remote, template, root };
}

/** Builds the repository of `seed`, round-trips it, and returns both sides' facts. */
export async function roundTripSeed(ctx: GeneratedContext, seed: number, key = makeKey()) {
  const r = prng(seed);
  const dir = path.join(ctx.root, `seed-${seed}`);
  const work = path.join(dir, "work");
  const fresh = path.join(dir, "fresh");
  const steps = 5 + r.int(10);
  const script = [`cp -a ${q(ctx.template)} work`, `cp -a ${q(ctx.template)} fresh`, "cd work"];
  for (let i = 0; i < steps; i++) script.push(`{ ${randomOp(r)}; } >/dev/null 2>&1`);
  await mkdir(dir);
  script.push("true");
  await execFileAsync("sh", ["-c", script.join("\n")], { cwd: dir, env: agentEnv });
  const storage = localStorage(path.join(dir, "storage"));
  const stored = await captureAndStore(work, storage, key);
  const result = await applyStored(fresh, storage, key, stored);
  const out = { result, original: await facts(work), restored: await facts(fresh) };
  await rm(dir, { recursive: true, force: true });
  return out;
}

/** Registers the seeds `from` (inclusive) to `to` (exclusive) as concurrent tests. */
export function describeGenerated(from: number, to: number): void {
  let ctx: Promise<GeneratedContext>;
  beforeAll(() => {
    ctx = generatedContext();
  });
  const key = makeKey();
  for (let seed = from; seed < to; seed++) {
    it.concurrent(`seed ${seed}: the restored clone matches the original`, async () => {
      const { result, original, restored } = await roundTripSeed(await ctx, seed, key);
      // A sequence whose steps cancel out leaves a clone a fresh one already matches.
      expect(["applied", "already_applied"]).toContain(result.status);
      expect(restored).toEqual(original);
    });
  }
}
