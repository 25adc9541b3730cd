import { route } from "./route";

export function docsRoute(document: () => unknown) {
  return route({
    method: "GET",
    url: "/docs",
    operationId: "getOpenApiDocument",
    summary: "This OpenAPI document",
    responses: { 200: "OpenAPI 3.1 document (JSON)" },
    handle: async () => ({ status: 200, body: document(), contentType: "application/json; charset=utf-8" }),
  });
}
