import http from "node:http";
import https from "node:https";

/** A socket that carried no bytes for the idle limit; mapped to RECLAIM_ERR_STORAGE_UNAVAILABLE. */
export class S3IdleTimeout extends Error {
  readonly code = "ETIMEDOUT";

  constructor(ms: number) {
    super(`no data from the S3 server for ${ms} ms`);
  }
}

/**
 * The minio client's HTTP transport with an idle limit per request. Without it, a server that
 * accepts connections but stops answering (a full Ceph OSD blocks its clients) hangs an
 * upload, a read-back or a restore forever; with it the request fails as retryable
 * unavailability. The limit is on silence, not on total time, so multi-GiB transfers that
 * keep moving are never cut off.
 */
export function idleLimitedTransport(useSSL: boolean, idleMs: number): Pick<typeof http, "request"> {
  const base = useSSL ? https : http;
  return {
    request: ((options: http.RequestOptions, callback?: (response: http.IncomingMessage) => void) => {
      const request = base.request(options, callback);
      request.setTimeout(idleMs, () => request.destroy(new S3IdleTimeout(idleMs)));
      return request;
    }) as typeof http.request,
  };
}
