/**
 * Time for retention code comes from a Clock, never from `Date.now()` (a lint test enforces
 * it): tests of a seven-day window run in milliseconds, and SQL receives the clock's `now`
 * as a parameter instead of calling `now()`, so the database agrees with the clock.
 */
export interface Clock {
  now(): Date;
}

export const systemClock: Clock = {
  now: () => new Date(),
};

/** A clock that moves only when told to. */
export class TestClock implements Clock {
  private ms: number;

  constructor(start: Date | number = new Date("2026-12-01T00:00:00Z")) {
    this.ms = typeof start === "number" ? start : start.getTime();
  }

  now(): Date {
    return new Date(this.ms);
  }

  set(to: Date | number): void {
    this.ms = typeof to === "number" ? to : to.getTime();
  }

  advance(ms: number): void {
    this.ms += ms;
  }
}

export const MINUTE_MS = 60_000;
export const HOUR_MS = 60 * MINUTE_MS;
export const DAY_MS = 24 * HOUR_MS;
