// @ts-check
/**
 * A dry-run diagnosis from the domain page: POST /v1/sweeps {dryRun: true}, then GET
 * /v1/jobs/:jobId until the job finished, then its report's candidates and skips. "Continue"
 * asks for the next batch with the report's nextCursor.
 */
import { api } from "./api.js";
import { h, replace, table } from "./dom.js";
import { bytes, count } from "./format.js";
import { errorBox } from "./errors.js";
import { entriesTable } from "./reports.js";

const POLL_MS = 400;
const GIVE_UP_MS = 120_000;

/** @param {string} jobId */
async function finished(jobId) {
  const started = Date.now();
  for (;;) {
    const job = await api(`/v1/jobs/${encodeURIComponent(jobId)}`);
    if (job.state === "completed" || job.state === "failed") return job;
    if (Date.now() - started > GIVE_UP_MS) throw new Error(`job ${jobId} is still ${job.state}`);
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
}

/** @param {string} domain @param {string | undefined} companyId */
export function diagnosisSection(domain, companyId) {
  const results = h("div", { class: "diagnosis-results" });
  const input = /** @type {HTMLInputElement} */ (
    h("input", {
      name: "companyId",
      placeholder: "company id (empty: instance)",
      size: 38,
      value: companyId ?? "",
    })
  );
  const button = /** @type {HTMLButtonElement} */ (h("button", { type: "submit" }, "Run dry-run diagnosis"));

  /** @param {string | undefined} cursor @param {number} page */
  const run = async (cursor, page) => {
    const block = h(
      "div",
      { class: "diagnosis", "data-page": String(page) },
      h("p", { class: "muted" }, "Running…"),
    );
    results.append(block);
    button.disabled = true;
    try {
      const company = input.value.trim();
      const { jobId } = await api("/v1/sweeps", {
        method: "POST",
        body: {
          domain,
          dryRun: true,
          ...(company ? { companyId: company } : {}),
          ...(cursor ? { cursor } : {}),
        },
      });
      const job = await finished(jobId);
      const report = job.report;
      if (!report) throw new Error(`job ${jobId} ${job.state} without a report`);
      const entries = report.entries ?? [];
      const candidates = entries.filter((/** @type {{outcome: string}} */ e) => e.outcome === "candidate");
      const others = entries.filter((/** @type {{outcome: string}} */ e) => e.outcome !== "candidate");
      replace(
        block,
        h(
          "h3",
          {},
          `Batch ${page}: ${count(report.checked)} checked, ${count(report.candidates)} candidates (${bytes(report.candidateBytes)})`,
        ),
        report.error ? h("p", { class: "error" }, report.error) : "",
        h("h4", {}, "Candidates"),
        h("div", { class: "candidates" }, entriesTable(candidates)),
        h("h4", {}, "Kept and why"),
        table(
          ["Reason", { text: "Entries", num: true }],
          Object.entries(/** @type {Record<string, number>} */ (report.skipped)).map(([reason, n]) => [
            reason,
            { text: count(n), num: true },
          ]),
          { class: "skips" },
        ),
        h("div", { class: "kept" }, entriesTable(others)),
        report.nextCursor
          ? h(
              "button",
              {
                type: "button",
                class: "continue",
                // Once: the next batch is asked for with this cursor exactly once.
                onclick: (event) => {
                  /** @type {HTMLButtonElement} */ (event.currentTarget).disabled = true;
                  void run(report.nextCursor, page + 1);
                },
              },
              "Continue",
            )
          : h("p", { class: "muted done" }, "Diagnosis complete: nothing further to check."),
      );
    } catch (error) {
      replace(block, errorBox(error));
    } finally {
      button.disabled = false;
    }
  };

  const form = h(
    "form",
    {
      class: "toolbar",
      onsubmit: (event) => {
        event.preventDefault();
        results.replaceChildren();
        void run(undefined, 1);
      },
    },
    input,
    button,
  );
  return h(
    "section",
    { id: "diagnosis" },
    h("h2", {}, "Dry-run diagnosis"),
    h(
      "p",
      { class: "muted" },
      "Lists every candidate and every entry kept, with its reason, without removing anything.",
    ),
    form,
    results,
  );
}
