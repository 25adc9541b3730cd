/**
 * Benchmark: the first pass of a tree snapshot (`planTree`: every entry lstat'ed through the
 * DirChain's directory descriptors, never through a link, with its identity, times and the
 * state digest) against the bare walk of the same tree (`treeStats`: lstat and readdir by path),
 * in the same run. It is what a task directory's dry run does per directory, and what the
 * task-directories bench's dry run is measured against.
 *
 *   npx tsx bench/shared/tree-plan.ts [--files 2000] [--folders 20] [--rounds 5]
 *
 * Rounds alternate the two (plan first in odd rounds), 20 walks each after 5 not measured; the
 * figures are medians of the rounds: wall ms per tree and the process's user and system CPU.
 * On Linux each lookup through `/proc/self/fd/<fd>/<name>` (Node has no openat) costs the
 * kernel about twice a lookup by path: the plan's floor is above the bare walk's.
 */
import { randomBytes } from "node:crypto";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { parseArgs } from "node:util";
import { treeStats } from "@reclaim/core";
import { planTree } from "@reclaim/shared";
import { median } from "../support";

const { values } = parseArgs({
  options: {
    files: { type: "string", default: "2000" },
    folders: { type: "string", default: "20" },
    rounds: { type: "string", default: "5" },
  },
});
const FILES = Number(values.files);
const FOLDERS = Number(values.folders);
const ROUNDS = Number(values.rounds);
const WALKS = 20;
const limits = { maxFiles: 1_000_000, maxFileBytes: 2 ** 40, maxTotalBytes: 2 ** 50 };

interface Figures {
  ms: number;
  userMs: number;
  systemMs: number;
}

async function measure(walk: () => Promise<unknown>): Promise<Figures> {
  for (let i = 0; i < 5; i++) await walk();
  const cpu = process.cpuUsage();
  const started = performance.now();
  for (let i = 0; i < WALKS; i++) await walk();
  const ms = performance.now() - started;
  const used = process.cpuUsage(cpu);
  return { ms: ms / WALKS, userMs: used.user / 1000 / WALKS, systemMs: used.system / 1000 / WALKS };
}

const medians = (rounds: Figures[]): Figures => ({
  ms: median(rounds.map((r) => r.ms)),
  userMs: median(rounds.map((r) => r.userMs)),
  systemMs: median(rounds.map((r) => r.systemMs)),
});
const show = (f: Figures) =>
  `${f.ms.toFixed(2)} ms per tree (user ${f.userMs.toFixed(2)}, system ${f.systemMs.toFixed(2)})`;

async function main() {
  const root = await mkdtemp(path.join(tmpdir(), "reclaim-bench-plan-"));
  try {
    const content = randomBytes(1024);
    for (let f = 0; f < FOLDERS; f++) {
      const folder = path.join(root, `folder-${f}`);
      await mkdir(folder);
      for (let i = 0; i < Math.ceil(FILES / FOLDERS); i++)
        await writeFile(path.join(folder, `file-${i}.txt`), content);
    }
    const plans: Figures[] = [];
    const walks: Figures[] = [];
    const plan = () => planTree(root, { selection: { kind: "walk" }, limits });
    const walk = () => treeStats(root);
    for (let round = 0; round < ROUNDS; round++) {
      if (round % 2 === 0) plans.push(await measure(plan));
      walks.push(await measure(walk));
      if (round % 2 === 1) plans.push(await measure(plan));
    }
    const p = medians(plans);
    const w = medians(walks);
    process.stdout.write(
      `tree: ${FILES} files in ${FOLDERS} folders, ${ROUNDS} rounds of ${WALKS} walks\n` +
        `plan (planTree):      ${show(p)}\n` +
        `bare walk (treeStats): ${show(w)}\n` +
        `plan / bare walk: ${(p.ms / w.ms).toFixed(2)}x the time (user ${(p.userMs / w.userMs).toFixed(2)}x, system ${(p.systemMs / w.systemMs).toFixed(2)}x)\n`,
    );
  } finally {
    await rm(root, { recursive: true, force: true });
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
