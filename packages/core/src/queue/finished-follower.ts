/**
 * Follows the jobs of one queue that finish, from BullMQ's event stream
 * (`<prefix>:<queue>:events`), for the schedulers' backstop (deadline-queues.ts
 * `followFinishedJobs`).
 *
 * BullMQ's QueueEvents hands its process every event of the stream (added, waiting, active,
 * completed, removed...: four or more per job), each read, parsed and emitted there; the
 * backstop needs only the ids of completed and failed jobs. So a script picks those out in
 * Redis, and the process receives a list of ids:
 *
 *   wait   a blocking XREAD of one entry after the last one read (no polling; it returns at
 *          once when entries are there, else after `BLOCK_MS` and is repeated);
 *   pick   PICK_FINISHED: up to `PAGE` entries after the last one read, the ids of the jobs
 *          that completed and that failed among them, and the id of the last entry read;
 *          repeated while pages come back full;
 *   pause  `pauseMs` before the next wait, so that under load one pick takes a batch.
 *
 * Reading starts after the last entry the stream held at start. A stream trimmed past the
 * last entry read (BullMQ keeps about 10,000 events) may have lost finished jobs: `onGap`
 * says so, and the caller rebuilds the queue from the ledger.
 */
import type { Redis } from "ioredis";
import { settlesWithin, CLOSE_WAIT_MS } from "./connection";

/** Entries one pick reads at most. */
const PAGE = 1000;
/** How long one blocking read waits (BullMQ's QueueEvents waits as long). */
const BLOCK_MS = 10_000;

/**
 * KEYS[1] the events stream; ARGV[1] the last entry read ('0-0': none), ARGV[2] entries at
 * most. Returns {last entry read, completed job ids, failed job ids, entries read, gap (1 when
 * the entry ARGV[1] is no longer in the stream)}.
 */
const PICK_FINISHED = `
local entries = redis.call('XRANGE', KEYS[1], ARGV[1], '+', 'COUNT', tonumber(ARGV[2]) + 1)
local last = ARGV[1]
local completed, failed = {}, {}
local read, gap = 0, 0
for i, entry in ipairs(entries) do
  if i == 1 and ARGV[1] ~= '0-0' and entry[1] ~= ARGV[1] then gap = 1 end
  if entry[1] ~= ARGV[1] and read < tonumber(ARGV[2]) then
    read = read + 1
    last = entry[1]
    local fields, event, job = entry[2], nil, nil
    for f = 1, #fields, 2 do
      if fields[f] == 'event' then event = fields[f + 1] elseif fields[f] == 'jobId' then job = fields[f + 1] end
    end
    if job and event == 'completed' then completed[#completed + 1] = job end
    if job and event == 'failed' then failed[#failed + 1] = job end
  end
end
if #entries == 0 and ARGV[1] ~= '0-0' then gap = 1 end
return {last, completed, failed, read, gap}
`;

export interface FinishedJobs {
  completed: string[];
  failed: string[];
}

export interface FollowerOptions {
  /** The events stream's key (`queue.toKey("events")`). */
  stream: string;
  /** A connection of its own: its reads block. Closed by `close()`. */
  connection: Redis;
  /** Pause after a read that found entries (batching under load). */
  pauseMs: number;
  onFinished(jobs: FinishedJobs): void;
  /** The stream was trimmed past what was read: finished jobs may have been missed. */
  onGap(): void;
  onError(error: Error): void;
}

type PickReply = [string, string[], string[], number, number];

export class FinishedJobFollower {
  private closed = false;
  private loop: Promise<void> | null = null;

  constructor(private readonly options: FollowerOptions) {
    options.connection.defineCommand("reclaimPickFinished", { numberOfKeys: 1, lua: PICK_FINISHED });
  }

  /** Resolves once reading has a starting point: what finishes from now on is followed. */
  async start(): Promise<void> {
    const last = await this.startingPoint();
    this.loop = this.follow(last);
  }

  private async startingPoint(): Promise<string> {
    for (;;) {
      try {
        const [newest] = await this.options.connection.xrevrange(this.options.stream, "+", "-", "COUNT", 1);
        return newest?.[0] ?? "0-0";
      } catch (error) {
        if (this.closed) return "0-0";
        this.options.onError(error as Error);
        await this.sleep(1000);
      }
    }
  }

  private async follow(from: string): Promise<void> {
    const { connection, stream } = this.options;
    const pick = (
      connection as unknown as Record<string, (...a: unknown[]) => Promise<PickReply>>
    ).reclaimPickFinished!.bind(connection);
    let last = from;
    while (!this.closed) {
      try {
        const woke = await connection.xread("COUNT", 1, "BLOCK", BLOCK_MS, "STREAMS", stream, last);
        if (!woke || this.closed) continue;
        for (;;) {
          const [next, completed, failed, read, gap] = await pick(stream, last, PAGE);
          if (gap === 1) this.options.onGap();
          last = next === last && gap === 1 ? "0-0" : next;
          if (completed.length || failed.length) this.options.onFinished({ completed, failed });
          if (read < PAGE) break;
        }
        await this.sleep(this.options.pauseMs);
      } catch (error) {
        if (this.closed) return;
        // Redis restarting: ioredis reconnects; the caller rebuilds the queues on reconnect.
        this.options.onError(error as Error);
        await this.sleep(1000);
      }
    }
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => setTimeout(resolve, ms));
  }

  /** Stops reading: drops the connection, so a blocking read ends at once. */
  async close(): Promise<void> {
    this.closed = true;
    this.options.connection.disconnect();
    if (this.loop) await settlesWithin(this.loop, CLOSE_WAIT_MS);
  }
}
