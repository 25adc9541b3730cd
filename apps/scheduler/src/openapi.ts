/**
 * The OpenAPI 3.1 document, generated from the route table's zod schemas (JSON Schema
 * 2020-12 via zod's own converter), served at GET /docs.
 */
import { z } from "zod";
import type { Route } from "./routes/route";
import { errorBody } from "./routes/schemas";

function jsonSchema(schema: z.ZodType, io: "input" | "output"): unknown {
  return z.toJSONSchema(schema, { target: "draft-2020-12", io, unrepresentable: "any" });
}

function parameters(schema: z.ZodType | undefined, where: "query" | "path") {
  if (!schema) return [];
  const json = jsonSchema(schema, "input") as { properties?: Record<string, unknown>; required?: string[] };
  return Object.entries(json.properties ?? {}).map(([name, property]) => ({
    name,
    in: where,
    required: where === "path" || (json.required ?? []).includes(name),
    schema: property,
  }));
}

export function openApiDocument(routes: Route<unknown, unknown, unknown>[], version: string) {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const r of routes) {
    const path = r.url.replace(/:(\w+)/g, "{$1}");
    const responses: Record<string, unknown> = {};
    for (const [status, body] of Object.entries(r.responses)) {
      responses[status] =
        typeof body === "string"
          ? { description: body, content: { "text/plain": { schema: { type: "string" } } } }
          : {
              description: body.description ?? `HTTP ${status}`,
              content: { "application/json": { schema: jsonSchema(body, "output") } },
            };
    }
    // Answers the app gives before a handler runs (app.ts, auth.ts, errors.ts).
    const error = (description: string) => ({
      description,
      content: { "application/json": { schema: jsonSchema(errorBody, "output") } },
    });
    if (r.body || r.query || r.params) responses["400"] ??= error("Invalid input: `field` names it");
    if (!r.public) responses["401"] ??= error("Missing or wrong bearer token");
    if (r.body) {
      responses["413"] ??= error("Body larger than 1 MiB");
      responses["415"] ??= error("Body not JSON");
    }
    (paths[path] ??= {})[r.method.toLowerCase()] = {
      operationId: r.operationId,
      summary: r.summary,
      ...(r.public ? { security: [] } : {}),
      parameters: [...parameters(r.params, "path"), ...parameters(r.query, "query")],
      ...(r.body
        ? {
            requestBody: {
              required: true,
              content: { "application/json": { schema: jsonSchema(r.body, "input") } },
            },
          }
        : {}),
      responses,
    };
  }
  return {
    openapi: "3.1.0",
    info: {
      title: "Reclaim",
      version,
      description: "Frees disk on Paperclip hosts without losing work that cannot be rebuilt.",
    },
    // Relative: the API is served from wherever this document is (behind any proxy or port).
    servers: [{ url: "/", description: "This scheduler" }],
    components: { securitySchemes: { bearer: { type: "http", scheme: "bearer" } } },
    security: [{ bearer: [] }],
    paths,
  };
}
