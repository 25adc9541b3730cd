/**
 * Request validation: zod schemas at the boundary. The first problem becomes a 400 whose
 * `field` is the dotted path of the offending value (`events.0.companyId`) and whose message
 * starts with it, so a caller can fix the request without reading our source.
 */
import { ReclaimError } from "@reclaim/core";
import type { z } from "zod";

export function parseInput<S extends z.ZodType>(
  schema: S,
  value: unknown,
  where: "body" | "query" | "params",
): z.infer<S> {
  const result = schema.safeParse(value ?? (where === "body" ? undefined : {}));
  if (result.success) return result.data;
  const issue = result.error.issues[0]!;
  const field = issue.path.length ? issue.path.map(String).join(".") : where;
  throw new ReclaimError("RECLAIM_ERR_VALIDATION", { message: `${field}: ${issue.message}`, field });
}
