/**
 * Bad input that zod used to pass and PostgreSQL then refused (a 500 after part of a batch
 * was recorded): every such value is a 400 naming the field, before anything is stored; an
 * events batch is recorded all or nothing; what an error echoes back is cut short; a bearer
 * header with trailing junk is refused. Real scheduler, real PostgreSQL.
 */
import { randomUUID } from "node:crypto";
import { startStack, TEST_TOKEN, type ApiResponse, type Stack } from "@reclaim/testkit";
import { insertIssue, insertWorkspace } from "@reclaim/testkit/src/fixtures/restore-points";
import { MAX_JSON_DEPTH } from "@reclaim/core";

let stack: Stack;
beforeAll(async () => {
  stack = await startStack({ worker: false });
});
afterAll(async () => stack?.stop());

const live = (id: string, reportedAt = new Date().toISOString()) => ({
  type: "native_sessions.live",
  sessions: [{ id, state: "executing" }],
  reportedAt,
});
const evidence = (writtenAt: string) => ({
  type: "native_sessions.evidence_written",
  kind: "continuity_break",
  writtenAt,
});

async function storedLiveness() {
  return stack.db.reclaimNativeSessionLiveness.findUnique({ where: { instance: "instance" } });
}

function expect400(response: Pick<ApiResponse, "status" | "body">, field: string) {
  expect({ status: response.status, body: response.body }).toMatchObject({
    status: 400,
    body: { error: "RECLAIM_ERR_VALIDATION", field },
  });
  expect(response.body.message.startsWith(`${field}: `)).toBe(true);
}

/** `depth` objects nested in one another, as JSON text (too deep for JSON.stringify's recursion). */
function nested(depth: number): string {
  return '{"d":'.repeat(depth - 1) + '{"d":"leaf"}' + "}".repeat(depth - 1);
}

/** Registers a restore point of a real workspace and issue with `metadata` (JSON text, or a value). */
async function registerWith(metadata: unknown) {
  const company = randomUUID();
  const issue = await insertIssue(stack, { companyId: company });
  const workspace = await insertWorkspace(stack, company, issue);
  const fields = { executionWorkspaceId: workspace, sourceIssueId: issue, generation: 1, kind: "worktree" };
  const json = typeof metadata === "string" ? metadata : JSON.stringify(metadata);
  const response = await stack.scheduler.app.inject({
    method: "POST",
    url: `/v1/companies/${company}/restore-points`,
    headers: { authorization: `Bearer ${TEST_TOKEN}`, "content-type": "application/json" },
    payload: `${JSON.stringify(fields).slice(0, -1)},"metadata":${json}}`,
  });
  return { status: response.statusCode, body: response.json() };
}

describe("strings PostgreSQL cannot store are a 400 naming the field (kind 1)", () => {
  it.each([
    ["a NUL", "session-\u0000-1"],
    ["a lone high surrogate", "session-\ud800"],
    ["a lone low surrogate", "\udc00-session"],
  ])("a native_sessions.live session id with %s", async (_label, id) => {
    const response = await stack.api("POST", "/v1/events", { events: [live(id)] });
    expect400(response, "events.0.sessions.0.id");
  });

  it.each([
    ["a NUL in a value", { branch: "a\u0000b" }, "metadata.branch"],
    ["a lone surrogate in a value", { branch: "\ud800" }, "metadata.branch"],
    ["a NUL in a key", { "a\u0000b": 1 }, "metadata"],
    ["a lone surrogate in a nested key", { outer: [{ "\udfff": 1 }] }, "metadata.outer.0"],
  ])("restore-point metadata with %s", async (_label, metadata, field) => {
    const response = await registerWith(metadata);
    expect400(response, field);
  });

  it("a paired surrogate (an emoji) is stored as it is", async () => {
    const response = await registerWith({ note: "ok \ud83d\ude00" });
    expect(response.status).toBe(201);
    expect(response.body.restorePoint.metadata).toEqual({ note: "ok \ud83d\ude00" });
  });
});

describe("dates outside what timestamptz stores, after the domain's arithmetic, are a 400 (kind 2)", () => {
  it("reportedAt in year 0", async () => {
    const response = await stack.api("POST", "/v1/events", {
      events: [live("s-year-0", "0000-01-01T00:00:00Z")],
    });
    expect400(response, "events.0.reportedAt");
  });

  it("reportedAt that is year 0 in UTC only through its offset", async () => {
    const response = await stack.api("POST", "/v1/events", {
      events: [live("s-offset", "0001-01-01T00:30:00+01:00")],
    });
    expect400(response, "events.0.reportedAt");
  });

  it("writtenAt whose evidence window ends after year 9999", async () => {
    const response = await stack.api("POST", "/v1/events", {
      events: [evidence("9999-12-31T23:59:59Z")],
    });
    expect400(response, "events.0.writtenAt");
  });

  it.each([["/v1/stats/reclaimed"], ["/v1/stats/skips"]])(
    "%s with a `to` whose default range (30 days back) starts before year 1",
    async (route) => {
      const response = await stack.api("GET", `${route}?to=0001-01-01T00:00:00Z`);
      expect400(response, "to");
    },
  );

  it.each([
    ["hour", "9999-12-31T00:00:00Z", "9999-12-31T23:59:59.999Z"],
    ["day", "9999-12-01T00:00:00Z", "9999-12-31T23:59:59.999Z"],
    ["day", "0001-01-01T00:00:00Z", "0001-01-31T00:00:00Z"],
  ])("stats buckets of %s at the edges of time (%s to %s) are answered", async (bucket, from, to) => {
    for (const route of ["/v1/stats/reclaimed", "/v1/stats/skips"]) {
      const response = await stack.api("GET", `${route}?bucket=${bucket}&from=${from}&to=${to}`);
      expect({ route, status: response.status }).toEqual({ route, status: 200 });
    }
  });

  it("the first and last storable instants are accepted", async () => {
    const response = await stack.api("POST", "/v1/events", {
      events: [live("s-first", "0001-01-01T00:00:00Z"), evidence("9000-01-01T00:00:00Z")],
    });
    expect(response.status).toBe(202);
  });
});

describe("a NUL in a path parameter is a 400 naming it (kind 3)", () => {
  it.each([
    ["GET", "/v1/jobs/native-workspace-sync--%00"],
    ["POST", `/v1/jobs/sweep--native-workspace-sync--${randomUUID()}%00/cancel`],
  ])("%s %s", async (method, url) => {
    const response = await stack.api(method as "GET", url);
    expect400(response, "jobId");
  });

  it("a lone surrogate cannot even be percent-encoded (it is not UTF-8): the router's 400", async () => {
    const response = await stack.api("GET", "/v1/jobs/native-workspace-sync--%ED%A0%80");
    expect(response.status).toBe(400);
    expect(response.body.error).toBe("RECLAIM_ERR_VALIDATION");
  });
});

describe(`metadata nested deeper than ${MAX_JSON_DEPTH} is a 400, not a recursion limit (kind 4)`, () => {
  it.each([[MAX_JSON_DEPTH + 1], [123], [600], [20_000]])("depth %i", async (depth) => {
    const response = await registerWith(nested(depth));
    expect400(response, "metadata");
    expect(response.body.message).toContain(`deeper than ${MAX_JSON_DEPTH}`);
  });

  it(`depth ${MAX_JSON_DEPTH} is stored`, async () => {
    const response = await registerWith(nested(MAX_JSON_DEPTH));
    expect(response.status).toBe(201);
  });

  it("metadata larger than its documented size is a 400", async () => {
    const response = await registerWith({ big: "x".repeat(70 * 1024) });
    expect400(response, "metadata");
  });
});

describe("a forged or malformed cursor is a 400 naming it, never a 500", () => {
  const token = (value: unknown) => Buffer.from(JSON.stringify(value)).toString("base64url");
  const raw = (text: string) => Buffer.from(text).toString("base64url");

  it.each([
    ["not base64 JSON", "%21%21%21"],
    ["JSON null", token(null)],
    ["an array", token(["2020-01-01T00:00:00.000Z", randomUUID()])],
    ["an id that is no UUID", token({ createdAt: "2020-01-01T00:00:00.000Z", id: "not-a-uuid" })],
    ["an id with a NUL", token({ createdAt: "2020-01-01T00:00:00.000Z", id: `${randomUUID()}\u0000` })],
    ["a createdAt in year 0", token({ createdAt: "0000-01-01T00:00:00.000Z", id: randomUUID() })],
    ["a createdAt past year 9999", token({ createdAt: "+275760-09-13T00:00:00.000Z", id: randomUUID() })],
    ["a createdAt that is no date-time", token({ createdAt: "2020", id: randomUUID() })],
    ["a lone surrogate", raw(`{"createdAt":"2020-01-01T00:00:00.000Z","id":"\\ud800"}`)],
  ])("restore-point listing: %s", async (_label, cursor) => {
    const base = `/v1/companies/${randomUUID()}/execution-workspaces/${randomUUID()}/restore-points`;
    const response = await stack.api("GET", `${base}?cursor=${cursor}`);
    expect400(response, "cursor");
  });

  it.each([
    ["not base64 JSON", "!!!"],
    ["JSON null", token(null)],
    ["an array", token(["folders"])],
    ["a number as a position", token({ folders: 1 })],
    ["a position with a NUL", token({ folders: "a\u0000b" })],
    ["a position with a lone surrogate", raw(`{"folders":"\\udc00"}`)],
    ["a walk the domain has not", token({ "../../etc": "x" })],
  ])("sweep: %s", async (_label, cursor) => {
    const response = await stack.api("POST", "/v1/sweeps", {
      domain: "native-workspace-sync",
      dryRun: true,
      cursor,
    });
    expect400(response, "cursor");
  });
});

describe("an events batch is recorded all or nothing", () => {
  it("[live(now), evidence_written(9999-12-31)] leaves the stored liveness report alone", async () => {
    const before = new Date(Date.now() - 60_000).toISOString();
    expect((await stack.api("POST", "/v1/events", { events: [live("before", before)] })).status).toBe(202);
    const response = await stack.api("POST", "/v1/events", {
      events: [live("replaced?"), evidence("9999-12-31T23:59:59Z")],
    });
    expect400(response, "events.1.writtenAt");
    expect((await storedLiveness())?.sessions).toEqual([{ id: "before", state: "executing" }]);
  });

  it("a database failure in the middle of a batch rolls back what the batch recorded before it", async () => {
    const before = new Date(Date.now() - 30_000).toISOString();
    expect((await stack.api("POST", "/v1/events", { events: [live("kept", before)] })).status).toBe(202);
    // A real fault in PostgreSQL: the ledger refuses the batch's deadline, after the
    // liveness report was written in the same batch.
    await stack.db.$executeRawUnsafe(`
      CREATE FUNCTION test_refuse_deadline() RETURNS trigger LANGUAGE plpgsql AS
        $$ BEGIN RAISE EXCEPTION 'ledger refused the deadline (test)'; END $$`);
    await stack.db.$executeRawUnsafe(`
      CREATE TRIGGER test_refuse_deadline BEFORE INSERT OR UPDATE ON reclaim_deadlines
        FOR EACH ROW EXECUTE FUNCTION test_refuse_deadline()`);
    try {
      const response = await stack.api("POST", "/v1/events", {
        events: [live("not-recorded"), evidence(new Date().toISOString())],
      });
      expect(response.status).toBe(500);
      expect(response.body.error).toBe("RECLAIM_ERR_INTERNAL");
      expect((await storedLiveness())?.sessions).toEqual([{ id: "kept", state: "executing" }]);
    } finally {
      await stack.db.$executeRawUnsafe("DROP TRIGGER test_refuse_deadline ON reclaim_deadlines");
      await stack.db.$executeRawUnsafe("DROP FUNCTION test_refuse_deadline()");
    }
    // And with the ledger healthy again the same batch is recorded whole.
    const retried = await stack.api("POST", "/v1/events", {
      events: [live("recorded"), evidence(new Date().toISOString())],
    });
    expect(retried.body).toEqual({ accepted: 2, deadlines: 1 });
    expect((await storedLiveness())?.sessions).toEqual([{ id: "recorded", state: "executing" }]);
  });
});

describe("errors echo only a short prefix of what they were sent", () => {
  it("an unknown domain of 1 MiB", async () => {
    const response = await stack.api("POST", "/v1/sweeps", { domain: "d".repeat(1000 * 1000) });
    expect(response.status).toBe(400);
    expect(response.body.field).toBe("domain");
    expect(response.text.length).toBeLessThan(300);
  });

  it("an unknown domain of the longest accepted length", async () => {
    const response = await stack.api("GET", `/v1/reports?domain=${"d".repeat(100)}`);
    expect(response.status).toBe(404);
    expect(response.body).toMatchObject({ error: "RECLAIM_ERR_UNKNOWN_DOMAIN", field: "domain" });
    expect(response.body.message).toBe(`domain: no retention domain "${"d".repeat(40)}…"`);
  });

  it("an unknown route with a long path", async () => {
    const response = await stack.api("GET", `/v2/${"p".repeat(8000)}`);
    expect(response.status).toBe(404);
    expect(response.text.length).toBeLessThan(300);
  });
});

describe("authorization headers", () => {
  it.each([[`Bearer ${TEST_TOKEN} junk`], [`Bearer ${TEST_TOKEN} ${TEST_TOKEN}`], [`Bearer\t${TEST_TOKEN}`]])(
    "%j is refused",
    async (authorization) => {
      const response = await stack.scheduler.app.inject({
        method: "GET",
        url: "/v1/domains",
        headers: { authorization },
      });
      expect(response.statusCode).toBe(401);
    },
  );

  it.each([[`Bearer ${TEST_TOKEN}`], [`bearer ${TEST_TOKEN}`], [`Bearer  ${TEST_TOKEN} `]])(
    "%j is accepted",
    async (authorization) => {
      const response = await stack.scheduler.app.inject({
        method: "GET",
        url: "/v1/domains",
        headers: { authorization },
      });
      expect(response.statusCode).toBe(200);
    },
  );
});
