/**
 * Native session backups at scale: 5,000 sessions (closed issues, finished runs, task
 * sessions, a failover copy each) across 50 companies. Prints entries evaluated per second
 * over a full diagnosis, against a same-run baseline (the bare filesystem survey of the
 * same copies), and the SQL statements of one expiring batch for two batch sizes: they
 * must not grow with the batch (no N+1).
 *
 *   npx tsx bench/domains/native-session-backups.ts
 */
import { randomBytes, randomUUID } from "node:crypto";
import { mkdir, writeFile } from "node:fs/promises";
import path from "node:path";
import { INSTANCE_SCOPE, treeStats } from "@reclaim/core";
import { writeTree } from "@reclaim/testkit";
import { fullPass, openBench, perSecond, type Bench } from "./harness";

const SESSIONS = Number(process.env.BENCH_SESSIONS ?? 5000);
const COMPANIES = 50;
const DAY = 24 * 3600_000;
const ago = (days: number) => new Date(Date.now() - days * DAY);

async function sessions(bench: Bench, root: string, count: number): Promise<string[]> {
  const copies: string[] = [];
  const companies = Array.from({ length: COMPANIES }, () => randomUUID());
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
      const dir = path.join(root, "runtime/paperclip-runner/durable-sessions", scope);
      await mkdir(dir, { recursive: true });
      await writeFile(path.join(dir, "control-plane.json"), JSON.stringify({ companyId, sessionId }));
      const copy = path.join(dir, "failover-backups", "current");
      await writeTree(
        copy,
        { "manifest.json": "{}", "runner/runner-state.json": "{}", "codex-home/sessions/t.jsonl": 4096 },
        ago(9),
      );
      copies.push(copy);
    }
    await bench.db.issue.createMany({ data: issues });
    await bench.db.heartbeatRun.createMany({ data: runs });
    await bench.db.agentTaskSession.createMany({ data: tasks });
  }
  return copies;
}

async function main() {
  const bench = await openBench();
  try {
    await bench.db.reclaimNativeSessionLiveness.create({
      data: { sessions: [], reportedAt: new Date(Date.now() + DAY), receivedAt: new Date() },
    });
    process.stdout.write(`setting up ${SESSIONS} sessions...\n`);
    const copies = await sessions(bench, bench.instanceRoot, SESSIONS);

    const baselineStart = process.hrtime.bigint();
    for (const copy of copies) await treeStats(copy);
    const baselineMs = Number(process.hrtime.bigint() - baselineStart) / 1e6;

    const pass = await fullPass(bench, "native-session-backups", INSTANCE_SCOPE, true);
    const rate = perSecond(pass.checked, pass.ms);
    const baseline = perSecond(copies.length, baselineMs);
    process.stdout.write(
      `diagnosis (dry run): ${pass.checked} sessions in ${pass.batches} batches, ${pass.ms.toFixed(0)} ms: ${rate} entries/s\n` +
        `baseline (filesystem survey only): ${baseline} entries/s; ratio ${(rate / baseline).toFixed(2)}\n`,
    );

    // Queries per expiring batch: 20 sessions and 50 (the removal cap), all of which expire.
    for (const size of [20, 50]) {
      const root = path.join(bench.instanceRoot, `batch-${size}`);
      await sessions(bench, root, size);
      const { report, queries } = await bench.run("native-session-backups", INSTANCE_SCOPE, {
        instanceRoot: root,
      });
      process.stdout.write(
        `batch of ${report.checked} sessions (${report.removed} expired): ${queries} SQL statements (job pipeline included)\n`,
      );
    }
  } finally {
    await bench.close();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
