/**
 * Every route except /healthz and /readyz needs the API token: `Authorization: Bearer
 * <RECLAIM_API_TOKEN>` and nothing after it. Browsers opening the dashboard can use Basic auth instead (any user
 * name, the token as password); its 401 asks for it. Tokens are compared in constant time
 * over their SHA-256 digests, so neither content nor length leaks through timing.
 */
import { createHash, timingSafeEqual } from "node:crypto";
import { ReclaimError } from "@reclaim/core";
import type { FastifyReply, FastifyRequest } from "fastify";

const PUBLIC_PATHS = new Set(["/healthz", "/readyz"]);
const digest = (value: string) => createHash("sha256").update(value).digest();

/** `<scheme> <credentials>` (RFC 9110 §11.4): one credentials value, nothing after it. */
const CREDENTIALS = /^([A-Za-z][A-Za-z0-9!#$%&'*+.^_`|~-]*) +(\S+) *$/;

function presentedToken(header: string | undefined): string | null {
  const match = header ? CREDENTIALS.exec(header) : null;
  if (!match) return null;
  const [, scheme = "", value = ""] = match;
  if (scheme.toLowerCase() === "bearer") return value;
  if (scheme.toLowerCase() === "basic") {
    const decoded = Buffer.from(value, "base64").toString("utf8");
    const colon = decoded.indexOf(":");
    return colon >= 0 ? decoded.slice(colon + 1) : null;
  }
  return null;
}

export function tokenMatches(expected: string, presented: string | null): boolean {
  if (presented === null) return false;
  return timingSafeEqual(digest(expected), digest(presented));
}

export function authHook(token: string) {
  return async (request: FastifyRequest, reply: FastifyReply): Promise<void> => {
    const path = request.url.split("?", 1)[0]!;
    if (PUBLIC_PATHS.has(path)) return;
    if (tokenMatches(token, presentedToken(request.headers.authorization))) return;
    if (path.startsWith("/admin")) reply.header("www-authenticate", 'Basic realm="reclaim", charset="UTF-8"');
    // Answered here rather than thrown: encapsulated plugins (the dashboard) have their
    // own error handlers, and a refusal must look the same everywhere.
    const refused = new ReclaimError("RECLAIM_ERR_UNAUTHORIZED");
    await reply.code(refused.status).send(refused.toBody());
  };
}
