/**
 * A route is data: method, path, schemas and a handler returning `{status, body}`. The same
 * table registers the routes with Fastify (app.ts) and generates the OpenAPI document
 * (openapi.ts), so documentation cannot drift from validation.
 */
import type { z } from "zod";
import type { ApiDeps } from "../deps";

export interface RouteInput<B, Q, P> {
  body: B;
  query: Q;
  params: P;
}

export interface RouteResult {
  status: number;
  body: unknown;
  contentType?: string;
}

export interface Route<B = unknown, Q = unknown, P = unknown> {
  method: "GET" | "POST";
  url: string;
  /** The OpenAPI operationId: unique, camelCase, what generated clients name the call. */
  operationId: string;
  summary: string;
  /** No token needed (health probes). */
  public?: boolean;
  body?: z.ZodType<B>;
  query?: z.ZodType<Q>;
  params?: z.ZodType<P>;
  /** Status -> body schema (or a description for non-JSON bodies). */
  responses: Record<number, z.ZodType | string>;
  handle(input: RouteInput<B, Q, P>, deps: ApiDeps): Promise<RouteResult>;
}

export function route<B = undefined, Q = undefined, P = undefined>(
  definition: Route<B, Q, P>,
): Route<B, Q, P> {
  return definition;
}
