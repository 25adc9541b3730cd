// Prisma CLI configuration: wasm schema engine through a driver adapter (see migration-adapter.ts).
import path from "node:path";
import { defineConfig } from "prisma/config";
import { migrationAdapter } from "./migration-adapter";

export default defineConfig({
  experimental: { adapter: true },
  engine: "js",
  schema: path.join(__dirname, "schema.prisma"),
  migrations: { path: path.join(__dirname, "migrations") },
  async adapter() {
    const url = process.env.DATABASE_URL;
    if (!url) throw new Error("DATABASE_URL must be set for Prisma CLI commands");
    return migrationAdapter(url);
  },
});
