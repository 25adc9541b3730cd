// @ts-check
/** Overview: every domain's state, next deadline, queue and reclaimed bytes; the plots over all domains. */
import { api } from "./api.js";
import { h, table } from "./dom.js";
import { bytes, count, time } from "./format.js";
import { bucketPicker, plots, reclaimedCell, WINDOWS } from "./stats-view.js";

/** @param {{ implemented: boolean, enabled: boolean, dryRun: boolean }} d */
export function stateBadge(d) {
  if (!d.implemented) return h("span", { class: "badge" }, "not implemented");
  if (!d.enabled) return h("span", { class: "badge off" }, "disabled");
  return d.dryRun
    ? h("span", { class: "badge dry" }, "dry run")
    : h("span", { class: "badge on" }, "enabled");
}

/** @param {{ waiting: number, delayed: number, active: number, failed: number } | null} q */
export function queueText(q) {
  return q ? `${q.waiting} waiting · ${q.delayed} delayed · ${q.active} active · ${q.failed} failed` : "—";
}

/** @param {HTMLElement} main */
export async function overviewPage(main) {
  const [{ domains }, totals, figures] = await Promise.all([
    api("/v1/domains"),
    api("/v1/stats/totals"),
    plots({}),
  ]);
  /** @type {Map<string, Record<string, Record<string, number>>>} */
  const windows = new Map(totals.domains.map((/** @type {any} */ d) => [d.domain, d.windows]));
  const rows = domains.map((/** @type {any} */ d) => {
    const w = windows.get(d.id);
    return [
      d.implemented ? h("a", { href: `/console/domains/${d.id}` }, d.id) : d.id,
      stateBadge(d),
      time(d.nextDeadline),
      queueText(d.queue),
      ...WINDOWS.map((win) => (w ? reclaimedCell(d.id, win, w[win] ?? {}) : "")),
      { text: w ? count(w["30d"]?.kept ?? 0) : "", num: true },
      { text: w ? count(w["30d"]?.failed ?? 0) : "", num: true },
      { text: w ? bytes(w["30d"]?.dryRunCandidateBytes ?? 0) : "", num: true },
    ];
  });
  main.replaceChildren(
    h("h1", {}, "Overview"),
    table(
      [
        "Domain",
        "State",
        "Next deadline",
        "Queue",
        { text: "Reclaimed 24 h", num: true },
        { text: "7 d", num: true },
        { text: "30 d", num: true },
        { text: "Kept 30 d", num: true },
        { text: "Failed 30 d", num: true },
        { text: "Dry-run candidates 30 d", num: true },
      ],
      rows,
      { id: "domains" },
    ),
    bucketPicker(),
    figures,
  );
}
