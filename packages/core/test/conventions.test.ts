/**
 * Rules the team adopted, checked on the source:
 *  - retention code takes time from the injected clock, never `Date.now()`/`new Date()`,
 *    and its SQL takes `now` as a parameter, never calling `now()` (tests of a seven-day
 *    window then run in milliseconds, and the database agrees with the clock);
 *  - every SQL file opens with a comment that says what it does and what it takes;
 *  - every SQL file's prepared statement has its own name, one PostgreSQL keeps whole (63 bytes).
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import { statement } from "../src/db/sql";

const SRC = path.join(__dirname, "../src");

function files(dir: string, ext: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const full = path.join(dir, name);
    if (name === "generated") return [];
    return statSync(full).isDirectory() ? files(full, ext) : full.endsWith(ext) ? [full] : [];
  });
}

describe("retention code", () => {
  const code = [
    ...files(path.join(SRC, "domains"), ".ts"),
    ...files(path.join(SRC, "jobs"), ".ts"),
    ...files(path.join(SRC, "ledger"), ".ts"),
  ];

  it.each(code.map((f) => [path.relative(SRC, f), f]))("%s takes time from the clock", (_name, file) => {
    const text = readFileSync(file, "utf8").replace(/\/\*[\s\S]*?\*\/|\/\/.*$/gm, "");
    expect(text).not.toMatch(/Date\.now\(\)|new Date\(\)/);
  });

  it.each(files(SRC, ".sql").map((f) => [path.relative(SRC, f), f]))(
    "%s calls no now() and opens with its contract",
    (_name, file) => {
      const text = readFileSync(file, "utf8");
      expect(text.startsWith("-- ")).toBe(true);
      const body = text.replace(/--.*$/gm, "");
      expect(body).not.toMatch(/\bnow\(\)|current_timestamp|clock_timestamp/i);
    },
  );
});

it("every SQL file's prepared statement has a name of its own that PostgreSQL keeps whole", () => {
  const names = files(SRC, ".sql").map((f) => statement(path.dirname(f), path.basename(f)).name);
  for (const name of names) expect(Buffer.byteLength(name)).toBeLessThanOrEqual(63);
  expect(new Set(names).size).toBe(names.length);
  expect(names).toContain("reclaim/ledger/settle-jobs.sql");
});
