/**
 * A domain job's report is stored in PostgreSQL (the record, read by GET /v1/jobs/:jobId);
 * the job's BullMQ return value, which BullMQ writes into the job and into the event stream
 * every scheduler follows, only names that row.
 */
import { randomUUID } from "node:crypto";
import { startStack, type Stack } from "@reclaim/testkit";
import { DOMAIN, insertRun, makeFolder, sweep } from "@reclaim/testkit/src/fixtures/native-workspace-sync";

let stack: Stack;
afterEach(async () => stack?.stop());

it("a finished job's return value names its report row; the report and its entries come from PostgreSQL", async () => {
  const company = randomUUID();
  stack = await startStack();
  for (let i = 0; i < 3; i++) {
    const run = await insertRun(stack, { companyId: company, status: "running", finishedDaysAgo: null });
    await makeFolder(stack, run, 0);
  }
  const report = await sweep(stack, company, { dryRun: true });
  expect(report.entries).toHaveLength(3);

  const job = await stack.scheduler.deps.queues.queue(DOMAIN).getJob(report.jobId);
  expect(job?.returnvalue).toEqual({ reportId: report.id });
  const answered = await stack.api("GET", `/v1/jobs/${report.jobId}`);
  expect(answered.body.report).toMatchObject({ id: report.id, checked: report.checked });
  expect(answered.body.report.entries).toHaveLength(3);
});
