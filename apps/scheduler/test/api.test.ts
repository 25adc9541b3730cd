/**
 * The REST API over real HTTP: authentication, validation (400 naming the field, never a
 * 500 for bad input), the response shapes the Paperclip server codes against, and the
 * operator endpoints.
 */
import { randomUUID } from "node:crypto";
import { Worker } from "bullmq";
import { DOMAIN_IDS, readSchedulerConfig, settleJob } from "@reclaim/core";
import { startStack, TEST_TOKEN, type Stack } from "@reclaim/testkit";
import { buildApp, registeredRoutes } from "../src/app";
import { tokenMatches } from "../src/auth";

let stack: Stack;
let base: string;
beforeAll(async () => {
  stack = await startStack({ worker: false });
  base = await stack.scheduler.listen();
});
afterAll(async () => stack?.stop());

async function call(
  method: string,
  path: string,
  init: { body?: unknown; raw?: string; headers?: Record<string, string>; token?: string | null } = {},
) {
  const headers: Record<string, string> = { ...init.headers };
  if (init.token !== null) headers.authorization ??= `Bearer ${init.token ?? TEST_TOKEN}`;
  if (init.body !== undefined || init.raw !== undefined) headers["content-type"] ??= "application/json";
  const response = await fetch(base + path, {
    method,
    headers,
    body: init.raw ?? (init.body === undefined ? undefined : JSON.stringify(init.body)),
  });
  const text = await response.text();
  let body: any; // eslint-disable-line @typescript-eslint/no-explicit-any
  try {
    body = JSON.parse(text);
  } catch {
    body = undefined;
  }
  return { status: response.status, body, text, headers: response.headers };
}

describe("authentication", () => {
  it("health and readiness need no token", async () => {
    expect((await call("GET", "/healthz", { token: null })).body).toEqual({ status: "ok" });
    expect((await call("GET", "/readyz", { token: null })).body).toEqual({
      status: "ready",
      postgres: "ok",
      redis: "ok",
    });
  });

  /** Every route the app registered (Fastify's own table), with sample path parameters. */
  const served = () =>
    registeredRoutes(stack.scheduler.app).map((route) => ({
      ...route,
      path: route.url.replace(/:[A-Za-z]+/g, randomUUID()).replace(/\*/g, "index.js"),
    }));
  // The console's login form and its static assets (no data) need no token either.
  const PUBLIC = [
    "GET /healthz",
    "GET /readyz",
    "HEAD /healthz",
    "HEAD /readyz",
    "GET /console/login",
    "HEAD /console/login",
    "POST /console/login",
    "GET /console/assets/*",
    "HEAD /console/assets/*",
    "GET /console/vendor/*",
    "HEAD /console/vendor/*",
  ];

  it("the route table is the app's own: every API, restore-point and dashboard route", () => {
    const keys = served().map((r) => `${r.method} ${r.url}`);
    expect(keys).toEqual(
      expect.arrayContaining([
        "POST /v1/events",
        "POST /v1/sweeps",
        "GET /v1/jobs/:jobId",
        "POST /v1/jobs/:jobId/cancel",
        "GET /v1/reports",
        "GET /v1/reports/:reportId",
        "POST /v1/companies/:companyId/restore-points",
        "POST /v1/companies/:companyId/restore-points/:id/activate",
        "GET /admin/queues",
        "PUT /admin/queues/api/queues/:queueName/obliterate",
        ...PUBLIC,
      ]),
    );
    expect(keys.filter((k) => k.includes("/restore-points")).length).toBeGreaterThanOrEqual(6);
  });

  it("every registered route but health, readiness and the console's login and assets refuses a missing or wrong token with 401", async () => {
    const routes = served().filter((r) => !PUBLIC.includes(`${r.method} ${r.url}`));
    expect(routes.length).toBeGreaterThan(15);
    for (const route of routes) {
      for (const authorization of [
        undefined,
        "Bearer wrong-token-0123456789",
        `Token ${TEST_TOKEN}`,
        "Bearer ",
      ]) {
        const response = await call(route.method, route.path, {
          token: null,
          headers: authorization ? { authorization } : {},
          ...(["POST", "PUT", "PATCH", "DELETE"].includes(route.method) ? { body: {} } : {}),
        });
        expect({ route: `${route.method} ${route.path}`, status: response.status }).toEqual({
          route: `${route.method} ${route.path}`,
          status: 401,
        });
        if (route.method !== "HEAD")
          expect(response.body).toEqual({
            error: "RECLAIM_ERR_UNAUTHORIZED",
            message: "A valid bearer token is required",
          });
      }
    }
  });

  it("the dashboard asks browsers for Basic auth and accepts the token as password", async () => {
    const refused = await call("GET", "/admin/queues", { token: null });
    expect(refused.headers.get("www-authenticate")).toMatch(/^Basic /);
    const basic = Buffer.from(`operator:${TEST_TOKEN}`).toString("base64");
    const page = await call("GET", "/admin/queues", {
      token: null,
      headers: { authorization: `Basic ${basic}` },
    });
    expect(page.status).toBe(200);
    expect(page.text).toContain("<html");
  });

  it("compares tokens in constant time, whatever their lengths", () => {
    expect(tokenMatches(TEST_TOKEN, TEST_TOKEN)).toBe(true);
    expect(tokenMatches(TEST_TOKEN, "short")).toBe(false);
    expect(tokenMatches(TEST_TOKEN, TEST_TOKEN + "x")).toBe(false);
    expect(tokenMatches(TEST_TOKEN, null)).toBe(false);
  });
});

describe("validation", () => {
  const company = randomUUID();
  it.each([
    ["no body", "POST", "/v1/events", undefined, "body"],
    ["no events", "POST", "/v1/events", {}, "events"],
    ["empty events", "POST", "/v1/events", { events: [] }, "events"],
    [
      "unknown event type",
      "POST",
      "/v1/events",
      { events: [{ type: "nope", companyId: company }] },
      "events.0.type",
    ],
    [
      "bad company id",
      "POST",
      "/v1/events",
      { events: [{ type: "native_workspace_sync.folder_created", companyId: "x", runId: randomUUID() }] },
      "events.0.companyId",
    ],
    [
      "missing run id in the second event",
      "POST",
      "/v1/events",
      {
        events: [
          { type: "native_workspace_sync.folder_created", companyId: company, runId: randomUUID() },
          { type: "native_workspace_sync.folder_created", companyId: company },
        ],
      },
      "events.1.runId",
    ],
    ["sweep without domain", "POST", "/v1/sweeps", {}, "domain"],
    [
      "sweep with a bad company",
      "POST",
      "/v1/sweeps",
      { domain: "native-workspace-sync", companyId: "acme" },
      "companyId",
    ],
    [
      "sweep with a non-boolean dryRun",
      "POST",
      "/v1/sweeps",
      { domain: "native-workspace-sync", dryRun: "yes" },
      "dryRun",
    ],
    [
      "sweep with a forged cursor",
      "POST",
      "/v1/sweeps",
      { domain: "native-workspace-sync", cursor: "bm9wZQ" },
      "cursor",
    ],
    ["reports limit 0", "GET", "/v1/reports?limit=0", undefined, "limit"],
    ["reports limit not a number", "GET", "/v1/reports?limit=ten", undefined, "limit"],
    ["reports bad company", "GET", "/v1/reports?companyId=acme", undefined, "companyId"],
  ])("%s is a 400 naming the field", async (_label, method, path, body, field) => {
    const response = await call(method, path, { body });
    expect(response.status).toBe(400);
    expect(response.body).toMatchObject({ error: "RECLAIM_ERR_VALIDATION", field });
    expect(response.body.message).toContain(field);
  });

  it("malformed JSON is a 400 for the body", async () => {
    const response = await call("POST", "/v1/events", { raw: '{"events": [' });
    expect(response.status).toBe(400);
    expect(response.body).toMatchObject({ error: "RECLAIM_ERR_VALIDATION", field: "body" });
  });

  it("a body that is not JSON is a 415", async () => {
    const response = await call("POST", "/v1/events", {
      raw: "events=1",
      headers: { "content-type": "text/plain" },
    });
    expect(response.status).toBe(415);
    expect(response.body.error).toBe("RECLAIM_ERR_UNSUPPORTED_MEDIA_TYPE");
  });

  it("a body over 1 MiB is a 413", async () => {
    const response = await call("POST", "/v1/events", {
      raw: JSON.stringify({ events: [], pad: "x".repeat(1024 * 1024) }),
    });
    expect(response.status).toBe(413);
    expect(response.body.error).toBe("RECLAIM_ERR_BODY_TOO_LARGE");
  });

  it.each([
    [
      "an unknown domain in a sweep",
      "POST",
      "/v1/sweeps",
      { domain: "nope" },
      404,
      "RECLAIM_ERR_UNKNOWN_DOMAIN",
    ],
    [
      "an unknown domain in reports",
      "GET",
      "/v1/reports?domain=nope",
      undefined,
      404,
      "RECLAIM_ERR_UNKNOWN_DOMAIN",
    ],
    [
      "an unknown domain in deadlines",
      "GET",
      "/v1/deadlines?domain=nope",
      undefined,
      404,
      "RECLAIM_ERR_UNKNOWN_DOMAIN",
    ],
    ["an unknown job", "GET", "/v1/jobs/nope", undefined, 404, "RECLAIM_ERR_JOB_NOT_FOUND"],
    ["an unknown route", "GET", "/v2/anything", undefined, 404, "RECLAIM_ERR_NOT_FOUND"],
    [
      "a deadline job cancelled",
      "POST",
      "/v1/jobs/native-workspace-sync--instance/cancel",
      undefined,
      409,
      "RECLAIM_ERR_JOB_NOT_CANCELLABLE",
    ],
  ])("%s gets %i", async (_label, method, path, body, status, error) => {
    if (path.includes("--instance")) {
      await stack.scheduler.deps.queues.request([
        {
          domain: "native-workspace-sync",
          scope: "instance",
          reason: "test",
          dueAt: new Date(Date.now() + 3600_000),
        },
      ]);
    }
    const response = await call(method, path, { body });
    expect(response.status).toBe(status);
    expect(response.body.error).toBe(error);
  });

  it("a domain that is known but not implemented gets 501, naming the field", async () => {
    // Not the live registry's gaps (a loop over them passes once every domain exists): a
    // scheduler serving all but one known domain, so there is always one to ask for.
    const [missing] = [...stack.scheduler.deps.domains.keys()];
    const domains = new Map(stack.scheduler.deps.domains);
    domains.delete(missing!);
    const app = await buildApp({
      token: TEST_TOKEN,
      deps: { ...stack.scheduler.deps, domains },
      timeouts: readSchedulerConfig({ RECLAIM_API_TOKEN: TEST_TOKEN }),
      dashboard: false,
    });
    try {
      const unimplemented = DOMAIN_IDS.filter((id) => !domains.has(id));
      expect(unimplemented).toContain(missing);
      for (const domain of unimplemented) {
        const response = await app.inject({
          method: "POST",
          url: "/v1/sweeps",
          headers: { authorization: `Bearer ${TEST_TOKEN}` },
          payload: { domain },
        });
        expect({ domain, status: response.statusCode }).toEqual({ domain, status: 501 });
        expect(response.json()).toMatchObject({
          error: "RECLAIM_ERR_DOMAIN_NOT_IMPLEMENTED",
          field: "domain",
        });
      }
    } finally {
      await app.close();
    }
  });
});

describe("response shapes", () => {
  it("sweeps answer 202 {jobId}; jobs {jobId, state}; a waiting sweep can be cancelled", async () => {
    const started = await call("POST", "/v1/sweeps", {
      body: { domain: "native-workspace-sync", companyId: randomUUID(), dryRun: true },
    });
    expect(started.status).toBe(202);
    expect(Object.keys(started.body)).toEqual(["jobId"]);
    const job = await call("GET", `/v1/jobs/${started.body.jobId}`);
    expect(job.body).toEqual({ jobId: started.body.jobId, state: "waiting" });
    const cancelled = await call("POST", `/v1/jobs/${started.body.jobId}/cancel`);
    expect(cancelled.body).toEqual({ jobId: started.body.jobId, state: "cancelled" });
    expect((await call("GET", `/v1/jobs/${started.body.jobId}`)).status).toBe(404);
  });

  it("a deadline job answers with its report once finished, never with an earlier occurrence's", async () => {
    const company = randomUUID();
    const jobId = `native-workspace-sync--${company}`;
    const startedAt = new Date(Date.now() - 60_000);
    await stack.db.reclaimBatchReport.create({
      data: {
        jobId,
        domain: "native-workspace-sync",
        companyId: company,
        dryRun: false,
        startedAt,
        finishedAt: new Date(startedAt.getTime() + 10),
      },
    });
    // Finished and gone from the queue: the report stored under its id.
    const finished = await call("GET", `/v1/jobs/${jobId}`);
    expect(finished.body).toMatchObject({ jobId, state: "completed", report: { companyId: company } });
    // The next occurrence (same id) is scheduled: it has not run, so it has no report.
    await stack.scheduler.deps.queues.request([
      {
        domain: "native-workspace-sync",
        scope: company,
        reason: "retention",
        dueAt: new Date(Date.now() + 3600_000),
      },
    ]);
    expect((await call("GET", `/v1/jobs/${jobId}`)).body).toEqual({ jobId, state: "delayed" });
    // Running (no worker in this stack: move it to active by hand, as a worker would).
    const job = (await stack.scheduler.deps.queues.queue("native-workspace-sync").getJob(jobId))!;
    await job.promote();
    const connection = stack.scheduler.deps.redis.duplicate();
    const worker = new Worker("reclaim-native-workspace-sync", null, { connection, prefix: stack.prefix });
    try {
      // The queue also holds the start-up job of the instance; take jobs until ours.
      let taken = await worker.getNextJob("test-token");
      while (taken && taken.id !== jobId) taken = await worker.getNextJob("test-token");
      expect(taken?.id).toBe(jobId);
      expect((await call("GET", `/v1/jobs/${jobId}`)).body).toEqual({ jobId, state: "active" });
    } finally {
      await worker.close();
      connection.disconnect(); // BullMQ leaves a connection it was handed open
    }
  });

  it("events answer 202 with what they scheduled; deadlines list {domain, companyId, reason, dueAt}", async () => {
    const company = randomUUID();
    const accepted = await call("POST", "/v1/events", {
      body: {
        events: [{ type: "native_workspace_sync.folder_created", companyId: company, runId: randomUUID() }],
      },
    });
    expect(accepted.status).toBe(202);
    expect(accepted.body).toEqual({ accepted: 1, deadlines: 1 });
    const listed = await call("GET", "/v1/deadlines?domain=native-workspace-sync");
    const mine = listed.body.deadlines.find((d: { companyId: string }) => d.companyId === company);
    expect(Object.keys(mine).sort()).toEqual(["companyId", "domain", "dueAt", "reason"]);
    expect(mine).toMatchObject({ domain: "native-workspace-sync", reason: "folder_created" });
  });

  it("reports list the contract's fields, newest first", async () => {
    const startedAt = new Date(Date.now() - 2000);
    for (const offset of [0, 1000]) {
      // Stored as a worker stores it: the report row and its domain's running totals.
      await settleJob(stack.db, {
        claimed: [],
        deadlines: [],
        pruneBefore: new Date(0),
        report: {
          jobId: "native-workspace-sync--instance",
          domain: "native-workspace-sync",
          scope: "instance",
          dryRun: false,
          checked: 1,
          candidates: 0,
          removed: 0,
          candidateBytes: 0,
          reclaimedBytes: 0,
          skipped: { symlink: 1 },
          entries: [],
          error: null,
          nextCursor: null,
          cancelled: false,
          startedAt,
          finishedAt: new Date(startedAt.getTime() + offset),
        },
      });
    }
    const listed = await call("GET", "/v1/reports?domain=native-workspace-sync&companyId=instance&limit=2");
    expect(listed.body.reports).toHaveLength(2);
    const [newest, older] = listed.body.reports;
    expect(Date.parse(newest.finishedAt)).toBeGreaterThan(Date.parse(older.finishedAt));
    for (const field of [
      "id",
      "domain",
      "companyId",
      "dryRun",
      "checked",
      "candidates",
      "removed",
      "candidateBytes",
      "reclaimedBytes",
      "skipped",
      "error",
      "startedAt",
      "finishedAt",
    ]) {
      expect(newest).toHaveProperty(field);
    }
    expect(newest).toMatchObject({ companyId: null, skipped: { symlink: 1 }, error: null });
    const one = await call("GET", `/v1/reports/${newest.id}`);
    expect(one.body.report).toMatchObject({ id: newest.id, entries: [] });
    expect((await call("GET", `/v1/reports/${randomUUID()}`)).status).toBe(404);
    expect((await call("GET", "/v1/reports/not-a-uuid")).body).toMatchObject({
      error: "RECLAIM_ERR_VALIDATION",
      field: "reportId",
    });
  });

  it("domains list every domain id with its controls, queue counts and next deadline", async () => {
    const listed = await call("GET", "/v1/domains");
    expect(listed.body.domains.map((d: { id: string }) => d.id)).toEqual([...DOMAIN_IDS]);
    const sync = listed.body.domains.find((d: { id: string }) => d.id === "native-workspace-sync");
    expect(sync).toMatchObject({ implemented: true, enabled: true, dryRun: false, config: { days: 7 } });
    expect(sync.controls.map((c: { env: string }) => c.env)).toContain(
      "PAPERCLIP_NATIVE_WORKSPACE_SYNC_RETENTION_DAYS",
    );
    expect(Object.keys(sync.queue).sort()).toEqual(["active", "completed", "delayed", "failed", "waiting"]);
    expect(sync.controls).toContainEqual(
      expect.objectContaining({
        env: "PAPERCLIP_NATIVE_WORKSPACE_SYNC_RETENTION_DAYS",
        default: "7",
        value: 7,
      }),
    );
    // Only declared controls are shown: never the token, storage credentials or hook secrets.
    expect(listed.text).not.toContain(TEST_TOKEN);
    for (const domain of listed.body.domains) {
      expect(JSON.stringify(domain.config)).not.toMatch(/secret|accessKey|token/i);
    }
  });

  it("metrics expose queue depth, job duration, bytes and skips in Prometheus format", async () => {
    const metrics = await call("GET", "/metrics");
    expect(metrics.headers.get("content-type")).toMatch(/^text\/plain/);
    for (const family of [
      "reclaim_queue_jobs",
      "reclaim_job_duration_seconds",
      "reclaim_candidate_bytes_total",
      "reclaim_reclaimed_bytes_total",
      "reclaim_skips_total",
    ]) {
      expect(metrics.text).toContain(`# TYPE ${family} `);
    }
    expect(metrics.text).toContain('reclaim_queue_jobs{domain="native-workspace-sync",state="delayed"}');
    expect(metrics.text).toContain('reclaim_skips_total{domain="native-workspace-sync",reason="symlink"}');
    expect(metrics.text).toMatch(
      /reclaim_job_duration_seconds_bucket\{domain="native-workspace-sync",le="\+Inf"\} \d+/,
    );
  });

  it("docs are an OpenAPI 3.1 document generated from the schemas", async () => {
    const docs = await call("GET", "/docs");
    expect(docs.body.openapi).toBe("3.1.0");
    expect(Object.keys(docs.body.paths)).toEqual(
      expect.arrayContaining(["/v1/events", "/v1/sweeps", "/v1/jobs/{jobId}", "/v1/reports"]),
    );
    const sweeps = docs.body.paths["/v1/sweeps"].post;
    expect(sweeps.requestBody.content["application/json"].schema.properties).toHaveProperty("domain");
    expect(sweeps.responses["202"].content["application/json"].schema.properties).toHaveProperty("jobId");
    expect(docs.body.paths["/v1/reports"].get.parameters.map((p: { name: string }) => p.name)).toEqual([
      "domain",
      "companyId",
      "limit",
    ]);
  });

  it("docs give every operation a unique operationId and the document a servers entry (Redocly lint)", async () => {
    const docs = await call("GET", "/docs");
    expect(docs.body.servers).toEqual([expect.objectContaining({ url: "/" })]);
    const ids = Object.values(docs.body.paths as Record<string, Record<string, { operationId?: unknown }>>)
      .flatMap((operations) => Object.values(operations))
      .map((operation) => operation.operationId);
    expect(ids.length).toBeGreaterThan(10);
    for (const id of ids) expect(id).toMatch(/^[a-z][A-Za-z]+$/);
    expect(new Set(ids).size).toBe(ids.length);
  });
});

it("GET /v1/domains never shows secrets from the environment", async () => {
  const secrets = {
    PAPERCLIP_STORAGE_PROVIDER: "s3",
    AWS_ACCESS_KEY_ID: "AKIASECRETACCESSKEY1",
    AWS_SECRET_ACCESS_KEY: "very-secret-s3-key-0123456789",
    RECLAIM_CALLBACK_SECRET: "very-secret-callback-0123456789",
    RECLAIM_RESTORE_POINT_EXPIRY_HOOK_URL: "http://127.0.0.1:9/hook",
  };
  const own = await startStack({ worker: false, env: secrets });
  try {
    const listed = await own.api("GET", "/v1/domains");
    expect(listed.status).toBe(200);
    for (const value of [...Object.values(secrets).slice(1, 4), TEST_TOKEN])
      expect(listed.text).not.toContain(value);
  } finally {
    await own.stop();
  }
});
