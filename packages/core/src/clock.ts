/**
 * Time for retention code comes from a Clock (defined once, in @reclaim/shared), never from
 * `Date.now()`: the conventions test enforces it. Here: a test clock and the units.
 */
import type { Clock } from "@reclaim/shared";

export { systemClock, type Clock } from "@reclaim/shared";

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
