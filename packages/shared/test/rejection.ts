import { ReclaimError } from "../src";

/**
 * The error a promise rejects with, checked to be a `type` (default: any ReclaimError);
 * fails the test when the promise resolves or rejects with something else.
 */
export async function rejectionOf<E extends Error = ReclaimError>(
  promise: Promise<unknown>,
  type?: abstract new (...args: never[]) => E,
): Promise<E> {
  const expected = type ?? ReclaimError;
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!(error instanceof expected)) throw new Error(`expected a ${expected.name}, got ${String(error)}`);
  return error as E;
}
