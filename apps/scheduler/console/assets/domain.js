// @ts-check
/** Domain page: configuration and controls, its figures and plots, a dry-run diagnosis, its latest reports. */
import { api, query } from "./api.js";
import { diagnosisSection } from "./diagnosis.js";
import { h, table } from "./dom.js";
import { bytes, count, time } from "./format.js";
import { queueText, stateBadge } from "./overview.js";
import { reportsSection } from "./reports.js";
import { bucketPicker, plots, reclaimedCell, WINDOWS } from "./stats-view.js";

/** @param {HTMLElement} main @param {string} id @param {string | undefined} companyId */
export async function domainPage(main, id, companyId) {
  const [{ domains }, totals, figures, { reports }] = await Promise.all([
    api("/v1/domains"),
    api(`/v1/stats/totals${query({ domain: id, companyId })}`),
    plots({ domain: id, companyId }),
    api(`/v1/reports${query({ domain: id, companyId, limit: 20 })}`),
  ]);
  const d = domains.find((/** @type {{ id: string }} */ x) => x.id === id);
  const w = totals.domains[0]?.windows ?? {};
  main.replaceChildren(
    h("h1", {}, `${d.title ?? id} `, h("code", {}, id), " ", stateBadge(d)),
    companyId
      ? h(
          "p",
          {},
          "Filtered to company ",
          h("code", {}, companyId),
          " · ",
          h("a", { href: `/console/domains/${id}` }, "all companies"),
        )
      : "",
    h("p", {}, `Next deadline: ${time(d.nextDeadline)} · Queue: ${queueText(d.queue)}`),
    table(
      [
        "Window",
        { text: "Reclaimed", num: true },
        { text: "Removed", num: true },
        { text: "Kept", num: true },
        { text: "Failed", num: true },
        { text: "Dry-run candidates", num: true },
      ],
      WINDOWS.map((win) => [
        win,
        reclaimedCell(id, win, w[win] ?? {}),
        { text: count(w[win]?.removed ?? 0), num: true },
        { text: count(w[win]?.kept ?? 0), num: true },
        { text: count(w[win]?.failed ?? 0), num: true },
        {
          text: `${count(w[win]?.dryRunCandidates ?? 0)} (${bytes(w[win]?.dryRunCandidateBytes ?? 0)})`,
          num: true,
        },
      ]),
      { id: "windows" },
    ),
    bucketPicker(),
    figures,
    diagnosisSection(id, companyId),
    reportsSection(reports, { companyId }),
    h("h2", {}, "Configuration"),
    table(
      ["Variable", "Value", "Default", "Effect"],
      d.controls.map((/** @type {any} */ c) => [
        h("code", {}, c.env),
        JSON.stringify(c.value),
        c.default ?? "",
        c.description,
      ]),
      { id: "config" },
    ),
  );
}
