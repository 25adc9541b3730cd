import { sweepScratch } from "@reclaim/core";
import { dropDatabase } from "./postgres";
import { stopTestS3 } from "./s3/rgw";

export default async function globalTeardown(): Promise<void> {
  const template = process.env.RECLAIM_TEST_TEMPLATE_DB;
  if (template) await dropDatabase(template);
  stopTestS3();
  // The scratch directories of the test processes (process/scratch.ts: one per test file that
  // ran a capture), which have all exited by now; a worker's start-up sweep would remove them
  // on a host, but no worker starts after the last test.
  await sweepScratch();
}
