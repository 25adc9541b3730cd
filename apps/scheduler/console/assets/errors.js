// @ts-check
/** An API failure as the page shows it: the status and the API's own `{error, message}` body. */
import { ApiError } from "./api.js";
import { h } from "./dom.js";

/** @param {unknown} error */
export function errorBox(error) {
  if (error instanceof ApiError) {
    return h(
      "p",
      { class: "error", role: "alert", "data-status": String(error.status) },
      `${error.status} ${error.body.error ?? ""}: ${error.body.message ?? ""}`,
    );
  }
  return h("p", { class: "error", role: "alert" }, String(error));
}
