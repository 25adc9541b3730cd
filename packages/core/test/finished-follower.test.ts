/**
 * The schedulers' backstop reads finished jobs from BullMQ's event stream through a script
 * that hands over only the ids of completed and failed jobs (queue/finished-follower.ts).
 * Against real Redis and BullMQ.
 */
import { setTimeout as delay } from "node:timers/promises";
import { Queue, UnrecoverableError, Worker } from "bullmq";
import { Redis } from "ioredis";
import { FinishedJobFollower, type FinishedJobs } from "@reclaim/core";
import { deleteKeys, TEST_REDIS_URL, uniquePrefix, waitFor } from "@reclaim/testkit";

const prefix = uniquePrefix();
const connection = new Redis(TEST_REDIS_URL, { maxRetriesPerRequest: null });
const opened: { close(): Promise<unknown> }[] = [];
/** BullMQ leaves open a connection it is handed. */
const duplicates: Redis[] = [];
const duplicate = (): Redis => {
  const c = connection.duplicate();
  duplicates.push(c);
  return c;
};

afterAll(async () => {
  for (const o of opened.reverse()) await o.close();
  for (const c of duplicates) c.disconnect();
  connection.disconnect();
  await deleteKeys(prefix);
});

function setup(name: string, events?: { maxLen: number }) {
  const queue = new Queue(name, { connection, prefix, ...(events ? { streams: { events } } : {}) });
  opened.push(queue);
  const seen: FinishedJobs = { completed: [], failed: [] };
  let gaps = 0;
  const follower = new FinishedJobFollower({
    stream: queue.toKey("events"),
    connection: connection.duplicate(),
    pauseMs: 50,
    onFinished: (jobs) => {
      seen.completed.push(...jobs.completed);
      seen.failed.push(...jobs.failed);
    },
    onGap: () => void (gaps += 1),
    onError: () => undefined,
  });
  opened.push(follower);
  const work = (fn: (id: string) => Promise<unknown>) => {
    const worker = new Worker(name, (job) => fn(job.id!), {
      connection: duplicate(),
      prefix,
      concurrency: 8,
    });
    opened.push({
      close: async () => {
        await worker.close();
        await worker.disconnect();
      },
    });
    return worker;
  };
  return { queue, follower, seen, work, gaps: () => gaps };
}

it("hands over the ids of the jobs that completed and that failed, and nothing of their other events", async () => {
  const { queue, follower, seen, work } = setup("follow-finished");
  await follower.start();
  work(async (id) => {
    if (id.startsWith("bad")) throw new UnrecoverableError("no");
    return { ok: true };
  });
  const ids = Array.from({ length: 300 }, (_, i) => (i % 10 === 0 ? `bad-${i}` : `good-${i}`));
  await queue.addBulk(ids.map((jobId) => ({ name: "j", data: {}, opts: { jobId } })));
  await waitFor(() => seen.completed.length + seen.failed.length >= ids.length, { what: "every job" });
  await delay(300);
  expect([...seen.completed].sort()).toEqual(ids.filter((id) => id.startsWith("good")).sort());
  expect([...seen.failed].sort()).toEqual(ids.filter((id) => id.startsWith("bad")).sort());
});

it("misses no job that finishes right after it started, and reports none that finished before", async () => {
  const { queue, follower, seen, work } = setup("follow-start");
  work(async () => ({ ok: true }));
  await queue.add("j", {}, { jobId: "before" });
  await waitFor(async () => (await queue.getJobState("before")) === "completed", { what: "the first job" });
  await follower.start();
  await queue.add("j", {}, { jobId: "after" });
  await waitFor(() => seen.completed.includes("after"), { what: "the job after start" });
  expect(seen.completed).toEqual(["after"]);
});

it("says so when the stream was trimmed past what it read (finished jobs may be lost)", async () => {
  const { queue, follower, seen, work, gaps } = setup("follow-trimmed", { maxLen: 10 });
  await queue.add("j", {}, { jobId: "first" });
  await follower.start();
  // The follower reads nothing while 200 jobs come and go: its last entry is trimmed away.
  const stalled = follower as unknown as { options: { connection: Redis } };
  stalled.options.connection.disconnect();
  await delay(100);
  work(async () => ({ ok: true }));
  await queue.addBulk(
    Array.from({ length: 200 }, (_, i) => ({ name: "j", data: {}, opts: { jobId: `j${i}` } })),
  );
  await waitFor(async () => ((await queue.getJobCounts("completed")).completed ?? 0) >= 200, {
    what: "the jobs",
  });
  await queue.trimEvents(10);
  await stalled.options.connection.connect();
  await waitFor(() => gaps() > 0, { what: "the gap" });
  expect(seen.completed.length).toBeLessThan(200);
});

it("closes at once, in the middle of a blocking read", async () => {
  const { follower } = setup("follow-close");
  await follower.start();
  await delay(200);
  const started = Date.now();
  await follower.close();
  expect(Date.now() - started).toBeLessThan(1000);
});
