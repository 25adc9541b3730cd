/**
 * Delivery of batch reports to RECLAIM_CALLBACK_URL. Each report becomes a job in its own
 * queue (`reclaim-callbacks`), so delivery survives restarts and is retried with
 * exponential backoff (2 s doubling, 12 attempts, about two hours) without holding up
 * retention work. The job id is the report id: a report is delivered at most once per
 * success, and the receiver can de-duplicate on the `id` field.
 */
import { Queue, Worker } from "bullmq";
import type { Redis } from "ioredis";
import type { BatchReport } from "../ledger";
import type { Logger } from "../logging";
import { sign, SIGNATURE_HEADER } from "./signature";

export const CALLBACK_QUEUE = "reclaim-callbacks";
const ATTEMPTS = 12;
const TIMEOUT_MS = 10_000;

export interface CallbackTarget {
  url: string;
  secret: string;
}

export class ReportCallbacks {
  private readonly queue: Queue<BatchReport>;

  constructor(
    redis: Redis,
    private readonly prefix: string,
  ) {
    this.queue = new Queue<BatchReport>(CALLBACK_QUEUE, { connection: redis, prefix });
  }

  async enqueue(report: BatchReport): Promise<void> {
    await this.queue.add("report", report, {
      jobId: `report--${report.id}`,
      attempts: ATTEMPTS,
      backoff: { type: "exponential", delay: 2000 },
      removeOnComplete: true,
      removeOnFail: { age: 7 * 24 * 3600 },
    });
  }

  /** The delivering worker (runs in worker processes). */
  deliverer(target: CallbackTarget, connection: Redis, log: Logger): Worker<BatchReport> {
    return new Worker<BatchReport>(
      CALLBACK_QUEUE,
      async (job) => {
        const body = JSON.stringify(job.data);
        const response = await fetch(target.url, {
          method: "POST",
          headers: { "content-type": "application/json", [SIGNATURE_HEADER]: sign(body, target.secret) },
          body,
          signal: AbortSignal.timeout(TIMEOUT_MS),
        });
        if (!response.ok) throw new Error(`callback answered ${response.status}`);
        log.debug("report delivered", { reportId: job.data.id, attempt: job.attemptsMade + 1 });
      },
      { connection, prefix: this.prefix, concurrency: 4 },
    );
  }

  async close(): Promise<void> {
    await this.queue.close();
  }
}
