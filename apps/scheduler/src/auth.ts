/**
 * Every route except /healthz, /readyz and the console's login page and static assets needs
 * the API token: `Authorization: Bearer <RECLAIM_API_TOKEN>` and nothing after it. Browsers can
 * use Basic auth instead (any user name, the token as password; the dashboard's 401 asks for
 * it), or the console's session cookie, which its login form sets after checking the token
 * (console/session.ts). Tokens are compared in constant time over their SHA-256 digests, so
 * neither content nor length leaks through timing.
 *
 * A request that only the cookie authenticates and that changes something (not GET or HEAD)
 * must come from this server's own origin (its Origin header names the Host it was sent to):
 * SameSite=Strict already keeps other sites from sending the cookie; this holds even for a
 * browser that ignores it. A browser asking for a console page without a session is sent to
 * the login form instead of a 401.
 */
import { createHash, timingSafeEqual } from "node:crypto";
import { ReclaimError, type Clock } from "@reclaim/core";
import type { FastifyReply, FastifyRequest } from "fastify";
import { cookieValue, SESSION_COOKIE, sessionValid } from "./console/session";

const PUBLIC_PATHS = new Set(["/healthz", "/readyz", "/console/login"]);
const PUBLIC_PREFIXES = ["/console/assets/", "/console/vendor/"];
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

export function isPublicPath(path: string): boolean {
  return PUBLIC_PATHS.has(path) || PUBLIC_PREFIXES.some((prefix) => path.startsWith(prefix));
}

/** The Origin header names the host the request was sent to. */
function sameOrigin(request: FastifyRequest): boolean {
  const origin = request.headers.origin;
  if (!origin || !request.headers.host) return false;
  try {
    return new URL(origin).host === request.headers.host;
  } catch {
    return false;
  }
}

export function authHook(token: string, clock: Clock) {
  return async (request: FastifyRequest, reply: FastifyReply): Promise<void> => {
    const path = request.url.split("?", 1)[0]!;
    if (isPublicPath(path)) return;
    if (tokenMatches(token, presentedToken(request.headers.authorization))) return;
    const session = cookieValue(request.headers.cookie, SESSION_COOKIE);
    const safe = request.method === "GET" || request.method === "HEAD";
    if (sessionValid(token, session, clock.now()) && (safe || sameOrigin(request))) return;
    if (path.startsWith("/admin")) reply.header("www-authenticate", 'Basic realm="reclaim", charset="UTF-8"');
    if (safe && path.startsWith("/console") && (request.headers.accept ?? "").includes("text/html")) {
      await reply.redirect(`/console/login?next=${encodeURIComponent(path)}`, 303);
      return;
    }
    // Answered here rather than thrown: encapsulated plugins (the dashboard) have their
    // own error handlers, and a refusal must look the same everywhere.
    const refused = new ReclaimError("RECLAIM_ERR_UNAUTHORIZED");
    await reply.code(refused.status).send(refused.toBody());
  };
}
