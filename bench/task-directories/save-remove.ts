/**
 * Task directories through the real scheduler and worker, 100 directories of 2,000 files each
 * (1 KiB, in 20 folders), in two passes, each against the least filesystem work its rules need,
 * measured in the same run:
 *  - dry run (a diagnosis: judge, plan the tree against the limits, report the candidate and
 *    its bytes), against the bare survey of the same directories (the lstat walk the plan needs);
 *  - saving and removing (plan, snapshot streamed into seal, upload to local_disk, read back
 *    and hash, decode once, archive, re-read, rename, delete), against the bare work the rule
 *    needs before a directory may go (spec: a sealed, read-back and decoded restore point):
 *    read every file, AES-256-GCM into one output file, fsync it, read it back and decrypt it
 *    (the tag checked), walk the directory again, delete it. Also printed: the raw work without
 *    the fsync, read-back, decryption and second walk (the baseline until 2026-12-05).
 *
 *   npx tsx bench/task-directories/save-remove.ts      (BENCH_DIRS, BENCH_FILES to scale;
 *     BENCH_ONLY=dry or save for one pass alone; BENCH_CPU_PROFILE=<dir>: a CPU profile of the dry
 *     run's pipeline, support.ts)
 */
import { createCipheriv, createDecipheriv, randomBytes, randomUUID } from "node:crypto";
import { createReadStream, createWriteStream } from "node:fs";
import { mkdir, open, readdir, readFile, rm, writeFile } from "node:fs/promises";
import path from "node:path";
import { once } from "node:events";
import { loadavg } from "node:os";
import { treeStats } from "@reclaim/core";
import { applyMigrations } from "@reclaim/core/src/db/migrate";
import { createEmptyDatabase, startStack, tempDir, type Stack } from "@reclaim/testkit";
import { task, TASK_ENV, type Task } from "@reclaim/testkit/src/fixtures/task-directories";
import { profiled } from "../support";

const DIRS = Number(process.env.BENCH_DIRS ?? 100);
const FILES = Number(process.env.BENCH_FILES ?? 2000);
const COMPANIES = 10;
const FOLDERS = 20;
const CONTENT = randomBytes(1024);

async function fill(dir: string): Promise<void> {
  for (let f = 0; f < FOLDERS; f++) {
    const folder = path.join(dir, `folder-${f}`);
    await mkdir(folder, { recursive: true });
    const names = Array.from({ length: Math.ceil(FILES / FOLDERS) }, (_, i) => `file-${i}.txt`);
    await Promise.all(names.map((n) => writeFile(path.join(folder, n), CONTENT)));
  }
}

const seconds = (since: number) => (performance.now() - since) / 1000;

/**
 * The bare work of saving and removing, phase by phase (seconds): `seal` read + AES-256-GCM +
 * write of every file, `proof` fsync + read back + decrypt + a second walk, `delete` rm -r.
 */
async function raw(dirs: string[], out: string): Promise<{ seal: number; proof: number; delete: number }> {
  const spent = { seal: 0, proof: 0, delete: 0 };
  for (const dir of dirs) {
    let started = performance.now();
    const key = randomBytes(32);
    const iv = randomBytes(12);
    const cipher = createCipheriv("aes-256-gcm", key, iv);
    const file = path.join(out, `${path.basename(dir)}.enc`);
    const sink = createWriteStream(file);
    cipher.pipe(sink);
    for (const folder of (await readdir(dir)).sort()) {
      for (const name of (await readdir(path.join(dir, folder))).sort()) {
        if (!cipher.write(await readFile(path.join(dir, folder, name)))) await once(cipher, "drain");
      }
    }
    cipher.end();
    await once(sink, "finish");
    spent.seal += seconds(started);

    started = performance.now();
    const handle = await open(file, "r");
    await handle.sync();
    await handle.close();
    const decipher = createDecipheriv("aes-256-gcm", key, iv);
    decipher.setAuthTag(cipher.getAuthTag());
    for await (const chunk of createReadStream(file)) decipher.update(chunk as Buffer);
    decipher.final();
    await treeStats(dir);
    spent.proof += seconds(started);

    started = performance.now();
    await rm(dir, { recursive: true });
    spent.delete += seconds(started);
  }
  return spent;
}

/** The 1-minute load average now (the machine is shared: figures are read against it). */
const load = () => Number(loadavg()[0]!.toFixed(2));

/**
 * DIRS closed tasks of COMPANIES companies in `stack` (the domain tests' fixture: rows, and a
 * directory with a few files and links and a node_modules beside a package.json), each
 * directory filled with FILES files.
 */
async function tasks(stack: Stack): Promise<Task[]> {
  const made: Task[] = [];
  const companies = Array.from({ length: COMPANIES }, () => randomUUID());
  for (let i = 0; i < DIRS; i++) {
    const t = await task(stack, { companyId: companies[i % COMPANIES]! });
    await fill(t.dir);
    made.push(t);
  }
  return made;
}

/** The issues' closing events, as the Paperclip server sends them. */
const closeEvents = (stack: Stack, made: Task[]) =>
  stack.api("POST", "/v1/events", {
    events: made.map((t) => ({
      type: "issue.changed",
      companyId: t.company,
      issueId: t.issue,
      status: "done",
    })),
  });

async function until(done: () => Promise<boolean>): Promise<void> {
  while (!(await done())) await new Promise((r) => setTimeout(r, 100));
}

/** A stack over its own migrated database, stopped (and its database dropped) after `fn`. */
async function withStack<T>(env: Record<string, string>, fn: (stack: Stack) => Promise<T>): Promise<T> {
  const database = await createEmptyDatabase();
  await applyMigrations(database.url);
  const stack = await startStack({ database, env: { ...env, RECLAIM_LOG_LEVEL: "error" } });
  try {
    return await fn(stack);
  } finally {
    await stack.stop();
  }
}

/** Dry run: every directory diagnosed (a candidate with its bytes) vs the bare survey. */
function dryRun() {
  return withStack({ ...TASK_ENV, PAPERCLIP_TASK_DIRECTORY_RETENTION_DRY_RUN: "true" }, async (stack) => {
    const made = await tasks(stack);
    let started = performance.now();
    for (const t of made) await treeStats(t.dir);
    const surveySeconds = seconds(started);
    started = performance.now();
    await profiled("task-directories-dry", async () => {
      await closeEvents(stack, made);
      await until(async () => {
        const sum = await stack.db.reclaimBatchReport.aggregate({
          where: { domain: "task-directories", dryRun: true },
          _sum: { candidates: true },
        });
        return (sum._sum.candidates ?? 0) >= DIRS;
      });
    });
    return { pipelineSeconds: seconds(started), surveySeconds };
  });
}

/** Saving and removing every directory vs the bare work the rule needs, on copies of its own. */
function saveAndRemove() {
  return withStack(TASK_ENV, async (stack) => {
    const scratch = await tempDir("reclaim-bench-raw-");
    try {
      const rawDirs: string[] = [];
      for (let i = 0; i < DIRS; i++) {
        const dir = path.join(scratch.path, "dirs", randomUUID());
        await fill(dir);
        rawDirs.push(dir);
      }
      await mkdir(path.join(scratch.path, "out"));
      const bare = await raw(rawDirs, path.join(scratch.path, "out"));
      const made = await tasks(stack);
      const started = performance.now();
      await closeEvents(stack, made);
      await until(async () => {
        const done = await stack.db.$queryRawUnsafe<{ n: bigint }[]>(
          `SELECT count(*) AS n FROM execution_workspaces WHERE metadata -> 'isolatedTaskDirectoryRetention' ->> 'state' = 'removed'`,
        );
        return Number(done[0]!.n) >= DIRS;
      });
      return { pipelineSeconds: seconds(started), bare };
    } finally {
      await scratch.remove();
    }
  });
}

async function main() {
  const loads: number[] = [load()];
  // BENCH_ONLY=save: the saving and removing pass alone (comparing two versions of the code).
  if (process.env.BENCH_ONLY === "save") {
    const { pipelineSeconds, bare } = await saveAndRemove();
    const ruleSeconds = bare.seal + bare.proof + bare.delete;
    loads.push(load());
    console.log(
      JSON.stringify({ pipelineSeconds, ruleSeconds, ratio: ruleSeconds / pipelineSeconds, loads }),
    );
    return;
  }
  const dry = await dryRun();
  loads.push(load());
  // BENCH_ONLY=dry: the dry run alone (profiling).
  if (process.env.BENCH_ONLY === "dry") {
    console.log(JSON.stringify({ dryRun: dry, loadAverage: loads }));
    return;
  }
  const removing = await saveAndRemove();
  loads.push(load());
  const rate = (s: number) => Number((DIRS / s).toFixed(2));
  const ruleSeconds = removing.bare.seal + removing.bare.proof + removing.bare.delete;
  const rawSeconds = removing.bare.seal + removing.bare.delete;
  console.log(
    JSON.stringify(
      {
        benchmark: "task-directories/save-remove",
        date: new Date().toISOString(),
        directories: DIRS,
        filesPerDirectory: FILES,
        dryRun: {
          diagnosedPerSecond: rate(dry.pipelineSeconds),
          bareSurveyPerSecond: rate(dry.surveySeconds),
          ratio: Number((dry.surveySeconds / dry.pipelineSeconds).toFixed(3)),
        },
        saveAndRemove: {
          savedAndRemovedPerSecond: rate(removing.pipelineSeconds),
          bareRulePerSecond: rate(ruleSeconds),
          ratio: Number((ruleSeconds / removing.pipelineSeconds).toFixed(3)),
          rawPerSecond: rate(rawSeconds),
          ratioToRaw: Number((rawSeconds / removing.pipelineSeconds).toFixed(3)),
          bareSeconds: {
            seal: Number(removing.bare.seal.toFixed(1)),
            proof: Number(removing.bare.proof.toFixed(1)),
            delete: Number(removing.bare.delete.toFixed(1)),
          },
          pipelineSeconds: Number(removing.pipelineSeconds.toFixed(1)),
        },
        // 1-minute load average at the start, after the dry run, after saving and removing.
        loadAverage: loads,
      },
      null,
      1,
    ),
  );
}

void main().then(
  () => process.exit(0),
  (error) => {
    console.error(error);
    process.exit(1);
  },
);
