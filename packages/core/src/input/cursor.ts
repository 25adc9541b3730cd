/**
 * Page cursors handed to clients (`nextCursor`) and taken back from them (`cursor`): JSON,
 * base64url-encoded. What comes back is client input like any other: it is decoded against
 * the schema of what this service issues, so a forged or damaged token is a 400 naming the
 * field, never a value that reaches a query (a non-UUID id, a year PostgreSQL cannot store)
 * and fails there as a 500.
 */
import type { z } from "zod";
import { ReclaimError } from "../errors";

export function encodeCursor(value: unknown): string {
  return Buffer.from(JSON.stringify(value)).toString("base64url");
}

/** `token` decoded and checked against `schema`, or a 400 naming `field`. */
export function decodeCursor<S extends z.ZodType>(token: string, schema: S, field = "cursor"): z.output<S> {
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(token, "base64url").toString("utf8"));
  } catch {
    value = undefined;
  }
  const result = value === undefined ? null : schema.safeParse(value);
  if (result?.success) return result.data;
  throw new ReclaimError("RECLAIM_ERR_VALIDATION", {
    message: `${field}: is not a cursor this service issued`,
    field,
  });
}
