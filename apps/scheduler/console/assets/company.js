// @ts-check
/** Company page: the figures, plots and reports of one company (or `instance`), and its restore points by status. */
import { api, query } from "./api.js";
import { h, table } from "./dom.js";
import { errorBox } from "./errors.js";
import { bytes, count, time } from "./format.js";
import { reportsSection } from "./reports.js";
import { bucketPicker, plots, reclaimedCell, WINDOWS } from "./stats-view.js";

/** @param {string} companyId */
async function restorePoints(companyId) {
  const section = h("section", { id: "restore-points" }, h("h2", {}, "Restore points by status"));
  if (companyId === "instance")
    return (
      section.appendChild(h("p", { class: "muted" }, "Restore points always belong to a company.")) && section
    );
  try {
    const { statuses } = await api(`/v1/stats/restore-points${query({ companyId })}`);
    section.append(
      statuses.length
        ? table(
            [
              "Status",
              { text: "Restore points", num: true },
              { text: "Bytes", num: true },
              "Oldest",
              "Newest",
            ],
            statuses.map((/** @type {any} */ s) => [
              s.status,
              {
                text: count(s.count),
                num: true,
                attrs: { "data-status": s.status, "data-count": String(s.count) },
              },
              { text: bytes(s.bytes), num: true },
              time(s.oldest),
              time(s.newest),
            ]),
          )
        : h("p", { class: "muted" }, "No restore points."),
    );
  } catch (error) {
    section.append(errorBox(error));
  }
  return section;
}

/** @param {HTMLElement} main @param {string} companyId */
export async function companyPage(main, companyId) {
  const [totals, figures, { reports }, points] = await Promise.all([
    api(`/v1/stats/totals${query({ companyId })}`),
    plots({ companyId }),
    api(`/v1/reports${query({ companyId, limit: 20 })}`),
    restorePoints(companyId),
  ]);
  main.replaceChildren(
    h("h1", {}, "Company ", h("code", {}, companyId)),
    table(
      [
        "Domain",
        ...WINDOWS.map((w) => ({ text: `Reclaimed ${w}`, num: true })),
        { text: "Kept 30 d", num: true },
      ],
      totals.domains.map((/** @type {any} */ d) => [
        h("a", { href: `/console/domains/${d.domain}?companyId=${encodeURIComponent(companyId)}` }, d.domain),
        ...WINDOWS.map((w) => reclaimedCell(d.domain, w, d.windows[w])),
        { text: count(d.windows["30d"].kept), num: true },
      ]),
      { id: "domains" },
    ),
    bucketPicker(),
    figures,
    reportsSection(reports, { companyId }),
    points,
  );
}
