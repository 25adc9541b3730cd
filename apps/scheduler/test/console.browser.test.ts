/**
 * The operator console in a real browser: Debian's Chromium (installed by the test setup,
 * scripts/chromium.sh) driven with playwright-core against a running scheduler and worker with
 * real PostgreSQL and Redis, seeded reports and real sync folders. It logs in, reads the
 * figures the pages show for the seeded totals, opens a domain, runs a dry-run diagnosis and
 * follows "Continue", filters by company (and never sees another company's entries), is
 * refused with a wrong token, and logs no console error. A screenshot of each page is written
 * to a temporary folder (RECLAIM_CONSOLE_SCREENSHOTS=<dir> keeps them there;
 * RECLAIM_CONSOLE_DOCS_SCREENSHOT=1 also writes docs/console-overview.png).
 */
import { randomUUID } from "node:crypto";
import { mkdirSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import type { Page } from "playwright-core";
import { startStack, TEST_TOKEN, type Stack } from "@reclaim/testkit";
import { launchChromium, type TestBrowser } from "@reclaim/testkit/src/browser";
import { insertRun, makeFolder } from "@reclaim/testkit/src/fixtures/native-workspace-sync";
import { seedReport } from "@reclaim/testkit/src/fixtures/reports";
import { insertIssue, insertRestorePoint } from "@reclaim/testkit/src/fixtures/restore-points";

const NWS = "native-workspace-sync";
const SVC = "skill-version-caches";
const MIB = 1024 * 1024;
const HOUR = 3_600_000;
const A = randomUUID();
const B = randomUUID();
/** The company whose 55 settled runs the diagnosis finds: one full batch of 50, then 5. */
const C = randomUUID();
const shots =
  process.env.RECLAIM_CONSOLE_SCREENSHOTS ?? path.join(tmpdir(), `reclaim-console-${process.pid}`);

let stack: Stack;
let base: string;
let browser: TestBrowser;
let page: Page;
const consoleErrors: string[] = [];
const runsOfC: string[] = [];

beforeAll(async () => {
  mkdirSync(shots, { recursive: true });
  stack = await startStack({
    // Dry run, so the start-up discovery leaves C's folders for the diagnosis.
    env: {
      PAPERCLIP_NATIVE_WORKSPACE_SYNC_RETENTION_DRY_RUN: "true",
      // Restore points stay as seeded (a disabled domain reviews nothing).
      RECLAIM_RESTORE_POINT_RETENTION_ENABLED: "false",
    },
    seed: async ({ db, instanceRoot }) => {
      const ago = (ms: number) => new Date(Date.now() - ms);
      await seedReport(db, {
        domain: NWS,
        companyId: A,
        finishedAt: ago(HOUR),
        entries: [
          { id: "native-workspace-sync/run-a1", outcome: "removed", bytes: 3 * MIB },
          { id: "native-workspace-sync/run-a2", outcome: "removed", bytes: 1 * MIB },
          { id: "native-workspace-sync/run-a3", outcome: "skipped", reason: "run_active" },
        ],
      });
      await seedReport(db, {
        domain: NWS,
        companyId: A,
        finishedAt: ago(72 * HOUR),
        entries: [{ id: "native-workspace-sync/run-a4", outcome: "removed", bytes: 6 * MIB }],
      });
      await seedReport(db, {
        domain: NWS,
        companyId: B,
        finishedAt: ago(HOUR),
        entries: [
          { id: "native-workspace-sync/secret-of-b", outcome: "removed", bytes: MIB / 2 },
          { id: "native-workspace-sync/kept-of-b", outcome: "skipped", reason: "lease_active" },
        ],
      });
      await seedReport(db, {
        domain: SVC,
        companyId: B,
        finishedAt: ago(2 * HOUR),
        entries: [{ id: "skills/b/__versions__/x/1", outcome: "removed", bytes: 2 * MIB }],
      });
      const issue = await insertIssue({ db }, { companyId: A });
      await insertRestorePoint({ db }, { companyId: A, sourceIssueId: issue, status: "active" });
      await insertRestorePoint({ db }, { companyId: A, sourceIssueId: issue, status: "active" });
      await insertRestorePoint({ db }, { companyId: A, sourceIssueId: issue, status: "superseded" });
      for (let i = 0; i < 55; i += 1) {
        const run = await insertRun({ db }, { companyId: C });
        await makeFolder({ instanceRoot }, run, 10, 4096);
        runsOfC.push(run);
      }
    },
  });
  base = await stack.scheduler.listen();
  browser = await launchChromium();
  page = await browser.context.newPage();
  page.on("console", (message) => {
    if (message.type() === "error") consoleErrors.push(`${page.url()}: ${message.text()}`);
  });
  page.on("pageerror", (error) => consoleErrors.push(`${page.url()}: ${error.message}`));
}, 300_000);

afterAll(async () => {
  await browser?.close();
  await stack?.stop();
});

async function ready(p: Page = page): Promise<void> {
  await p.waitForSelector("body[data-ready=true]");
  // Evaluated in the page (a string: this file is type-checked without the DOM library).
  await p.waitForFunction(
    `[...document.querySelectorAll(".plot .chart")].every((c) => c.dataset.rendered === "true")`,
  );
}

const cell = (key: string) => page.locator(`[data-cell="${key}"]`).first().innerText();

async function screenshot(name: string): Promise<void> {
  await page.screenshot({ path: path.join(shots, `${name}.png`), fullPage: true });
  if (name === "overview" && process.env.RECLAIM_CONSOLE_DOCS_SCREENSHOT === "1") {
    await page.screenshot({ path: path.resolve(__dirname, "../../../docs/console-overview.png") });
  }
}

it("a wrong token is refused: the form again, no session, the API still closed", async () => {
  const other = await browser.context.newPage();
  await other.goto(`${base}/console`);
  expect(new URL(other.url()).pathname).toBe("/console/login");
  await other.fill("input[name=token]", "wrong-token-0123456789");
  const [response] = await Promise.all([
    other.waitForResponse(`${base}/console/login`),
    other.click("button[type=submit]"),
  ]);
  expect(response.status()).toBe(401);
  await expect(other.locator(".error").innerText()).resolves.toBe("Wrong token.");
  expect(await browser.context.cookies()).toEqual([]);
  expect((await other.request.get(`${base}/v1/stats/totals`)).status()).toBe(401);
  await other.close();
});

it("logs in and the overview shows the seeded totals, per domain, in the table and the plots", async () => {
  await page.goto(`${base}/console`);
  await page.fill("input[name=token]", TEST_TOKEN);
  await page.click("button[type=submit]");
  await page.waitForURL(`${base}/console`);
  await ready();
  const [cookie] = await browser.context.cookies();
  expect(cookie).toMatchObject({ name: "reclaim_session", httpOnly: true, sameSite: "Strict" });

  expect(await cell(`${NWS}:reclaimed:24h`)).toBe("4.5 MiB");
  expect(await cell(`${NWS}:reclaimed:7d`)).toBe("10.5 MiB");
  expect(await cell(`${NWS}:reclaimed:30d`)).toBe("10.5 MiB");
  expect(await cell(`${SVC}:reclaimed:24h`)).toBe("2.0 MiB");
  const nwsRow = page.locator("#domains tr", { hasText: NWS });
  await expect(nwsRow.locator(".badge").innerText()).resolves.toBe("dry run");

  // The reclaimed-bytes plot: drawn (a canvas), with each domain's total over the 30 days.
  await expect(page.locator("#plot-reclaimed canvas").count()).resolves.toBeGreaterThan(0);
  const total = page.locator(`#plot-reclaimed [data-series="${NWS}"]`);
  expect(await total.innerText()).toBe("10.5 MiB");
  expect(await total.getAttribute("data-total")).toBe(String(10.5 * MIB));
  expect(await page.locator(`#plot-reclaimed [data-series="${SVC}"]`).innerText()).toBe("2.0 MiB");
  expect(await page.locator(`#plot-skips [data-series="run_active"]`).innerText()).toBe("1");

  // Hour buckets: the same figures over the last 48 hours.
  await page.selectOption("select[name=bucket]", "hour");
  await page.waitForURL(/bucket=hour/);
  await ready();
  expect(await page.locator(`#plot-reclaimed [data-series="${NWS}"]`).innerText()).toBe("4.5 MiB");

  for (const [name, href] of [
    ["Queues (bull-board)", "/admin/queues"],
    ["API (/docs)", "/docs"],
    ["Metrics", "/metrics"],
  ]) {
    await expect(page.getByRole("link", { name }).getAttribute("href")).resolves.toBe(href);
  }
  await page.goto(`${base}/console`);
  await ready();
  await screenshot("overview");
});

it("opens a domain, runs a dry-run diagnosis and follows Continue to the next batch", async () => {
  await page.click(`#domains a[href="/console/domains/${NWS}"]`);
  await page.waitForURL(`${base}/console/domains/${NWS}`);
  await ready();
  expect(await cell(`${NWS}:reclaimed:7d`)).toBe("10.5 MiB");
  await expect(page.locator("#config").innerText()).resolves.toContain(
    "PAPERCLIP_NATIVE_WORKSPACE_SYNC_RETENTION_DAYS",
  );

  await page.fill("#diagnosis input[name=companyId]", C);
  await page.click("#diagnosis button[type=submit]");
  const first = page.locator('.diagnosis[data-page="1"]');
  await first.locator(".candidates tbody tr").first().waitFor({ timeout: 60_000 });
  const firstIds = await first.locator(".candidates tbody tr td:first-child").allInnerTexts();
  expect(firstIds).toHaveLength(50);
  await first.locator("button.continue").click();
  const second = page.locator('.diagnosis[data-page="2"]');
  await second.locator(".candidates tbody tr").first().waitFor({ timeout: 60_000 });
  const secondIds = await second.locator(".candidates tbody tr td:first-child").allInnerTexts();
  expect(secondIds).toHaveLength(5);
  await expect(second.locator(".done").count()).resolves.toBe(1);
  // Every settled run of C, once: the two batches together.
  const found = new Set([...firstIds, ...secondIds].map((id) => path.basename(id)));
  expect([...found].sort()).toEqual([...runsOfC].sort());
  await screenshot("domain");
});

it("filters by company: that company's figures, reports and restore points, and nobody else's entries", async () => {
  await page.fill("#company-filter input[name=companyId]", A);
  await page.click("#company-filter button");
  await page.waitForURL(`${base}/console/companies/${A}`);
  await ready();
  expect(await cell(`${NWS}:reclaimed:24h`)).toBe("4.0 MiB");
  expect(await cell(`${NWS}:reclaimed:7d`)).toBe("10.0 MiB");
  expect(await cell(`${SVC}:reclaimed:24h`)).toBe("0 B");
  expect(await page.locator(`#plot-reclaimed [data-series="${NWS}"]`).innerText()).toBe("10.0 MiB");
  await expect(page.locator('#restore-points [data-status="active"]').innerText()).resolves.toBe("2");
  await expect(page.locator('#restore-points [data-status="superseded"]').innerText()).resolves.toBe("1");

  const reports = page.locator("#reports table.reports tbody tr");
  expect(await reports.count()).toBe(2);
  for (const company of await reports.locator("td:nth-child(3)").allInnerTexts())
    expect(company).toBe(A.slice(0, 8));
  await reports.first().locator("button").click();
  await page.locator(".report-entries table.entries").waitFor();
  const text = await page.locator("main").innerText();
  expect(text).toContain("run-a1");
  expect(text).not.toContain("secret-of-b");
  expect(text).not.toContain("kept-of-b");
  await screenshot("company");
});

it("bad page URLs get the API's 404/400 bodies", async () => {
  const domain = await page.request.get(`${base}/console/domains/nope`);
  expect(domain.status()).toBe(404);
  expect((await domain.json()).error).toBe("RECLAIM_ERR_UNKNOWN_DOMAIN");
  const company = await page.request.get(`${base}/console/companies/not-a-uuid`);
  expect([company.status(), (await company.json()).field]).toEqual([400, "companyId"]);
});

it("logging out ends the session", async () => {
  await page.goto(`${base}/console`);
  await ready();
  await page.click("text=Log out");
  await page.waitForURL(`${base}/console/login`);
  expect((await page.request.get(`${base}/v1/stats/totals`)).status()).toBe(401);
});

it("the pages logged no console error", () => {
  expect(consoleErrors).toEqual([]);
});
