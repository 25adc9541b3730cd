/**
 * Report callbacks are signed: `X-Reclaim-Signature: sha256=<hex HMAC-SHA256 of the raw
 * body>`, keyed with RECLAIM_CALLBACK_SECRET. Receivers recompute it over the bytes they
 * received and compare in constant time (`verifySignature`).
 */
import { createHmac, timingSafeEqual } from "node:crypto";

export const SIGNATURE_HEADER = "x-reclaim-signature";

export function sign(body: string, secret: string): string {
  return `sha256=${createHmac("sha256", secret).update(body).digest("hex")}`;
}

export function verifySignature(body: string, secret: string, header: string | undefined): boolean {
  if (!header) return false;
  const expected = Buffer.from(sign(body, secret));
  const given = Buffer.from(header);
  return expected.length === given.length && timingSafeEqual(expected, given);
}
