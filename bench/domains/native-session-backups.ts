/**
 * Native session backups at scale: 5,000 sessions (closed issues, finished runs, task
 * sessions, a failover copy each) across 50 companies, with their evidence: a
 * continuity-break archive for every other session and a quarantine entry for every fifth,
 * all due. Prints entries (sessions and evidence) evaluated per second over two full passes
 * of the same entries, each against a baseline measured in the same run:
 *   - a dry-run diagnosis, against the bare filesystem survey of everything the rules read
 *     (rulesSurvey: the listings, the control-plane state and manifest reads, the walks of the
 *     copies and entries), and, for reference, against the walks of the copies and entries
 *     alone (the baseline until 2026-12-05, which left out the reads the rules need beside the
 *     walks: 2-2.5x less filesystem work than a session needs);
 *   - an expiring pass (every copy and entry really removed through the job pipeline, task
 *     sessions deleted), against the walks of the same trees plus the bare removal (fs.rm) of
 *     an identical copy of them (cp -a): less filesystem work than the rule needs, a stricter
 *     baseline.
 * Then the SQL statements of one batch for two batch sizes, dry run and expiring: they must
 * not grow with the batch (no N+1); if they do, the run fails (exit code 1).
 *
 *   npx tsx bench/domains/native-session-backups.ts
 */
import { execFile } from "node:child_process";
import { randomBytes, randomUUID } from "node:crypto";
import { existsSync } from "node:fs";
import { mkdir, readdir, rm, writeFile } from "node:fs/promises";
import path from "node:path";
import { promisify } from "node:util";
import { INSTANCE_SCOPE, treeStats, UNCHANGED_MARGIN_MS } from "@reclaim/core";
import { readFileBounded } from "@reclaim/shared";
import {
  MAX_CONTROL_PLANE_STATE_BYTES,
  MAX_COPY_MANIFEST_BYTES,
} from "../../packages/core/src/domains/native-session-backups/config";
import { writeTree } from "@reclaim/testkit";
import { expectFlatQueries, fullPass, openBench, perSecond, type Bench } from "./harness";

const SESSIONS = Number(process.env.BENCH_SESSIONS ?? 5000);
const COMPANIES = 50;
const DAY = 24 * 3600_000;
const ago = (days: number) => new Date(Date.now() - days * DAY);
const SESSIONS_DIR = "runtime/paperclip-runner/durable-sessions";

interface Layout {
  /** Every failover copy and evidence entry written: what the baseline surveys. */
  trees: string[];
  evidence: number;
}

/**
 * `count` expirable sessions under `root`. `archiveEvery` / `quarantineEvery`: one
 * continuity-break archive (in the session) / one quarantine entry per that many sessions
 * (0: none), ten days old (due under the default seven-day window).
 */
async function sessions(
  bench: Bench,
  root: string,
  count: number,
  evidence: { archiveEvery: number; quarantineEvery: number },
): Promise<Layout> {
  const layout: Layout = { trees: [], evidence: 0 };
  const companies = Array.from({ length: COMPANIES }, () => randomUUID());
  const sessionsRoot = path.join(root, SESSIONS_DIR);
  for (let start = 0; start < count; start += 500) {
    const issues = [];
    const runs = [];
    const tasks = [];
    for (let i = start; i < Math.min(count, start + 500); i++) {
      const companyId = companies[i % COMPANIES]!;
      const scope = randomBytes(32).toString("hex");
      const sessionId = `codex-${randomUUID()}`;
      const issueId = randomUUID();
      issues.push({ id: issueId, companyId, status: "done", completedAt: ago(10), updatedAt: ago(10) });
      runs.push({
        companyId,
        status: "succeeded",
        finishedAt: ago(9),
        sessionIdAfter: sessionId,
        contextSnapshot: { issueId },
      });
      tasks.push({ companyId, taskKey: `issue:${issueId}`, sessionParams: { sessionId } });
      const dir = path.join(sessionsRoot, scope);
      await mkdir(dir, { recursive: true });
      await writeFile(path.join(dir, "control-plane.json"), JSON.stringify({ companyId, sessionId }));
      const copy = path.join(dir, "failover-backups", "current");
      await writeTree(
        copy,
        { "manifest.json": "{}", "runner/runner-state.json": "{}", "codex-home/sessions/t.jsonl": 4096 },
        ago(9),
      );
      layout.trees.push(copy);
      const written = ago(10);
      if (evidence.archiveEvery > 0 && i % evidence.archiveEvery === 0) {
        const archive = path.join(dir, "continuity-breaks", `${written.getTime()}-${randomUUID()}`);
        await writeTree(archive, { "codex-home/thread.jsonl": 4096 }, written);
        layout.trees.push(archive);
        layout.evidence += 1;
      }
      if (evidence.quarantineEvery > 0 && i % evidence.quarantineEvery === 0) {
        const name = `${scope}.authority_lost.${written.getTime()}.4242.${randomUUID()}`;
        const entry = path.join(sessionsRoot, "quarantine", name);
        await writeTree(entry, { "runner-state.json": 4096 }, written);
        layout.trees.push(entry);
        layout.evidence += 1;
      }
    }
    await bench.db.issue.createMany({ data: issues });
    await bench.db.heartbeatRun.createMany({ data: runs });
    await bench.db.agentTaskSession.createMany({ data: tasks });
  }
  return layout;
}

/**
 * The bare survey of everything the rules read (survey.ts, evidence.ts), without the pipeline:
 * no proof of levels, no lock, database or report. The sessions root's listing; per session
 * directory its listing, the control-plane state (bounded read), `failover-backups`' listing,
 * the `current` copy's walk and its manifest (bounded read), the continuity-break archives'
 * listing and walks; the quarantine's listing and its entries' walks. Returns the trees walked.
 */
async function rulesSurvey(sessionsRoot: string): Promise<number> {
  let walked = 0;
  const list = (dir: string) => readdir(dir).catch(() => [] as string[]);
  const walk = async (tree: string) => {
    walked += (await treeStats(tree)).entries > 0 ? 1 : 0;
  };
  for (const name of await list(sessionsRoot)) {
    const dir = path.join(sessionsRoot, name);
    if (name === "quarantine") {
      for (const entry of await list(dir)) await walk(path.join(dir, entry));
      continue;
    }
    const listed = new Set(await list(dir));
    if (listed.has("control-plane.json"))
      await readFileBounded(path.join(dir, "control-plane.json"), MAX_CONTROL_PLANE_STATE_BYTES);
    if (listed.has("failover-backups")) {
      const backups = path.join(dir, "failover-backups");
      if ((await list(backups)).includes("current")) {
        await walk(path.join(backups, "current"));
        await readFileBounded(path.join(backups, "current", "manifest.json"), MAX_COPY_MANIFEST_BYTES);
      }
    }
    if (listed.has("continuity-breaks")) {
      const archives = path.join(dir, "continuity-breaks");
      for (const archive of await list(archives)) await walk(path.join(archives, archive));
    }
  }
  return walked;
}

/** CPU milliseconds (user + system, every thread of this process) since `since`. */
const cpuMs = (since: NodeJS.CpuUsage) => {
  const used = process.cpuUsage(since);
  return (used.user + used.system) / 1000;
};

/**
 * The same comparison by this process's CPU time: steadier than wall time on a shared
 * machine, whose load swings the baselines 2-4x between runs; PostgreSQL's time (the batches'
 * statements, in its own processes) is not in it, so it says how the filesystem work and the
 * JavaScript compare, not the whole batch.
 */
const byCpu = (entries: number, ms: number, baselineEntries: number, baselineMs: number) => {
  const rate = perSecond(entries, ms);
  const baseline = perSecond(baselineEntries, baselineMs);
  return `  by this process's CPU time (PostgreSQL's not in it): ${rate} against ${baseline} entries per CPU-second; ratio ${(rate / baseline).toFixed(2)}\n`;
};

async function main() {
  // The liveness report must stay fresh for the whole run (it is read by every batch).
  const bench = await openBench({ RECLAIM_LIVENESS_MAX_AGE_SECONDS: "86400" });
  try {
    const now = new Date();
    await bench.db.reclaimNativeSessionLiveness.create({
      data: { sessions: [], reportedAt: now, receivedAt: now },
    });
    process.stdout.write(`setting up ${SESSIONS} sessions with their evidence...\n`);
    const layout = await sessions(bench, bench.instanceRoot, SESSIONS, {
      archiveEvery: 2,
      quarantineEvery: 5,
    });

    // Sessions written long before a sweep, as on a host: the sessions root's listing is
    // reused between batches only once its last change is older than the margin
    // (fs/listings.ts).
    await new Promise((resolve) => setTimeout(resolve, UNCHANGED_MARGIN_MS));

    const walksStart = process.hrtime.bigint();
    let cpu = process.cpuUsage();
    for (const tree of layout.trees) await treeStats(tree);
    const walksMs = Number(process.hrtime.bigint() - walksStart) / 1e6;
    const walksCpu = cpuMs(cpu);
    const rulesStart = process.hrtime.bigint();
    cpu = process.cpuUsage();
    const rulesWalked = await rulesSurvey(path.join(bench.instanceRoot, SESSIONS_DIR));
    const rulesMs = Number(process.hrtime.bigint() - rulesStart) / 1e6;
    const rulesCpu = cpuMs(cpu);
    if (rulesWalked !== layout.trees.length)
      throw new Error(`the rules' survey walked ${rulesWalked} of ${layout.trees.length} trees`);

    cpu = process.cpuUsage();
    const pass = await fullPass(bench, "native-session-backups", INSTANCE_SCOPE, true);
    const passCpu = cpuMs(cpu);
    const rate = perSecond(pass.checked, pass.ms);
    const baseline = perSecond(rulesWalked, rulesMs);
    const walks = perSecond(layout.trees.length, walksMs);
    process.stdout.write(
      `diagnosis (dry run): ${pass.checked} entries (${SESSIONS} sessions, ${layout.evidence} evidence) in ${pass.batches} batches, ${pass.ms.toFixed(0)} ms: ${rate} entries/s\n` +
        `baseline (the bare survey of what the rules read: listings, control-plane state and manifest reads, walks): ${baseline} entries/s; ratio ${(rate / baseline).toFixed(2)}\n` +
        byCpu(pass.checked, passCpu, rulesWalked, rulesCpu) +
        `reference (the walks of the copies and entries alone): ${walks} entries/s; ratio ${(rate / walks).toFixed(2)}\n` +
        byCpu(pass.checked, passCpu, layout.trees.length, walksCpu),
    );

    // BENCH_ONLY=dry: the diagnosis alone (profiling).
    if (process.env.BENCH_ONLY === "dry") return;

    // The same trees once more, for the bare removal: survey and delete each one.
    const sessionsRoot = path.join(bench.instanceRoot, SESSIONS_DIR);
    const twin = path.join(bench.instanceRoot, "twin");
    await promisify(execFile)("cp", ["-a", sessionsRoot, twin]);
    const twinTrees = layout.trees.map((t) => path.join(twin, path.relative(sessionsRoot, t)));
    const removalStart = process.hrtime.bigint();
    cpu = process.cpuUsage();
    for (const tree of twinTrees) {
      await treeStats(tree);
      await rm(tree, { recursive: true });
    }
    const removalMs = Number(process.hrtime.bigint() - removalStart) / 1e6;
    const removalCpu = cpuMs(cpu);

    cpu = process.cpuUsage();
    const expiring = await fullPass(bench, "native-session-backups", INSTANCE_SCOPE, false);
    const expiringCpu = cpuMs(cpu);
    const left = layout.trees.filter((t) => existsSync(t)).length;
    if (left > 0) throw new Error(`the expiring pass left ${left} of ${layout.trees.length} trees`);
    const expiringRate = perSecond(expiring.checked, expiring.ms);
    const removalBaseline = perSecond(twinTrees.length, removalMs);
    process.stdout.write(
      `expiring: ${expiring.checked} entries (all ${layout.trees.length} trees removed) in ${expiring.batches} batches, ${expiring.ms.toFixed(0)} ms: ${expiringRate} entries/s\n` +
        `baseline (walks + fs.rm of the same trees): ${removalBaseline} entries/s; ratio ${(expiringRate / removalBaseline).toFixed(2)}\n` +
        byCpu(expiring.checked, expiringCpu, twinTrees.length, removalCpu),
    );

    // Queries per batch, each session with a continuity-break archive due:
    //   dry run:   25 and 100 sessions (50 and 200 entries, the entry limit);
    //   expiring:  10 and 25 sessions (20 and 50 removals, the removal limit).
    const sizes = { dryRun: [25, 100], expiring: [10, 25] };
    for (const dryRun of [true, false]) {
      const batches = [];
      for (const size of dryRun ? sizes.dryRun : sizes.expiring) {
        const root = path.join(bench.instanceRoot, `batch-${dryRun ? "dry" : "real"}-${size}`);
        await sessions(bench, root, size, { archiveEvery: 1, quarantineEvery: 0 });
        const { report, queries } = await bench.run("native-session-backups", INSTANCE_SCOPE, {
          instanceRoot: root,
          dryRun,
          counting: true,
        });
        if (report.error) throw new Error(report.error);
        batches.push({ entries: report.checked, queries });
        process.stdout.write(
          `${dryRun ? "dry-run" : "expiring"} batch of ${report.checked} entries (${report.candidates} candidates, ${report.removed} removed): ${queries} SQL statements (job pipeline included)\n`,
        );
      }
      expectFlatQueries(dryRun ? "dry run" : "expiring", batches);
    }
  } finally {
    await bench.close();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
