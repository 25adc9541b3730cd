/**
 * GET /v1/stats/*: the console's aggregates as JSON. Reports are stored as a worker stores
 * them (the row, the totals and the hourly rollup in one transaction); the routes answer from
 * the rollup, per domain and company, and refuse bad input with the API's 400/404/501 bodies.
 * Real PostgreSQL and Redis; the scheduler's clock is a test clock.
 */
import { randomUUID } from "node:crypto";
import { DOMAIN_IDS, TestClock } from "@reclaim/core";
import { startStack, type Stack } from "@reclaim/testkit";
import { seedReport } from "@reclaim/testkit/src/fixtures/reports";
import { insertIssue, insertRestorePoint } from "@reclaim/testkit/src/fixtures/restore-points";

const NWS = "native-workspace-sync";
const SVC = "skill-version-caches";
const NOW = new Date("2026-12-10T12:30:00Z");
const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const ago = (ms: number) => new Date(NOW.getTime() - ms);
const A = randomUUID();
const B = randomUUID();

let stack: Stack;
beforeAll(async () => {
  stack = await startStack({ worker: false, clock: new TestClock(NOW) });
  const db = stack.db;
  await seedReport(db, {
    domain: NWS,
    companyId: A,
    finishedAt: ago(HOUR),
    entries: [
      { id: "a1", outcome: "candidate", bytes: 1000, companyId: A },
      { id: "a1", outcome: "removed", bytes: 1000, companyId: A },
      { id: "a2", outcome: "removed", bytes: 3000, companyId: A },
      { id: "a3", outcome: "skipped", reason: "run_active", bytes: 500, companyId: A },
    ],
  });
  await seedReport(db, {
    domain: NWS,
    companyId: A,
    finishedAt: ago(3 * DAY),
    entries: [{ id: "a4", outcome: "removed", bytes: 10_000 }],
  });
  await seedReport(db, {
    domain: NWS,
    companyId: A,
    finishedAt: ago(20 * DAY),
    entries: [{ id: "a5", outcome: "removed", bytes: 100_000 }],
  });
  await seedReport(db, {
    domain: NWS,
    companyId: A,
    finishedAt: ago(40 * DAY),
    entries: [{ id: "a6", outcome: "removed", bytes: 1_000_000 }],
  });
  await seedReport(db, {
    domain: NWS,
    companyId: A,
    dryRun: true,
    finishedAt: ago(HOUR),
    entries: [{ id: "a7", outcome: "candidate", bytes: 999 }],
  });
  await seedReport(db, {
    domain: SVC,
    companyId: B,
    finishedAt: ago(2 * HOUR),
    entries: [
      { id: "b1", outcome: "removed", bytes: 7 },
      { id: "b2", outcome: "skipped", reason: "pinned" },
      { id: "b3", outcome: "failed", reason: "rename_failed" },
    ],
  });
  // Instance-wide work: entries that name their company count for it, the rest for `instance`.
  await seedReport(db, {
    domain: NWS,
    companyId: null,
    finishedAt: ago(HOUR),
    entries: [
      { id: "i1", outcome: "removed", bytes: 50, companyId: B },
      { id: "i2", outcome: "removed", bytes: 20, companyId: null },
      { id: "i3", outcome: "skipped", reason: "run_active", companyId: B },
    ],
  });
});
afterAll(async () => stack?.stop());

const totalsOf = async (query: string) => {
  const response = await stack.api("GET", `/v1/stats/totals${query}`);
  expect(response.status).toBe(200);
  return new Map<string, Record<string, Record<string, number>>>(
    response.body.domains.map((d: { domain: string; windows: object }) => [d.domain, d.windows]),
  );
};

describe("GET /v1/stats/totals", () => {
  it("sums removed bytes per domain over the last 24 hour, 7 day and 30 day buckets", async () => {
    const totals = await totalsOf("");
    expect(totals.get(NWS)!["24h"]).toEqual({
      reclaimedBytes: 4070,
      removed: 4,
      kept: 2,
      failed: 0,
      candidates: 1,
      candidateBytes: 1000,
      dryRunCandidates: 1,
      dryRunCandidateBytes: 999,
    });
    expect(totals.get(NWS)!["7d"]!.reclaimedBytes).toBe(14_070);
    expect(totals.get(NWS)!["30d"]!.reclaimedBytes).toBe(114_070);
    expect(totals.get(SVC)!["24h"]).toMatchObject({ reclaimedBytes: 7, removed: 1, kept: 1, failed: 1 });
    // Every domain this scheduler serves is listed, with zeros when nothing was recorded.
    expect(totals.get("native-session-backups")!["30d"]!.reclaimedBytes).toBe(0);
  });

  it("a company filter counts only that company's entries, wherever their report ran", async () => {
    const a = await totalsOf(`?companyId=${A}`);
    expect([a.get(NWS)!["24h"]!.reclaimedBytes, a.get(NWS)!["7d"]!.reclaimedBytes]).toEqual([4000, 14_000]);
    expect(a.get(SVC)!["30d"]!.reclaimedBytes).toBe(0);
    const b = await totalsOf(`?companyId=${B}`);
    expect(b.get(NWS)!["24h"]).toMatchObject({ reclaimedBytes: 50, removed: 1, kept: 1 });
    expect(b.get(SVC)!["24h"]!.reclaimedBytes).toBe(7);
    const instance = await totalsOf("?companyId=instance");
    expect(instance.get(NWS)!["24h"]).toMatchObject({ reclaimedBytes: 20, removed: 1, kept: 0 });
    const nobody = await totalsOf(`?companyId=${randomUUID()}`);
    expect([...nobody.values()].every((w) => w["30d"]!.reclaimedBytes === 0)).toBe(true);
  });

  it("a domain filter lists only that domain", async () => {
    const totals = await totalsOf(`?domain=${SVC}&companyId=${B}`);
    expect([...totals.keys()]).toEqual([SVC]);
  });
});

describe("GET /v1/stats/reclaimed and /v1/stats/skips", () => {
  const range = "from=2026-11-01T00:00:00Z&to=2026-12-11T00:00:00Z";
  const day = (iso: string) => Math.round((Date.parse(iso) - Date.parse("2026-11-01T00:00:00Z")) / DAY);

  it("reclaimed bytes per domain and day, one value per bucket of the range", async () => {
    const { status, body } = await stack.api("GET", `/v1/stats/reclaimed?bucket=day&${range}`);
    expect(status).toBe(200);
    expect(body.buckets).toHaveLength(40);
    expect(body.buckets[0]).toBe("2026-11-01T00:00:00.000Z");
    const nws = body.series.find((s: { domain: string }) => s.domain === NWS);
    expect(nws.bytes).toHaveLength(40);
    expect(nws.bytes[day("2026-12-10T00:00:00Z")]).toBe(4070);
    expect(nws.bytes[day("2026-12-07T00:00:00Z")]).toBe(10_000);
    expect(nws.bytes[day("2026-11-20T00:00:00Z")]).toBe(100_000);
    // The report of 40 days ago lies before the range.
    expect(nws.bytes.reduce((a: number, b: number) => a + b, 0)).toBe(114_070);
    expect(nws.entries[day("2026-12-10T00:00:00Z")]).toBe(4);
  });

  it("hour buckets, filtered to one company", async () => {
    const { body } = await stack.api(
      "GET",
      `/v1/stats/reclaimed?bucket=hour&companyId=${B}&from=2026-12-10T00:00:00Z&to=2026-12-10T13:00:00Z`,
    );
    expect(body.buckets).toHaveLength(13);
    expect(
      body.series.map((s: { domain: string; bytes: number[] }) => [s.domain, s.bytes[10], s.bytes[11]]),
    ).toEqual([
      [NWS, 0, 50],
      [SVC, 7, 0],
    ]);
  });

  it("skips by reason, per domain", async () => {
    const { body } = await stack.api("GET", `/v1/stats/skips?bucket=day&${range}&domain=${NWS}`);
    expect(
      body.series.map((s: { reason: string; entries: number[] }) => [
        s.reason,
        s.entries[day("2026-12-10T00:00:00Z")],
      ]),
    ).toEqual([["run_active", 2]]);
    const all = await stack.api("GET", `/v1/stats/skips?bucket=day&${range}`);
    expect(all.body.series.map((s: { reason: string }) => s.reason)).toEqual(["pinned", "run_active"]);
  });

  it("without a range: the last 30 days by day, ending now", async () => {
    const { body } = await stack.api("GET", "/v1/stats/reclaimed");
    expect(body).toMatchObject({ bucket: "day", to: NOW.toISOString(), from: ago(30 * DAY).toISOString() });
    expect(body.buckets).toHaveLength(31);
  });
});

describe("GET /v1/stats/restore-points", () => {
  it("counts one company's restore points by status, never another's", async () => {
    const issueA = await insertIssue(stack, { companyId: A });
    const issueB = await insertIssue(stack, { companyId: B });
    await insertRestorePoint(stack, {
      companyId: A,
      sourceIssueId: issueA,
      status: "active",
      byteSize: 1000,
    });
    await insertRestorePoint(stack, { companyId: A, sourceIssueId: issueA, status: "active", byteSize: 24 });
    await insertRestorePoint(stack, {
      companyId: A,
      sourceIssueId: issueA,
      status: "superseded",
      byteSize: 5,
    });
    await insertRestorePoint(stack, { companyId: B, sourceIssueId: issueB, status: "active", byteSize: 99 });
    const { status, body } = await stack.api("GET", `/v1/stats/restore-points?companyId=${A}`);
    expect(status).toBe(200);
    expect(
      body.statuses.map((s: { status: string; count: number; bytes: number }) => [
        s.status,
        s.count,
        s.bytes,
      ]),
    ).toEqual([
      ["active", 2, 1024],
      ["superseded", 1, 5],
    ]);
  });
});

describe("bad input gets the API's 400/404/501 bodies", () => {
  it("an unknown domain is the same 404 as GET /v1/reports", async () => {
    for (const url of ["/v1/stats/totals", "/v1/stats/reclaimed", "/v1/stats/skips"]) {
      const response = await stack.api("GET", `${url}?domain=nope`);
      expect(response.status).toBe(404);
      expect(response.body).toEqual((await stack.api("GET", "/v1/reports?domain=nope")).body);
    }
    // A known domain this build does not implement yet (not a fixed id: they get implemented).
    const unimplemented = DOMAIN_IDS.find((id) => !stack.scheduler.deps.domains.has(id));
    expect((await stack.api("GET", `/v1/stats/totals?domain=${unimplemented}`)).status).toBe(501);
  });

  it("a malformed company id is a 400 naming companyId, as GET /v1/reports", async () => {
    const response = await stack.api("GET", "/v1/stats/totals?companyId=not-a-uuid");
    expect(response.status).toBe(400);
    expect(response.body).toEqual((await stack.api("GET", "/v1/reports?companyId=not-a-uuid")).body);
    expect(response.body.field).toBe("companyId");
    const rp = await stack.api("GET", "/v1/stats/restore-points?companyId=instance");
    expect([rp.status, rp.body.field]).toEqual([400, "companyId"]);
    expect((await stack.api("GET", "/v1/stats/restore-points")).body.field).toBe("companyId");
  });

  it.each([
    [
      "a range too large for hour buckets",
      "bucket=hour&from=2026-11-01T00:00:00Z&to=2026-12-10T00:00:00Z",
      "from",
    ],
    [
      "a range too large for day buckets",
      "bucket=day&from=2025-01-01T00:00:00Z&to=2026-12-10T00:00:00Z",
      "from",
    ],
    ["from after to", "from=2026-12-10T00:00:00Z&to=2026-12-01T00:00:00Z", "from"],
    ["a timestamp without offset", "from=2026-12-01T00:00:00", "from"],
    ["a timestamp out of range", "to=10000-01-01T00:00:00Z", "to"],
    ["an unknown bucket", "bucket=week", "bucket"],
  ])("%s is a 400 naming the field", async (_what, query, field) => {
    const response = await stack.api("GET", `/v1/stats/reclaimed?${query}`);
    expect(response.status).toBe(400);
    expect(response.body).toMatchObject({ error: "RECLAIM_ERR_VALIDATION", field });
    expect(response.body.message.startsWith(`${field}: `)).toBe(true);
  });
});

it("the stats routes are in the OpenAPI document with their parameters", async () => {
  const { body } = await stack.api("GET", "/docs");
  for (const path of [
    "/v1/stats/totals",
    "/v1/stats/reclaimed",
    "/v1/stats/skips",
    "/v1/stats/restore-points",
  ]) {
    expect(body.paths[path]?.get).toBeDefined();
  }
  const names = body.paths["/v1/stats/reclaimed"].get.parameters.map((p: { name: string }) => p.name);
  expect(names).toEqual(["domain", "companyId", "bucket", "from", "to"]);
  expect(body.paths["/v1/stats/reclaimed"].get.responses["400"]).toBeDefined();
});

it("GET /v1/reports/:id?companyId shows a report only to its own scope, with only that scope's entries", async () => {
  const report = await seedReport(stack.db, {
    domain: NWS,
    companyId: null,
    finishedAt: ago(HOUR),
    entries: [
      { id: "mine", outcome: "removed", bytes: 1 },
      { id: "of-b", outcome: "removed", bytes: 1, companyId: B },
    ],
  });
  const all = await stack.api("GET", `/v1/reports/${report.id}`);
  expect(all.body.report.entries.map((e: { id: string }) => e.id)).toEqual(["mine", "of-b"]);
  const instance = await stack.api("GET", `/v1/reports/${report.id}?companyId=instance`);
  expect(instance.body.report.entries.map((e: { id: string }) => e.id)).toEqual(["mine"]);
  const other = await stack.api("GET", `/v1/reports/${report.id}?companyId=${B}`);
  expect([other.status, other.body.error, other.body.field]).toEqual([
    404,
    "RECLAIM_ERR_NOT_FOUND",
    "reportId",
  ]);
  expect((await stack.api("GET", `/v1/reports/${report.id}?companyId=nope`)).body.field).toBe("companyId");
});
