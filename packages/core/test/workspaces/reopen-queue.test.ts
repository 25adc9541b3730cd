/**
 * The reopen queue's `?wait=`: a job that finishes right after it is added is answered. A
 * listener on the finished-job stream that starts at '$' after the add misses a job that
 * finishes before its first blocking read, and the request answered 202 although the job was
 * done (seen in CI under load). Here the listener's first read is held back 300 ms, as a
 * loaded machine does, while the job takes 100 ms.
 */
import { setTimeout as delay } from "node:timers/promises";
import { Redis } from "ioredis";
import { Worker } from "bullmq";
import { REOPEN_QUEUE, ReopenQueue } from "@reclaim/core";
import { deleteKeys, TEST_REDIS_URL, uniquePrefix } from "@reclaim/testkit";

const prefix = uniquePrefix();
const connections: Redis[] = [];
let worker: Worker;

/**
 * A connection whose XREADs (the listener's, on a duplicate of a duplicate: BullMQ makes the
 * blocking connection itself) send their first read 300 ms late.
 */
function slowFirstRead(connection: Redis): Redis {
  connections.push(connection);
  const xread = connection.xread.bind(connection) as (...a: unknown[]) => unknown;
  let first = true;
  (connection as unknown as { xread: unknown }).xread = async (...a: unknown[]) => {
    if (first) {
      first = false;
      await delay(300);
    }
    return xread(...a);
  };
  const duplicate = connection.duplicate.bind(connection);
  connection.duplicate = ((...args: Parameters<Redis["duplicate"]>) =>
    slowFirstRead(duplicate(...args))) as Redis["duplicate"];
  return connection;
}

beforeAll(async () => {
  const connection = new Redis(TEST_REDIS_URL, { maxRetriesPerRequest: null });
  connections.push(connection);
  worker = new Worker(
    REOPEN_QUEUE,
    async () => {
      await delay(100);
      return { outcome: "already_applied", path: "/x" };
    },
    { connection, prefix, concurrency: 4 },
  );
  await worker.waitUntilReady();
});

afterAll(async () => {
  await worker.close();
  for (const c of connections) c.disconnect();
  await deleteKeys(prefix);
});

describe("ReopenQueue.waitForResult", () => {
  it("answers a job that finishes before the new listener's first read", async () => {
    for (let i = 0; i < 3; i++) {
      const queue = new ReopenQueue(
        slowFirstRead(new Redis(TEST_REDIS_URL, { maxRetriesPerRequest: null })),
        prefix,
      );
      try {
        const request = { companyId: "c", workspaceId: `w${i}`, reason: "run" } as const;
        const jobId = await queue.enqueue(request, { listen: true });
        expect(await queue.waitForResult(jobId, 3_000)).toEqual({ outcome: "already_applied", path: "/x" });
      } finally {
        await queue.close();
      }
    }
  }, 60_000);
});
