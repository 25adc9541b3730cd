/**
 * Time comes from a Clock, never from `Date.now()` (core's conventions test enforces it for
 * retention code): tests of a seven-day window or of a capture's busy timeout run in
 * milliseconds, and SQL receives the clock's `now` as a parameter instead of calling `now()`,
 * so the database agrees with the clock. The one Clock type of every package.
 */
export interface Clock {
  now(): Date;
}

export const systemClock: Clock = {
  now: () => new Date(),
};
