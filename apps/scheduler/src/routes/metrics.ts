import { route } from "./route";
import type { Metrics } from "../metrics";

export function metricsRoute(metrics: Metrics) {
  return route({
    method: "GET",
    url: "/metrics",
    operationId: "getMetrics",
    summary: "Prometheus metrics: queue depth, job duration, candidate and reclaimed bytes, skips by reason",
    responses: { 200: "Prometheus text exposition format 0.0.4" },
    handle: async () => ({
      status: 200,
      body: await metrics.render(),
      contentType: "text/plain; version=0.0.4; charset=utf-8",
    }),
  });
}
