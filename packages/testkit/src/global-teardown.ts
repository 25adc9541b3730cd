import { dropDatabase } from "./postgres";
import { stopTestS3 } from "./s3/rgw";

export default async function globalTeardown(): Promise<void> {
  const template = process.env.RECLAIM_TEST_TEMPLATE_DB;
  if (template) await dropDatabase(template);
  stopTestS3();
}
