// `npm run migrate`: apply committed migrations to DATABASE_URL.
import { applyMigrations } from "../packages/core/src/db/migrate";

const url = process.env.DATABASE_URL;
if (!url) {
  console.error("DATABASE_URL is required (postgresql://user@host:5432/database)");
  process.exit(2);
}
applyMigrations(url).then(
  (out) => process.stdout.write(out),
  (error: Error & { stderr?: string }) => {
    console.error(error.stderr || error.message);
    process.exit(1);
  },
);
