// @ts-check
/**
 * The console reads and writes only through the JSON API, authenticated by the session cookie
 * the login form set. A failed call throws an ApiError carrying the API's `{error, message,
 * field}` body, which the page shows as it is.
 */

export class ApiError extends Error {
  /** @param {number} status @param {{ error?: string, message?: string, field?: string }} body */
  constructor(status, body) {
    super(`${status} ${body.error ?? ""}: ${body.message ?? ""}`);
    this.status = status;
    this.body = body;
  }
}

/**
 * @param {string} path
 * @param {{ method?: string, body?: unknown }} [init]
 * @returns {Promise<any>}
 */
export async function api(path, init = {}) {
  const response = await fetch(path, {
    method: init.method ?? "GET",
    credentials: "same-origin",
    headers:
      init.body === undefined ? { accept: "application/json" } : { "content-type": "application/json" },
    body: init.body === undefined ? undefined : JSON.stringify(init.body),
  });
  if (response.status === 401) {
    location.assign(`/console/login?next=${encodeURIComponent(location.pathname)}`);
    throw new ApiError(401, { error: "RECLAIM_ERR_UNAUTHORIZED", message: "session ended" });
  }
  const body = await response.json().catch(() => ({}));
  if (!response.ok) throw new ApiError(response.status, body);
  return body;
}

/** Query string of the defined values. @param {Record<string, string | number | undefined>} params */
export function query(params) {
  const search = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== "") search.set(k, String(v));
  const text = search.toString();
  return text ? `?${text}` : "";
}
