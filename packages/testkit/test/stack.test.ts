/**
 * The test stack cleans up after itself, also when it fails to start: every Jest run used to
 * leave two migrated, empty databases behind (the controls tests whose stack refuses its
 * configuration), until the next run's clean-up six hours later.
 */
import { createTestDatabase, startStack, withAdmin } from "../src";

it("a stack whose configuration is refused drops its database", async () => {
  const database = await createTestDatabase();
  await expect(
    startStack({ database, env: { PAPERCLIP_NATIVE_HARNESS_BACKUP_EXPIRATION_DAYS: "0" } }),
  ).rejects.toThrow("PAPERCLIP_NATIVE_HARNESS_BACKUP_EXPIRATION_DAYS");
  const { rows } = await withAdmin((c) =>
    c.query("SELECT datname FROM pg_database WHERE datname = $1", [database.name]),
  );
  expect(rows).toEqual([]);
});
