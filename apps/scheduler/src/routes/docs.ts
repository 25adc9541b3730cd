import { z } from "zod";
import { route } from "./route";

export function docsRoute(document: () => unknown) {
  return route({
    method: "GET",
    url: "/docs",
    operationId: "getOpenApiDocument",
    summary: "This OpenAPI document",
    responses: {
      200: z
        .looseObject({ openapi: z.literal("3.1.0"), info: z.looseObject({}), paths: z.looseObject({}) })
        .describe("OpenAPI 3.1 document"),
    },
    handle: async () => ({ status: 200, body: document(), contentType: "application/json; charset=utf-8" }),
  });
}
