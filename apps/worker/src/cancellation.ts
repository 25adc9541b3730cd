/**
 * Cancelling an active requested sweep from another process: the scheduler publishes the
 * job id on `<prefix>.cancel`; the worker running it aborts that job's signal, and the
 * check stops between entries and reports where it stopped. Pub/sub, not polling.
 */
import type { Redis } from "ioredis";

export function cancelChannel(prefix: string): string {
  return `${prefix}.cancel`;
}

export class CancellationListener {
  private readonly active = new Map<string, AbortController>();

  constructor(
    private readonly subscriber: Redis,
    private readonly channel: string,
  ) {}

  async start(): Promise<void> {
    this.subscriber.on("message", (channel: string, jobId: string) => {
      if (channel === this.channel) this.active.get(jobId)?.abort(new Error("cancelled"));
    });
    await this.subscriber.subscribe(this.channel);
  }

  /** A controller for one job, also aborted when `parent` aborts (shutdown). */
  track(jobId: string, parent: AbortSignal): { signal: AbortSignal; release(): void } {
    const controller = new AbortController();
    const onParent = () => controller.abort(parent.reason);
    parent.addEventListener("abort", onParent, { once: true });
    this.active.set(jobId, controller);
    return {
      signal: controller.signal,
      release: () => {
        parent.removeEventListener("abort", onParent);
        this.active.delete(jobId);
      },
    };
  }

  /** Stops listening; the connection itself belongs to the caller. */
  async stop(): Promise<void> {
    await this.subscriber.unsubscribe(this.channel).catch(() => undefined);
  }
}
