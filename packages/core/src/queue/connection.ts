import { Redis, type RedisOptions } from "ioredis";

/**
 * A Redis connection for BullMQ. `maxRetriesPerRequest: null` is what BullMQ workers
 * require: a command waits for Redis to come back instead of failing the job.
 */
export function createRedis(url: string, options: RedisOptions = {}): Redis {
  return new Redis(url, { maxRetriesPerRequest: null, enableReadyCheck: true, ...options });
}

/**
 * Calls `fn` every time the connection becomes ready again after it was lost (a Redis
 * restart, a failover). Redis here keeps nothing on disk, so a restart empties the queues;
 * the caller rebuilds them from the ledger. Event driven: nothing polls.
 */
export function onReconnect(redis: Redis, fn: () => void): void {
  let lost = false;
  redis.on("close", () => {
    lost = true;
  });
  redis.on("ready", () => {
    if (!lost) return;
    lost = false;
    fn();
  });
}

/**
 * QUIT, or drop the socket when Redis does not answer within 2 s (it may be restarting, and a
 * QUIT queued on a reconnecting connection would wait for it forever).
 */
export async function closeRedis(connection: Redis): Promise<void> {
  if (connection.status === "end") return;
  const quit = connection.quit().then(
    () => true,
    () => false,
  );
  let timer: NodeJS.Timeout | undefined;
  const answered = await Promise.race([
    quit,
    new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), 2000))),
  ]);
  clearTimeout(timer);
  if (!answered) connection.disconnect();
}
