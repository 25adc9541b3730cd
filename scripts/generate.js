// Generates the Prisma client into packages/core/src/db/generated when prisma/schema.prisma
// (or the Prisma version) changed since the last generation; a no-op otherwise. Plain
// JavaScript, so that it runs wherever Node does: at `npm ci` (the root package's `prepare`,
// through scripts/build.js), in the bootstrap, and with development dependencies omitted.
"use strict";
const { execFileSync } = require("node:child_process");
const { createHash } = require("node:crypto");
const { existsSync, readFileSync, writeFileSync } = require("node:fs");
const path = require("node:path");

const root = path.resolve(__dirname, "..");

function generate() {
  const out = path.join(root, "packages/core/src/db/generated");
  const stamp = path.join(out, ".schema-hash");
  const hash = createHash("sha256")
    .update(readFileSync(path.join(root, "prisma/schema.prisma")))
    .update(readFileSync(path.join(root, "node_modules/prisma/package.json")))
    .digest("hex");
  if (existsSync(stamp) && readFileSync(stamp, "utf8") === hash) return;
  execFileSync(
    process.execPath,
    [
      path.join(root, "node_modules/prisma/build/index.js"),
      "generate",
      "--config",
      "prisma/prisma.config.ts",
    ],
    {
      cwd: root,
      stdio: ["ignore", "ignore", "inherit"],
      // `generate` reads DATABASE_URL from the schema but never connects.
      env: { DATABASE_URL: "postgresql://localhost/unused", ...process.env, PRISMA_HIDE_UPDATE_MESSAGE: "1" },
    },
  );
  writeFileSync(stamp, hash);
}

module.exports = { generate };
if (require.main === module) generate();
