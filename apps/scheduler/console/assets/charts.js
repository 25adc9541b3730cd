// @ts-check
/**
 * Time-series plots with uPlot (served from /console/vendor, no CDN), fed by the dense
 * `{buckets, series}` the `GET /v1/stats/*` routes answer with. Each plot comes with a table
 * of every series' total over the range, the figures a reader (and the browser tests) can
 * check against the API.
 */
import uPlot from "../vendor/uPlot.esm.js";
import { h, table } from "./dom.js";
import { bytes, count } from "./format.js";

const PALETTE = ["#2457c5", "#d97706", "#059669", "#b42318", "#7c3aed", "#0e7490", "#a16207", "#be185d"];

/**
 * Each plot is drawn when its element first has a width (it is built before the page puts it in
 * the document) and follows its element's width from then on.
 * @type {Map<Element, { chart?: uPlot, draw: (width: number) => uPlot }>}
 */
const plots = new Map();
const sizes = new ResizeObserver((entries) => {
  for (const entry of entries) {
    const plot = plots.get(entry.target);
    const width = Math.floor(entry.contentRect.width);
    if (!plot || width <= 0) continue;
    if (plot.chart) plot.chart.setSize({ width, height: 240 });
    else plot.chart = plot.draw(width);
  }
});

/**
 * @typedef {{ bucket: string, buckets: string[], series: { entries: number[], bytes: number[], [key: string]: unknown }[] }} SeriesBody
 * @param {string} title
 * @param {SeriesBody} body
 * @param {{ key: "domain" | "reason", measure: "bytes" | "entries", id: string }} options
 * @returns {HTMLElement}
 */
export function seriesPlot(title, body, options) {
  const format = options.measure === "bytes" ? bytes : count;
  const chartEl = h("div", { class: "chart" });
  const series = body.series.map((s) => ({ key: String(s[options.key]), values: s[options.measure] }));
  const totals = table(
    [options.key === "domain" ? "Domain" : "Reason", { text: `Total (${body.bucket} buckets)`, num: true }],
    series.map((s) => {
      const total = s.values.reduce((a, b) => a + b, 0);
      return [
        s.key,
        { text: format(total), num: true, attrs: { "data-series": s.key, "data-total": String(total) } },
      ];
    }),
    { class: "series-totals" },
  );
  const section = h(
    "section",
    { class: "plot", id: options.id, "data-plot": options.id },
    h("h3", {}, title),
    series.length ? chartEl : h("p", { class: "muted" }, "Nothing recorded in this range."),
    series.length ? totals : null,
  );
  if (!series.length) return section;
  const xs = body.buckets.map((b) => Date.parse(b) / 1000);
  const draw = (/** @type {number} */ width) => {
    const chart = new uPlot(
      {
        width,
        height: 240,
        scales: { x: { time: true } },
        axes: [{}, { values: (_u, ticks) => ticks.map((t) => format(t)), size: 70 }],
        series: [
          { label: "time" },
          ...series.map((s, i) => ({
            label: s.key,
            stroke: PALETTE[i % PALETTE.length],
            width: 2,
            points: { show: xs.length < 60 },
            value: (/** @type {uPlot} */ _u, /** @type {number | null} */ v) =>
              v === null ? "—" : format(v),
          })),
        ],
      },
      [xs, ...series.map((s) => s.values)],
      chartEl,
    );
    chartEl.dataset.rendered = "true";
    return chart;
  };
  plots.set(chartEl, { draw });
  sizes.observe(chartEl);
  return section;
}
