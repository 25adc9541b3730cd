/**
 * Redis for tests: every test file uses its own BullMQ key prefix on the shared server,
 * and removes its keys at the end.
 */
import { randomBytes } from "node:crypto";
import { Redis } from "ioredis";

export const TEST_REDIS_URL = process.env.RECLAIM_TEST_REDIS_URL ?? "redis://127.0.0.1:6379";

export function uniquePrefix(): string {
  return `reclaim-test-${randomBytes(5).toString("hex")}`;
}

export async function deleteKeys(prefix: string, url = TEST_REDIS_URL): Promise<void> {
  const redis = new Redis(url, { maxRetriesPerRequest: 3 });
  try {
    let cursor = "0";
    do {
      const [next, keys] = await redis.scan(cursor, "MATCH", `${prefix}:*`, "COUNT", 1000);
      cursor = next;
      if (keys.length) await redis.del(...keys);
    } while (cursor !== "0");
  } finally {
    redis.disconnect();
  }
}
