import { dropDatabase } from "./postgres";

export default async function globalTeardown(): Promise<void> {
  const template = process.env.RECLAIM_TEST_TEMPLATE_DB;
  if (template) await dropDatabase(template);
}
