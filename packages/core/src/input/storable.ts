/**
 * The primitives every API schema (body, query and path parameters) is built from, so that
 * what passes validation is also what PostgreSQL stores: zod says yes only to values the
 * database, the ledger's date arithmetic and Prisma's JSON encoder accept, and a refusal
 * is a 400 naming the field instead of a 500 after part of the work was written.
 *
 *  - `storableString`: no NUL (PostgreSQL text cannot hold one) and no unpaired UTF-16
 *    surrogate (it has no UTF-8 encoding), with a maximum length. Documented in the
 *    OpenAPI document as a `pattern`.
 *  - `timestamp`: an ISO 8601 date-time with offset whose instant, and that instant plus
 *    whatever the domain adds to it (`addsUpTo`, e.g. a retention window) or minus what it
 *    takes from it (`subtractsUpTo`, e.g. a default range), lies between 0001-01-01 and
 *    9999-12-31 UTC: what travels as an ISO string to `timestamptz`.
 *  - `boundedJson`: a free-form JSON object at most MAX_JSON_DEPTH containers deep and
 *    MAX_JSON_BYTES serialized, every key and string storable. Checked without recursion, so
 *    no nesting depth can exhaust the stack.
 *  - `echo`: the short prefix of an input value that an error message may quote.
 */
import { z } from "zod";

/** Deepest nesting of objects and arrays a free-form JSON value may have (the value itself is level 1). */
export const MAX_JSON_DEPTH = 32;
/** Largest free-form JSON value, serialized as UTF-8. */
export const MAX_JSON_BYTES = 64 * 1024;
/** Earliest and latest instants a timestamp may denote, after the domain's arithmetic. */
export const EARLIEST_TIMESTAMP = new Date("0001-01-01T00:00:00.000Z");
export const LATEST_TIMESTAMP = new Date("9999-12-31T23:59:59.999Z");
/** How many characters of an input value an error message quotes. */
export const ECHO_LENGTH = 40;

// With the `u` flag a paired surrogate is one code point (outside the class), a lone one is not.
const STORABLE = /^[^\u0000\uD800-\uDFFF]*$/u;
const STORABLE_MESSAGE = "must not contain NUL characters or unpaired surrogates";

export function isStorable(value: string): boolean {
  return STORABLE.test(value);
}

export function storableString(options: { min?: number; max: number }) {
  return z
    .string()
    .min(options.min ?? 0)
    .max(options.max)
    .regex(STORABLE, STORABLE_MESSAGE);
}

/**
 * An ISO 8601 date-time with offset that stays storable after `addsUpTo` ms are added to it
 * and `subtractsUpTo` ms are taken from it.
 */
export function timestamp(options: { addsUpTo?: number; subtractsUpTo?: number } = {}) {
  const earliest = EARLIEST_TIMESTAMP.getTime() + (options.subtractsUpTo ?? 0);
  const latest = LATEST_TIMESTAMP.getTime() - (options.addsUpTo ?? 0);
  const message = `must lie between ${new Date(earliest).toISOString()} and ${new Date(latest).toISOString()}`;
  return z.iso.datetime({ offset: true }).refine((value) => {
    const instant = Date.parse(value);
    return instant >= earliest && instant <= latest;
  }, message);
}

interface JsonProblem {
  path: (string | number)[];
  message: string;
}

/** The first reason `value` is not storable free-form JSON, walking it with an explicit stack. */
export function jsonProblem(value: unknown, maxDepth = MAX_JSON_DEPTH): JsonProblem | null {
  const pending: { value: unknown; path: (string | number)[] }[] = [{ value, path: [] }];
  while (pending.length > 0) {
    const { value: current, path } = pending.pop()!;
    if (typeof current === "string") {
      if (!isStorable(current)) return { path, message: STORABLE_MESSAGE };
      continue;
    }
    if (current === null || typeof current !== "object") continue;
    if (path.length >= maxDepth) {
      return { path: [], message: `must not be nested deeper than ${maxDepth} levels` };
    }
    if (Array.isArray(current)) {
      current.forEach((item, index) => pending.push({ value: item, path: [...path, index] }));
      continue;
    }
    for (const [key, item] of Object.entries(current)) {
      if (!isStorable(key)) return { path, message: `keys ${STORABLE_MESSAGE}` };
      pending.push({ value: item, path: [...path, key] });
    }
  }
  return null;
}

/** A free-form JSON object (e.g. `metadata`): bounded in depth and size, every key and string storable. */
export function boundedJson(options: { maxDepth?: number; maxBytes?: number } = {}) {
  const maxDepth = options.maxDepth ?? MAX_JSON_DEPTH;
  const maxBytes = options.maxBytes ?? MAX_JSON_BYTES;
  return z
    .record(z.string(), z.unknown())
    .superRefine((value, ctx) => {
      const problem = jsonProblem(value, maxDepth);
      if (problem) {
        ctx.addIssue({ code: "custom", message: problem.message, path: problem.path });
      } else if (Buffer.byteLength(JSON.stringify(value)) > maxBytes) {
        ctx.addIssue({ code: "custom", message: `must not be larger than ${maxBytes} bytes as JSON` });
      }
    })
    .meta({
      description:
        `Free-form JSON object: at most ${maxDepth} levels deep and ${maxBytes} bytes serialized; ` +
        "no key or string may contain NUL or an unpaired surrogate",
    });
}

/** `value` quoted for an error message: at most ECHO_LENGTH characters, never half a surrogate pair. */
export function echo(value: string, length = ECHO_LENGTH): string {
  const characters = Array.from(value.slice(0, 2 * length + 2));
  const shown = characters.length > length ? `${characters.slice(0, length).join("")}…` : characters.join("");
  return JSON.stringify(shown);
}
