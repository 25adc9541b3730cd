/**
 * Native workspace sync folders evaluated per second: 10,000 folders of 20 companies, judged
 * through the real pipeline (start-up discovery, company jobs, continuations of full
 * batches) in dry run, against the bare filesystem survey of the same folders (an lstat
 * walk of each), in the same run.
 *   npx tsx bench/platform/sync-folders.ts        (BENCH_FOLDERS=10000, BENCH_COMPANIES=20)
 */
import { randomUUID } from "node:crypto";
import { mkdir, mkdtemp, rm, utimes, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import pg from "pg";
import { createDb, silentLogger, treeStats } from "../../packages/core/src";
import { createScheduler } from "../../apps/scheduler/src/service";
import { createWorkerService } from "../../apps/worker/src/service";
import { benchEnv, REDIS_URL, report, time } from "../support";

const FOLDERS = Number(process.env.BENCH_FOLDERS ?? 10_000);
const COMPANIES = Number(process.env.BENCH_COMPANIES ?? 20);

async function main(): Promise<void> {
  const env = await benchEnv();
  const root = await mkdtemp(path.join(tmpdir(), "reclaim-bench-instance-"));
  const syncRoot = path.join(root, "native-workspace-sync");
  try {
    const companies = Array.from({ length: COMPANIES }, () => randomUUID());
    const old = new Date(Date.now() - 10 * 86_400_000);
    const client = new pg.Client({ connectionString: env.databaseUrl });
    await client.connect();
    const rows: string[] = [];
    for (let i = 0; i < FOLDERS; i++) {
      const id = randomUUID();
      const dir = path.join(syncRoot, id);
      await mkdir(path.join(dir, "seeds"), { recursive: true });
      await writeFile(path.join(dir, "descriptor.json"), "{}");
      await writeFile(path.join(dir, "seeds", "workspace.tar"), "x");
      for (const p of ["descriptor.json", "seeds/workspace.tar", "seeds", "."])
        await utimes(path.join(dir, p), old, old);
      rows.push(
        `('${id}', '${companies[i % COMPANIES]}', '${i % 3 === 0 ? "running" : "succeeded"}', now() - interval '9 days')`,
      );
    }
    for (let i = 0; i < rows.length; i += 1000) {
      await client.query(
        `INSERT INTO heartbeat_runs (id, company_id, status, finished_at) VALUES ${rows.slice(i, i + 1000).join(",")}`,
      );
    }
    await client.end();

    const names = (await import("node:fs/promises")).readdir;
    const baseline = await time(async () => {
      for (const name of await names(syncRoot)) await treeStats(path.join(syncRoot, name));
    });

    const serviceEnv = {
      DATABASE_URL: env.databaseUrl,
      REDIS_URL,
      RECLAIM_QUEUE_PREFIX: env.prefix,
      RECLAIM_API_TOKEN: "bench-token-0123456789",
      PAPERCLIP_INSTANCE_ROOT: root,
      PAPERCLIP_NATIVE_WORKSPACE_SYNC_RETENTION_DRY_RUN: "true",
      // Only this domain: the others would share the worker's time.
      PAPERCLIP_SKILL_VERSION_RETENTION_ENABLED: "false",
      PAPERCLIP_NATIVE_HARNESS_BACKUP_EXPIRATION_ENABLED: "false",
    };
    const db = createDb(env.databaseUrl);
    const worker = createWorkerService({ env: serviceEnv, log: silentLogger });
    await worker.start();
    let batches = 0;
    const pipeline = await time(async () => {
      const scheduler = await createScheduler({ env: serviceEnv, log: silentLogger });
      await scheduler.started; // start-up discovery is requested here
      for (;;) {
        const sum = await db.reclaimBatchReport.aggregate({
          where: { domain: "native-workspace-sync" },
          _sum: { checked: true },
          _count: true,
        });
        batches = sum._count;
        if ((sum._sum.checked ?? 0) >= FOLDERS) break;
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      await scheduler.stop();
    });
    await worker.stop();
    await db.$disconnect();
    report("native workspace sync folders: pipeline vs bare survey", {
      folders: FOLDERS,
      companies: COMPANIES,
      batches,
      "bare survey folders/s": (FOLDERS / (baseline.ms / 1000)).toFixed(0),
      "evaluated folders/s (pipeline)": (FOLDERS / (pipeline.ms / 1000)).toFixed(0),
      "pipeline / survey ratio": (baseline.ms / pipeline.ms).toFixed(3),
    });
  } finally {
    await rm(root, { recursive: true, force: true });
    await env.cleanup();
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
