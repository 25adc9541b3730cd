/**
 * Task directories saved and removed per second: 100 directories of 2,000 files each (1 KiB,
 * in 20 folders), through the real scheduler and worker (plan, snapshot streamed into seal,
 * upload to local_disk, read back and hash, decode once, archive, re-read, rename, delete),
 * against the raw work in the same run: read every file, AES-256-GCM into one output file per
 * directory, delete the directory (`tar -c | openssl enc -aes-256-gcm` and `rm -r`,
 * equivalent in process).
 *
 *   npx tsx bench/task-directories/save-remove.ts      (BENCH_DIRS, BENCH_FILES to scale)
 */
import { createCipheriv, randomBytes, randomUUID } from "node:crypto";
import { createWriteStream } from "node:fs";
import { mkdir, readdir, readFile, rm, writeFile } from "node:fs/promises";
import path from "node:path";
import { once } from "node:events";
import { loadavg } from "node:os";
import { applyMigrations } from "@reclaim/core/src/db/migrate";
import { createEmptyDatabase, startStack, tempDir } from "@reclaim/testkit";
import { TASK_ENV } from "@reclaim/testkit/src/fixtures/task-directories";

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

/** The raw work: read + AES-256-GCM + write of every file, then delete. */
async function raw(dirs: string[], out: string): Promise<number> {
  const started = performance.now();
  for (const dir of dirs) {
    const cipher = createCipheriv("aes-256-gcm", randomBytes(32), randomBytes(12));
    const sink = createWriteStream(path.join(out, `${path.basename(dir)}.enc`));
    cipher.pipe(sink);
    for (const folder of (await readdir(dir)).sort()) {
      for (const name of (await readdir(path.join(dir, folder))).sort()) {
        if (!cipher.write(await readFile(path.join(dir, folder, name)))) await once(cipher, "drain");
      }
    }
    cipher.end();
    await once(sink, "finish");
    await rm(dir, { recursive: true });
  }
  return (performance.now() - started) / 1000;
}

/** The 1-minute load average now (the machine is shared: figures are read against it). */
const load = () => Number(loadavg()[0]!.toFixed(2));

async function main() {
  const loads: number[] = [load()];
  const database = await createEmptyDatabase();
  await applyMigrations(database.url);
  const stack = await startStack({ database, env: { ...TASK_ENV, RECLAIM_LOG_LEVEL: "error" } });
  const scratch = await tempDir("reclaim-bench-raw-");
  try {
    // Baseline on its own copies.
    const rawDirs: string[] = [];
    for (let i = 0; i < DIRS; i++) {
      const dir = path.join(scratch.path, "dirs", randomUUID());
      await fill(dir);
      rawDirs.push(dir);
    }
    await mkdir(path.join(scratch.path, "out"));
    const rawSeconds = await raw(rawDirs, path.join(scratch.path, "out"));
    loads.push(load());

    // The pipeline.
    const tasks: { company: string; issue: string; workspace: string; dir: string }[] = [];
    const companies = Array.from({ length: COMPANIES }, () => randomUUID());
    const closed = new Date(Date.now() - 10 * 86_400_000);
    for (let i = 0; i < DIRS; i++) {
      const company = companies[i % COMPANIES]!;
      const issue = randomUUID();
      const workspace = randomUUID();
      const dir = path.join(stack.instanceRoot, "isolated-workspaces", company, issue);
      await stack.db.issue.create({
        data: { id: issue, companyId: company, status: "done", completedAt: closed },
      });
      await stack.db.executionWorkspace.create({
        data: {
          id: workspace,
          companyId: company,
          sourceIssueId: issue,
          mode: "isolated_workspace",
          strategyType: "project_primary",
          providerType: "local_fs",
          cwd: dir,
        },
      });
      await stack.db.issue.update({ where: { id: issue }, data: { executionWorkspaceId: workspace } });
      await fill(dir);
      tasks.push({ company, issue, workspace, dir });
    }
    const started = performance.now();
    await stack.api("POST", "/v1/events", {
      events: tasks.map((t) => ({
        type: "issue.changed",
        companyId: t.company,
        issueId: t.issue,
        status: "done",
      })),
    });
    for (;;) {
      const done = await stack.db.$queryRawUnsafe<{ n: bigint }[]>(
        `SELECT count(*) AS n FROM execution_workspaces WHERE metadata -> 'isolatedTaskDirectoryRetention' ->> 'state' = 'removed'`,
      );
      if (Number(done[0]!.n) >= DIRS) break;
      await new Promise((r) => setTimeout(r, 200));
    }
    const pipelineSeconds = (performance.now() - started) / 1000;
    loads.push(load());
    const rawRate = DIRS / rawSeconds;
    const rate = DIRS / pipelineSeconds;
    console.log(
      JSON.stringify({
        benchmark: "task-directories/save-remove",
        date: new Date().toISOString(),
        directories: DIRS,
        filesPerDirectory: FILES,
        savedAndRemovedPerSecond: Number(rate.toFixed(2)),
        rawPerSecond: Number(rawRate.toFixed(2)),
        ratio: Number((rate / rawRate).toFixed(3)),
        pipelineSeconds: Number(pipelineSeconds.toFixed(1)),
        rawSeconds: Number(rawSeconds.toFixed(1)),
        // 1-minute load average at the start, after the raw run, after the pipeline.
        loadAverage: loads,
      }),
    );
  } finally {
    await scratch.remove();
    await stack.stop();
  }
}

void main().then(
  () => process.exit(0),
  (error) => {
    console.error(error);
    process.exit(1);
  },
);
