/**
 * Time, injected: captures time out and pack owners go stale by the Clock (../clock.ts) and
 * wait by this Timer, and tests drive both without waiting (no `Date.now()` or bare
 * `setTimeout` in quarantine logic).
 */
export interface Timer {
  setTimeout(callback: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

export const systemTimer: Timer = {
  setTimeout: (callback, ms) => setTimeout(callback, ms),
  clearTimeout: (handle) => clearTimeout(handle as NodeJS.Timeout),
};

export function sleep(timer: Timer, ms: number): Promise<void> {
  return new Promise((resolve) => timer.setTimeout(resolve, ms));
}
