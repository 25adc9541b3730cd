import { z } from "zod";
import { route } from "./route";

export const healthRoute = route({
  method: "GET",
  url: "/healthz",
  operationId: "getHealth",
  summary: "Liveness: the process answers",
  public: true,
  responses: { 200: z.object({ status: z.literal("ok") }) },
  handle: async () => ({ status: 200, body: { status: "ok" } }),
});
