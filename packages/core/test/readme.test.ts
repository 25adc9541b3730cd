// README.md documents every environment variable with its default: its configuration block
// is generated from the option definitions and must be current.
import { readFileSync } from "node:fs";
import path from "node:path";
import { withEnvTables } from "../../../scripts/env-table";

it("README.md's configuration tables match the option definitions", () => {
  const readme = readFileSync(path.join(__dirname, "../../../README.md"), "utf8");
  expect(readme).toBe(withEnvTables(readme));
});
