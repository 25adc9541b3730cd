// Generates the Prisma client into packages/core/src/db/generated when prisma/schema.prisma
// (or the Prisma version) changed since the last generation; a no-op otherwise.
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";

const root = path.resolve(__dirname, "..");
const out = path.join(root, "packages/core/src/db/generated");
const stamp = path.join(out, ".schema-hash");
const hash = createHash("sha256")
  .update(readFileSync(path.join(root, "prisma/schema.prisma")))
  .update(readFileSync(path.join(root, "node_modules/prisma/package.json")))
  .digest("hex");

if (!existsSync(stamp) || readFileSync(stamp, "utf8") !== hash) {
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
