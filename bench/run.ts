/**
 * `npm run bench [filter]`: every benchmark under bench/, one after another (they measure
 * ratios against a baseline of the same run, so they must not share the machine), or only
 * those whose path contains `filter`.
 */
import { spawnSync } from "node:child_process";
import { readdirSync, statSync } from "node:fs";
import path from "node:path";

const HELPERS = new Set([
  "run.ts",
  "support.ts",
  "private-postgres.ts",
  "harness.ts",
  "fleet.ts",
  "fleet-child.ts",
]);

function benches(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const full = path.join(dir, name);
    if (statSync(full).isDirectory()) return benches(full);
    return name.endsWith(".ts") && !HELPERS.has(name) ? [full] : [];
  });
}

const filter = process.argv[2] ?? "";
let failed = 0;
for (const file of benches(__dirname).sort()) {
  const rel = path.relative(path.dirname(__dirname), file);
  if (!rel.includes(filter)) continue;
  process.stdout.write(`\n== ${rel}\n`);
  const result = spawnSync(process.execPath, ["--import", "tsx", file], { stdio: "inherit" });
  if (result.status !== 0) failed += 1;
}
process.exit(failed ? 1 : 0);
