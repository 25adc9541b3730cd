import { ReclaimError } from "@reclaim/core";
import { z } from "zod";
import { errorBody } from "./schemas";
import { route } from "./route";

const PROBE_TIMEOUT_MS = 2000;

function withTimeout<T>(promise: Promise<T>): Promise<T> {
  return Promise.race([
    promise,
    new Promise<T>((_, reject) => setTimeout(() => reject(new Error("timed out")), PROBE_TIMEOUT_MS).unref()),
  ]);
}

export const readyRoute = route({
  method: "GET",
  url: "/readyz",
  operationId: "getReadiness",
  summary: "Readiness: PostgreSQL and Redis answer",
  public: true,
  responses: {
    200: z.object({ status: z.literal("ready"), postgres: z.literal("ok"), redis: z.literal("ok") }),
    503: errorBody.extend({ postgres: z.string(), redis: z.string() }),
  },
  async handle(_input, deps) {
    const [postgres, redis] = await Promise.all([
      withTimeout(deps.db.$queryRawUnsafe("SELECT 1")).then(
        () => "ok",
        (error: Error) => error.message,
      ),
      withTimeout(deps.redis.ping()).then(
        () => "ok",
        (error: Error) => error.message,
      ),
    ]);
    if (postgres === "ok" && redis === "ok")
      return { status: 200, body: { status: "ready", postgres, redis } };
    const error = new ReclaimError("RECLAIM_ERR_DEPENDENCY_UNAVAILABLE");
    return { status: 503, body: { ...error.toBody(), postgres, redis } };
  },
});
