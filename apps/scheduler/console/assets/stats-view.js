// @ts-check
/** The figures every page shows for its filter: per-domain windows and the two time series. */
import { api, query } from "./api.js";
import { seriesPlot } from "./charts.js";
import { h } from "./dom.js";
import { bytes, count } from "./format.js";

export const WINDOWS = ["24h", "7d", "30d"];

/**
 * A reclaimed-bytes cell of a domain and window, with the exact figure in data attributes.
 * @param {string} domain @param {string} window @param {Record<string, number>} figures
 */
export function reclaimedCell(domain, window, figures) {
  return {
    text: bytes(figures.reclaimedBytes ?? 0),
    num: true,
    attrs: {
      "data-cell": `${domain}:reclaimed:${window}`,
      "data-bytes": String(figures.reclaimedBytes ?? 0),
      title: `${count(figures.removed ?? 0)} removed`,
    },
  };
}

/** The bucket size the page was asked for (`?bucket=hour`), else days. */
export function bucketOf() {
  return new URLSearchParams(location.search).get("bucket") === "hour" ? "hour" : "day";
}

/** A select that reloads the page with another bucket size. */
export function bucketPicker() {
  const select = /** @type {HTMLSelectElement} */ (
    h(
      "select",
      {
        name: "bucket",
        onchange: (event) => {
          const url = new URL(location.href);
          url.searchParams.set("bucket", /** @type {HTMLSelectElement} */ (event.target).value);
          location.assign(url.toString());
        },
      },
      h("option", { value: "day" }, "Days (last 30)"),
      h("option", { value: "hour" }, "Hours (last 48)"),
    )
  );
  select.value = bucketOf();
  return h("label", { class: "toolbar" }, "Plot buckets ", select);
}

/**
 * The two plots for a filter: reclaimed bytes per domain, entries kept per reason.
 * @param {{ domain?: string, companyId?: string }} filter
 */
export async function plots(filter) {
  const params = query({ ...filter, bucket: bucketOf() });
  const [reclaimed, skips] = await Promise.all([
    api(`/v1/stats/reclaimed${params}`),
    api(`/v1/stats/skips${params}`),
  ]);
  return h(
    "div",
    { class: "plots" },
    seriesPlot("Reclaimed bytes per domain", reclaimed, {
      key: "domain",
      measure: "bytes",
      id: "plot-reclaimed",
    }),
    seriesPlot("Entries kept, by reason", skips, { key: "reason", measure: "entries", id: "plot-skips" }),
  );
}
