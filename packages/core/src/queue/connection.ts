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
  const answered = await settlesWithin(
    connection.quit().catch(() => undefined),
    CLOSE_WAIT_MS,
  );
  if (!answered) connection.disconnect();
}

/** How long a shutdown waits for Redis, or for a BullMQ object closing over it. */
export const CLOSE_WAIT_MS = 2000;

/**
 * Whether `promise` settles within `ms`. A close that waits on a Redis connection can wait
 * forever: ioredis parks a connection that is disconnected while it waits to reconnect in
 * `reconnecting` without ever emitting `end`, and BullMQ's close waits for that `end`. Such a
 * connection holds no socket and no timer, so giving up on the wait leaks nothing that keeps
 * the process alive.
 */
export async function settlesWithin(promise: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const settled = await Promise.race([
    promise.then(
      () => true,
      () => true,
    ),
    new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), ms))),
  ]);
  clearTimeout(timer);
  return settled;
}
