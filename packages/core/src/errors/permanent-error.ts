/**
 * A failure that retrying cannot cure (a corrupt object, a refused key, a bug): the batch
 * records it at once and the domain tries again at its failure-retry deadline instead of
 * BullMQ retrying within seconds.
 */
export class PermanentError extends Error {
  constructor(message: string, options: { cause?: unknown } = {}) {
    super(message, options);
    this.name = "PermanentError";
  }
}
