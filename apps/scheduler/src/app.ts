/**
 * The Fastify application: auth, error mapping, the route table, the dashboard. Built by
 * `buildApp` without listening, so tests drive it with `inject` or a real port alike.
 */
import { CALLBACK_QUEUE, echo, ReclaimError } from "@reclaim/core";
import { Queue } from "bullmq";
import Fastify, { type FastifyInstance, type FastifyReply } from "fastify";
import { authHook } from "./auth";
import { registerConsole } from "./console";
import { registerDashboard } from "./dashboard";
import type { ApiDeps } from "./deps";
import { installErrorHandling } from "./errors";
import { Metrics } from "./metrics";
import { openApiDocument } from "./openapi";
import { deadlinesRoute } from "./routes/deadlines";
import { docsRoute } from "./routes/docs";
import { domainsRoute } from "./routes/domains";
import { eventsRoute } from "./routes/events";
import { healthRoute } from "./routes/health";
import { jobRoute } from "./routes/job";
import { jobCancelRoute } from "./routes/job-cancel";
import { metricsRoute } from "./routes/metrics";
import { readyRoute } from "./routes/ready";
import { reportRoute } from "./routes/report";
import { reportsRoute } from "./routes/reports";
import { restorePointRoutes } from "./routes/restore-points";
import { statsRoutes } from "./routes/stats";
import { reopenRoute } from "./routes/workspaces/reopen";
import type { Route } from "./routes/route";
import { sweepsRoute } from "./routes/sweeps";
import { parseInput } from "./validation";

export const API_VERSION = "1.0.0";
/** Largest accepted request body: 1,000 events of a few hundred bytes each. */
export const BODY_LIMIT_BYTES = 1024 * 1024;

export interface RegisteredRoute {
  method: string;
  url: string;
}

const routeTables = new WeakMap<FastifyInstance, RegisteredRoute[]>();

/**
 * Every route the app serves, as Fastify registered it (the API's, the dashboard's, the
 * HEAD routes Fastify adds), complete once the app is ready: the auth test walks this table,
 * so a route added without authentication fails it.
 */
export function registeredRoutes(app: FastifyInstance): RegisteredRoute[] {
  return [...(routeTables.get(app) ?? [])];
}

/** How long a client may take (RECLAIM_HTTP_*_TIMEOUT_MS): a stalled request is closed, not kept. */
export interface HttpTimeouts {
  headersTimeoutMs: number;
  requestTimeoutMs: number;
  /** Silence on the socket, also while a request is handled; 0 for none. */
  connectionTimeoutMs: number;
}

export interface AppOptions {
  token: string;
  deps: ApiDeps;
  timeouts: HttpTimeouts;
  /** Serve /admin/queues (bull-board). */
  dashboard?: boolean;
}

export async function buildApp(options: AppOptions): Promise<FastifyInstance> {
  const { deps, timeouts } = options;
  const app = Fastify({
    logger: false,
    requestTimeout: timeouts.requestTimeoutMs,
    connectionTimeout: timeouts.connectionTimeoutMs,
    http: {
      headersTimeout: timeouts.headersTimeoutMs,
      // Node enforces both timeouts on this tick (30 s by default, which would let a stalled
      // request outlive a short timeout by that much).
      connectionsCheckingInterval: Math.min(1000, Math.ceil(timeouts.headersTimeoutMs / 4)),
    },
    bodyLimit: BODY_LIMIT_BYTES,
    return503OnClosing: true,
    // As long as a URL Node accepts (its 16 KiB header limit): a long parameter reaches the
    // route's schema, whose 400 names it, instead of the router's anonymous refusal.
    routerOptions: { maxParamLength: 16 * 1024 },
    // Errors the router raises before any handler (a path that is not valid percent-encoded UTF-8).
    frameworkErrors: (error, request, reply) => {
      const mapped = new ReclaimError("RECLAIM_ERR_VALIDATION", {
        message: `url: ${echo(request.url)} is not a valid URL (${error.code})`,
        field: "url",
      });
      void (reply as unknown as FastifyReply).code(mapped.status).send(mapped.toBody());
    },
  });
  const table: RegisteredRoute[] = [];
  routeTables.set(app, table);
  app.addHook("onRoute", (route) => {
    for (const method of [route.method].flat()) table.push({ method, url: route.url });
  });
  installErrorHandling(app, deps.log);
  // JSON only: any other body type is a 415, not a string for the validators to puzzle over.
  app.removeContentTypeParser(["text/plain"]);
  app.addHook("onRequest", authHook(options.token, deps.clock));

  const routes: Route<unknown, unknown, unknown>[] = [];
  const document = () => openApiDocument(routes, API_VERSION);
  routes.push(
    healthRoute,
    readyRoute,
    eventsRoute,
    sweepsRoute,
    jobRoute,
    jobCancelRoute,
    reportsRoute,
    reportRoute,
    deadlinesRoute,
    domainsRoute,
    ...restorePointRoutes,
    reopenRoute,
    ...statsRoutes,
    metricsRoute(new Metrics(deps)),
    docsRoute(document),
  ) as unknown;

  for (const r of routes) {
    app.route({
      method: r.method,
      url: r.url,
      handler: async (request, reply) => {
        if (r.body && request.body === undefined) {
          throw new ReclaimError("RECLAIM_ERR_VALIDATION", {
            message: "body: a JSON body is required",
            field: "body",
          });
        }
        const input = {
          body: r.body ? parseInput(r.body, request.body, "body") : undefined,
          query: r.query ? parseInput(r.query, request.query, "query") : undefined,
          params: r.params ? parseInput(r.params, request.params, "params") : undefined,
        };
        const result = await r.handle(input, deps);
        if (result.contentType) void reply.type(result.contentType);
        return reply.status(result.status).send(result.body);
      },
    });
  }

  await registerConsole(app, options.token, deps);
  if (options.dashboard !== false) {
    const queues = [...deps.domains.keys()].map((id) => deps.queues.queue(id));
    const callbacks = new Queue(CALLBACK_QUEUE, { connection: deps.redis, prefix: deps.queuePrefix });
    app.addHook("onClose", async () => callbacks.close());
    await registerDashboard(app, [...queues, callbacks]);
  }
  return app;
}
