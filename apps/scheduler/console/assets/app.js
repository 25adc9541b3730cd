// @ts-check
/**
 * The console's entry point: one HTML shell for every page; the path says which page this is
 * (/console, /console/domains/:id, /console/companies/:id, with ?companyId= and ?bucket=).
 */
import { companyPage } from "./company.js";
import { domainPage } from "./domain.js";
import { h } from "./dom.js";
import { errorBox } from "./errors.js";
import { overviewPage } from "./overview.js";

const main = /** @type {HTMLElement} */ (document.getElementById("page"));
const filter = /** @type {HTMLFormElement} */ (document.getElementById("company-filter"));
const [, , kind, id] = location.pathname.split("/").map(decodeURIComponent);
const companyId =
  kind === "companies" ? id : (new URLSearchParams(location.search).get("companyId") ?? undefined);

const filterInput = /** @type {HTMLInputElement} */ (filter.elements.namedItem("companyId"));
filterInput.value = companyId ?? "";
filter.addEventListener("submit", (event) => {
  event.preventDefault();
  const value = filterInput.value.trim();
  location.assign(value ? `/console/companies/${encodeURIComponent(value)}` : "/console");
});

async function render() {
  if (kind === "domains" && id) await domainPage(main, id, companyId);
  else if (kind === "companies" && id) await companyPage(main, id);
  else await overviewPage(main);
  document.body.dataset.ready = "true";
}

render().catch((error) => {
  main.replaceChildren(h("h1", {}, "Reclaim console"), errorBox(error));
  document.body.dataset.ready = "true";
});
