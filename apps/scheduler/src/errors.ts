/**
 * The API's one error path: everything thrown by a route becomes `{error, message, field?}`
 * with the catalog's status. Fastify's own errors (bad JSON, wrong content type, body too
 * large) are mapped to catalog codes here, by their codes; anything unexpected is a 500
 * whose details go to the log, not to the caller.
 */
import { echo, ReclaimError, type Logger } from "@reclaim/core";
import type { FastifyError, FastifyInstance } from "fastify";

function fromFastify(error: FastifyError): ReclaimError | null {
  switch (error.code) {
    case "FST_ERR_CTP_INVALID_JSON_BODY":
    case "FST_ERR_CTP_EMPTY_JSON_BODY":
      return new ReclaimError("RECLAIM_ERR_VALIDATION", { message: `body: ${error.message}`, field: "body" });
    case "FST_ERR_CTP_INVALID_MEDIA_TYPE":
    case "FST_ERR_CTP_INVALID_CONTENT_LENGTH":
      return new ReclaimError("RECLAIM_ERR_UNSUPPORTED_MEDIA_TYPE", { message: error.message });
    case "FST_ERR_CTP_BODY_TOO_LARGE":
      return new ReclaimError("RECLAIM_ERR_BODY_TOO_LARGE");
    default:
      if (error.statusCode && error.statusCode >= 400 && error.statusCode < 500) {
        return new ReclaimError("RECLAIM_ERR_VALIDATION", { message: error.message });
      }
      return null;
  }
}

export function installErrorHandling(app: FastifyInstance, log: Logger): void {
  app.setErrorHandler((error: FastifyError, request, reply) => {
    const known = error instanceof ReclaimError ? error : fromFastify(error);
    if (known) {
      void reply.status(known.status).send(known.toBody());
      return;
    }
    log.error("request failed", { method: request.method, url: request.url, error });
    const internal = new ReclaimError("RECLAIM_ERR_INTERNAL");
    void reply.status(internal.status).send(internal.toBody());
  });
  app.setNotFoundHandler((request, reply) => {
    const missing = new ReclaimError("RECLAIM_ERR_NOT_FOUND", {
      message: `No route ${request.method} ${echo(request.url.split("?")[0]!)}`,
    });
    void reply.status(missing.status).send(missing.toBody());
  });
}
