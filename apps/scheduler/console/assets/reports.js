// @ts-check
/** The latest reports of a domain or company, and the entries of one (removed, kept with reason, failed). */
import { api, query } from "./api.js";
import { h, replace, table } from "./dom.js";
import { bytes, count, time } from "./format.js";
import { errorBox } from "./errors.js";

/**
 * @typedef {{ id: string, outcome: string, reason?: string, bytes?: number, companyId?: string | null }} Entry
 * @typedef {{ id: string, domain: string, companyId: string | null, dryRun: boolean, checked: number,
 *   candidates: number, removed: number, reclaimedBytes: number, skipped: Record<string, number>,
 *   error: string | null, nextCursor: string | null, finishedAt: string, entries?: Entry[] }} Report
 */

/** @param {Entry[]} entries */
export function entriesTable(entries) {
  if (!entries.length) return h("p", { class: "muted" }, "No entries.");
  return h(
    "div",
    { class: "scroll" },
    table(
      ["Entry", "Outcome", "Reason", { text: "Bytes", num: true }, "Company"],
      entries.map((e) => [
        e.id,
        e.outcome === "skipped" ? "kept" : e.outcome,
        e.reason ?? "",
        { text: e.bytes === undefined ? "" : bytes(e.bytes), num: true },
        e.companyId ?? "",
      ]),
      { class: "entries" },
    ),
  );
}

/**
 * @param {Report[]} reports
 * @param {{ companyId?: string }} scope  a company page opens entries through its own filter
 */
export function reportsSection(reports, scope = {}) {
  const detail = h("div", { class: "report-entries" });
  /** @param {Report} report */
  const open = async (report) => {
    replace(detail, h("p", { class: "muted" }, "Loading entries…"));
    try {
      const body = await api(`/v1/reports/${report.id}${query({ companyId: scope.companyId })}`);
      replace(
        detail,
        h("h3", {}, `Entries of the ${report.domain} report of ${time(report.finishedAt)}`),
        entriesTable(body.report.entries ?? []),
      );
    } catch (error) {
      replace(detail, errorBox(error));
    }
  };
  const rows = reports.map((r) => [
    time(r.finishedAt),
    h("a", { href: `/console/domains/${r.domain}` }, r.domain),
    r.companyId ? h("a", { href: `/console/companies/${r.companyId}` }, r.companyId.slice(0, 8)) : "instance",
    r.dryRun ? "dry run" : "",
    { text: count(r.checked), num: true },
    { text: count(r.candidates), num: true },
    { text: count(r.removed), num: true },
    { text: bytes(r.reclaimedBytes), num: true },
    { text: count(Object.values(r.skipped).reduce((a, b) => a + b, 0)), num: true },
    r.error ?? "",
    h("button", { type: "button", "data-report": r.id, onclick: () => void open(r) }, "Entries"),
  ]);
  return h(
    "section",
    { id: "reports" },
    h("h2", {}, "Latest reports"),
    reports.length
      ? table(
          [
            "Finished",
            "Domain",
            "Company",
            "",
            { text: "Checked", num: true },
            { text: "Candidates", num: true },
            { text: "Removed", num: true },
            { text: "Reclaimed", num: true },
            { text: "Kept", num: true },
            "Error",
            "",
          ],
          rows,
          { class: "reports" },
        )
      : h("p", { class: "muted" }, "No reports yet."),
    detail,
  );
}
