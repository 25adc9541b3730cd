/**
 * The console's session cookie: what the login form sets once it was given the API token, so
 * a browser need not send the token with every request. The value is `<expiry>.<nonce>.<mac>`,
 * the MAC an HMAC-SHA256 over `<expiry>.<nonce>` with a key derived from the API token: only
 * this scheduler (or a replica with the same token) can issue one, changing the token ends
 * every session, and nothing secret is in the cookie. Verified in constant time.
 *
 * The cookie is HttpOnly (no script reads it) and SameSite=Strict (no other site's page can
 * make the browser send it); requests it authenticates that change something must also come
 * from the console's own origin (auth.ts), and it is Secure when the request came over TLS.
 */
import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";

export const SESSION_COOKIE = "reclaim_session";
/** How long a login lasts. */
export const SESSION_TTL_MS = 12 * 3_600_000;

const keyOf = (token: string) => createHmac("sha256", token).update("reclaim console session v1").digest();
const macOf = (key: Buffer, payload: string) => createHmac("sha256", key).update(payload).digest("base64url");

export function issueSession(token: string, now: Date): string {
  const payload = `${(now.getTime() + SESSION_TTL_MS).toString(36)}.${randomBytes(12).toString("base64url")}`;
  return `${payload}.${macOf(keyOf(token), payload)}`;
}

export function sessionValid(token: string, value: string | undefined, now: Date): boolean {
  if (!value || value.length > 200) return false;
  const parts = value.split(".");
  if (parts.length !== 3) return false;
  const [expiry = "", nonce = "", mac = ""] = parts;
  const expected = Buffer.from(macOf(keyOf(token), `${expiry}.${nonce}`));
  const presented = Buffer.from(mac);
  if (presented.length !== expected.length || !timingSafeEqual(presented, expected)) return false;
  const expiresAt = parseInt(expiry, 36);
  return Number.isFinite(expiresAt) && expiresAt > now.getTime();
}

/** The cookie named `name` of a Cookie header, or undefined. */
export function cookieValue(header: string | undefined, name: string): string | undefined {
  if (!header) return undefined;
  for (const part of header.split(";")) {
    const eq = part.indexOf("=");
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}

export function sessionCookie(value: string, secure: boolean): string {
  const attributes = [`Path=/`, `Max-Age=${SESSION_TTL_MS / 1000}`, "HttpOnly", "SameSite=Strict"];
  if (secure) attributes.push("Secure");
  return `${SESSION_COOKIE}=${value}; ${attributes.join("; ")}`;
}

export function clearedSessionCookie(): string {
  return `${SESSION_COOKIE}=; Path=/; Max-Age=0; HttpOnly; SameSite=Strict`;
}
