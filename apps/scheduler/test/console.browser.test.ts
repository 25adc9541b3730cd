/**
 * The operator console in real browsers, one flow run in each: Debian's Chromium (playwright-
 * core) and Debian's Firefox ESR (puppeteer-core over WebDriver BiDi), both installed by the test
 * setup (scripts/browsers.sh), against a running scheduler and worker with real PostgreSQL and
 * Redis, seeded reports and real sync folders. It is refused with a wrong token, logs in, reads
 * the figures the pages show for the seeded totals (tables and plot totals), opens a domain,
 * runs a dry-run diagnosis and follows "Continue", filters by company (and never sees another
 * company's entries), and logs no console error. A screenshot of each page is written to
 * RECLAIM_CONSOLE_SCREENSHOTS=<dir>, where they stay; without it, to a temporary folder removed
 * after the test (with RECLAIM_CONSOLE_DOCS_SCREENSHOT=1 Chromium's overview also goes to
 * docs/console-overview.png).
 */
import { randomUUID } from "node:crypto";
import { mkdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { startStack, TEST_TOKEN, type Stack } from "@reclaim/testkit";
import {
  launchBrowser,
  waitForUrl,
  type BrowserDriver,
  type BrowserName,
} from "@reclaim/testkit/src/browser";
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
const keepShots = process.env.RECLAIM_CONSOLE_SCREENSHOTS;
const shots = keepShots ?? path.join(tmpdir(), `reclaim-console-${process.pid}`);

let stack: Stack;
let base: string;
const runsOfC: string[] = [];

beforeAll(async () => {
  mkdirSync(shots, { recursive: true });
  stack = await startStack({
    env: {
      // Dry run, so the start-up discovery leaves C's folders for the diagnosis.
      PAPERCLIP_NATIVE_WORKSPACE_SYNC_RETENTION_DRY_RUN: "true",
      // Restore points stay as seeded (a disabled domain reviews nothing).
      RECLAIM_RESTORE_POINT_RETENTION_ENABLED: "false",
    },
    seed: async ({ db, instanceRoot }) => {
      const ago = (ms: number) => new Date(Date.now() - ms);
      const removed = (id: string, bytes: number) => ({ id, outcome: "removed" as const, bytes });
      await seedReport(db, {
        domain: NWS,
        companyId: A,
        finishedAt: ago(HOUR),
        entries: [
          removed("native-workspace-sync/run-a1", 3 * MIB),
          removed("native-workspace-sync/run-a2", MIB),
          { id: "native-workspace-sync/run-a3", outcome: "skipped", reason: "run_active" },
        ],
      });
      await seedReport(db, {
        domain: NWS,
        companyId: A,
        finishedAt: ago(72 * HOUR),
        entries: [removed("native-workspace-sync/run-a4", 6 * MIB)],
      });
      await seedReport(db, {
        domain: NWS,
        companyId: B,
        finishedAt: ago(HOUR),
        entries: [
          removed("native-workspace-sync/secret-of-b", MIB / 2),
          { id: "native-workspace-sync/kept-of-b", outcome: "skipped", reason: "lease_active" },
        ],
      });
      await seedReport(db, {
        domain: SVC,
        companyId: B,
        finishedAt: ago(2 * HOUR),
        entries: [removed("skills/b/__versions__/x/1", 2 * MIB)],
      });
      const issue = await insertIssue({ db }, { companyId: A });
      for (const status of ["active", "active", "superseded"]) {
        await insertRestorePoint({ db }, { companyId: A, sourceIssueId: issue, status });
      }
      for (let i = 0; i < 55; i += 1) {
        const run = await insertRun({ db }, { companyId: C });
        await makeFolder({ instanceRoot }, run, 10, 4096);
        runsOfC.push(run);
      }
    },
  });
  base = await stack.scheduler.listen();
}, 300_000);

afterAll(async () => {
  await stack?.stop();
  if (!keepShots) rmSync(shots, { recursive: true, force: true });
});

const BROWSERS: BrowserName[] = ["chromium", "firefox"];

describe.each(BROWSERS)("in %s", (name) => {
  let b: BrowserDriver;
  beforeAll(async () => {
    b = await launchBrowser(name);
  }, 300_000);
  afterAll(async () => b?.close());

  const text = (selector: string) =>
    b.evaluate<string | null>(`document.querySelector(${JSON.stringify(selector)})?.innerText ?? null`);
  const texts = (selector: string) =>
    b.evaluate<string[]>(
      `[...document.querySelectorAll(${JSON.stringify(selector)})].map((e) => e.innerText)`,
    );
  const cell = (key: string) => text(`[data-cell="${key}"]`);
  const status = (url: string) =>
    refused(() => b.evaluate<number>(`fetch(${JSON.stringify(url)}).then((r) => r.status)`));
  /**
   * Runs a step that is refused on purpose (a wrong token, a call without a session): Chromium
   * logs the 401 it provokes as a console error, which is the refusal, not a page's fault.
   */
  const refused = async <T>(step: () => Promise<T>): Promise<T> => {
    const before = b.errors.length;
    const result = await step();
    const logged = b.errors.splice(before);
    expect(logged.filter((e) => !e.includes("status of 401"))).toEqual([]);
    return result;
  };
  const ready = async () => {
    await b.waitFor("body[data-ready=true]");
    await b.waitUntil(
      `[...document.querySelectorAll(".plot .chart")].every((c) => c.dataset.rendered === "true")`,
    );
  };
  const screenshot = async (page: string) => {
    await b.screenshot(path.join(shots, `${name}-${page}.png`));
    if (page === "overview" && name === "chromium" && process.env.RECLAIM_CONSOLE_DOCS_SCREENSHOT === "1") {
      await b.screenshot(path.resolve(__dirname, "../../../docs/console-overview.png"));
    }
  };

  it("a wrong token is refused: the form again, no session, the API still closed", async () => {
    await b.goto(`${base}/console`);
    expect(new URL(b.url()).pathname).toBe("/console/login");
    await b.fill("input[name=token]", "wrong-token-0123456789");
    await refused(async () => {
      await b.click("button[type=submit]");
      await b.waitFor(".error");
    });
    expect(await text(".error")).toBe("Wrong token.");
    expect(await b.cookies()).toEqual([]);
    expect(await status(`${base}/v1/stats/totals`)).toBe(401);
  });

  it("logs in, and the overview shows the seeded totals per domain, in the table and the plots", async () => {
    await b.goto(`${base}/console/login`);
    await b.fill("input[name=token]", TEST_TOKEN);
    await b.click("button[type=submit]");
    await waitForUrl(b, (u) => u.pathname === "/console");
    await ready();
    const cookies = await b.cookies();
    expect(cookies).toEqual([expect.objectContaining({ name: "reclaim_session", httpOnly: true })]);
    expect(cookies[0]!.sameSite.toLowerCase()).toBe("strict");

    expect(await cell(`${NWS}:reclaimed:24h`)).toBe("4.5 MiB");
    expect(await cell(`${NWS}:reclaimed:7d`)).toBe("10.5 MiB");
    expect(await cell(`${NWS}:reclaimed:30d`)).toBe("10.5 MiB");
    expect(await cell(`${SVC}:reclaimed:24h`)).toBe("2.0 MiB");
    expect(await texts(`#domains a[href="/console/domains/${NWS}"] ~ *, #domains tr .badge`)).toContain(
      "dry run",
    );

    // The reclaimed-bytes plot is drawn, with each domain's total over the 30 days beside it.
    expect(
      await b.evaluate<number>(`document.querySelectorAll("#plot-reclaimed canvas").length`),
    ).toBeGreaterThan(0);
    expect(await text(`#plot-reclaimed [data-series="${NWS}"]`)).toBe("10.5 MiB");
    expect(
      await b.evaluate(`document.querySelector('#plot-reclaimed [data-series="${NWS}"]').dataset.total`),
    ).toBe(String(10.5 * MIB));
    expect(await text(`#plot-reclaimed [data-series="${SVC}"]`)).toBe("2.0 MiB");
    expect(await text(`#plot-skips [data-series="run_active"]`)).toBe("1");
    const links = await b.evaluate<string[]>(
      `[...document.querySelectorAll("header nav a")].map((a) => a.getAttribute("href"))`,
    );
    expect(links).toEqual(expect.arrayContaining(["/admin/queues", "/docs", "/metrics"]));
    await screenshot("overview");

    // Hour buckets: the same figures over the last 48 hours.
    await b.select("select[name=bucket]", "hour");
    await waitForUrl(b, (u) => u.searchParams.get("bucket") === "hour");
    await ready();
    expect(await text(`#plot-reclaimed [data-series="${NWS}"]`)).toBe("4.5 MiB");
  });

  it("opens a domain, runs a dry-run diagnosis and follows Continue to the next batch", async () => {
    await b.goto(`${base}/console`);
    await ready();
    await b.click(`#domains a[href="/console/domains/${NWS}"]`);
    await waitForUrl(b, (u) => u.pathname === `/console/domains/${NWS}`);
    await ready();
    expect(await cell(`${NWS}:reclaimed:7d`)).toBe("10.5 MiB");
    expect(await text("#config")).toContain("PAPERCLIP_NATIVE_WORKSPACE_SYNC_RETENTION_DAYS");

    await b.fill("#diagnosis input[name=companyId]", C);
    await b.click("#diagnosis button[type=submit]");
    await b.waitFor('.diagnosis[data-page="1"] .candidates tbody tr', 60_000);
    const firstIds = await texts('.diagnosis[data-page="1"] .candidates tbody tr td:first-child');
    expect(firstIds).toHaveLength(50);
    await b.click('.diagnosis[data-page="1"] button.continue');
    await b.waitFor('.diagnosis[data-page="2"] .candidates tbody tr', 60_000);
    const secondIds = await texts('.diagnosis[data-page="2"] .candidates tbody tr td:first-child');
    expect(secondIds).toHaveLength(5);
    expect(await text('.diagnosis[data-page="2"] .done')).toContain("Diagnosis complete");
    // Every settled run of C, once, across the two batches.
    const found = [...firstIds, ...secondIds].map((id) => path.basename(id)).sort();
    expect(found).toEqual([...runsOfC].sort());
    await screenshot("domain");
  });

  it("filters by company: that company's figures, reports and restore points, and nobody else's entries", async () => {
    await b.fill("#company-filter input[name=companyId]", A);
    await b.click("#company-filter button");
    await waitForUrl(b, (u) => u.pathname === `/console/companies/${A}`);
    await ready();
    expect(await cell(`${NWS}:reclaimed:24h`)).toBe("4.0 MiB");
    expect(await cell(`${NWS}:reclaimed:7d`)).toBe("10.0 MiB");
    expect(await cell(`${SVC}:reclaimed:24h`)).toBe("0 B");
    expect(await text(`#plot-reclaimed [data-series="${NWS}"]`)).toBe("10.0 MiB");
    expect(await text('#restore-points [data-status="active"]')).toBe("2");
    expect(await text('#restore-points [data-status="superseded"]')).toBe("1");

    const companies = await texts("#reports table.reports tbody tr td:nth-child(3)");
    expect(companies).toEqual([A.slice(0, 8), A.slice(0, 8)]);
    await b.click("#reports table.reports tbody tr button");
    await b.waitFor(".report-entries table.entries");
    const page = (await text("main"))!;
    expect(page).toContain("run-a1");
    expect(page).not.toContain("secret-of-b");
    expect(page).not.toContain("kept-of-b");
    await screenshot("company");
  });

  it("logging out ends the session", async () => {
    await b.click("header form[action='/console/logout'] button");
    await waitForUrl(b, (u) => u.pathname === "/console/login");
    expect(await status(`${base}/v1/stats/totals`)).toBe(401);
  });

  it("the pages logged no console error", () => {
    expect(b.errors).toEqual([]);
  });
});
