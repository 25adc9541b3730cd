/**
 * The console's server side over real HTTP: the login form and its session cookie (HttpOnly,
 * SameSite=Strict, signed with a key derived from the API token), Bearer and Basic auth still
 * working beside it, changes through the cookie only from the console's own origin, page URLs
 * checked with the API's guards, and static assets from this server only. The pages themselves
 * are driven in Chromium by console.browser.test.ts.
 */
import { randomUUID } from "node:crypto";
import { startStack, TEST_TOKEN, type Stack } from "@reclaim/testkit";
import { issueSession, SESSION_TTL_MS, sessionValid } from "../src/console/session";

let stack: Stack;
let base: string;
beforeAll(async () => {
  stack = await startStack({ worker: false });
  base = await stack.scheduler.listen();
});
afterAll(async () => stack?.stop());

const form = (fields: Record<string, string>) => ({
  method: "POST",
  headers: { "content-type": "application/x-www-form-urlencoded" },
  body: new URLSearchParams(fields).toString(),
  redirect: "manual" as const,
});

async function login(token = TEST_TOKEN, next?: string) {
  return fetch(`${base}/console/login`, form({ token, ...(next ? { next } : {}) }));
}

async function session(): Promise<string> {
  const cookie = (await login()).headers.get("set-cookie")!;
  return cookie.split(";")[0]!;
}

describe("logging in", () => {
  it("the right token sets an HttpOnly, SameSite=Strict session cookie and goes to the console", async () => {
    const response = await login();
    expect(response.status).toBe(303);
    expect(response.headers.get("location")).toBe("/console");
    const cookie = response.headers.get("set-cookie")!;
    expect(cookie).toMatch(/^reclaim_session=[^;]+; Path=\/; Max-Age=43200; HttpOnly; SameSite=Strict$/);
    expect(cookie).not.toContain(TEST_TOKEN);
  });

  it("a wrong token is refused with the form again and no cookie", async () => {
    const response = await login("wrong-token-0123456789");
    expect(response.status).toBe(401);
    expect(response.headers.get("set-cookie")).toBeNull();
    expect(await response.text()).toContain("Wrong token.");
    const empty = await fetch(`${base}/console/login`, form({}));
    expect(empty.status).toBe(400);
    expect(((await empty.json()) as { field: string }).field).toBe("token");
  });

  it("goes back only to a console page", async () => {
    expect((await login(TEST_TOKEN, "/console/domains/native-workspace-sync")).headers.get("location")).toBe(
      "/console/domains/native-workspace-sync",
    );
    for (const next of [
      "https://evil.example/",
      "//evil.example/console",
      "/console/../admin",
      "/v1/reports",
    ]) {
      expect((await login(TEST_TOKEN, next)).headers.get("location")).toBe("/console");
    }
  });

  it("a browser asking for a page without a session is sent to the login form; scripts get a 401", async () => {
    const page = await fetch(`${base}/console/domains/native-workspace-sync`, {
      headers: { accept: "text/html" },
      redirect: "manual",
    });
    expect(page.status).toBe(303);
    expect(page.headers.get("location")).toBe(
      "/console/login?next=%2Fconsole%2Fdomains%2Fnative-workspace-sync",
    );
    const script = await fetch(`${base}/console`);
    expect(script.status).toBe(401);
    expect(await script.json()).toEqual({
      error: "RECLAIM_ERR_UNAUTHORIZED",
      message: "A valid bearer token is required",
    });
  });

  it("sessions expire, and a forged or altered one is refused", () => {
    const now = new Date();
    const value = issueSession(TEST_TOKEN, now);
    expect(sessionValid(TEST_TOKEN, value, now)).toBe(true);
    expect(sessionValid(TEST_TOKEN, value, new Date(now.getTime() + SESSION_TTL_MS + 1))).toBe(false);
    expect(sessionValid("another-token-0123456789", value, now)).toBe(false);
    const [expiry, nonce, mac] = value.split(".");
    const later = (parseInt(expiry!, 36) + 86_400_000).toString(36);
    expect(sessionValid(TEST_TOKEN, `${later}.${nonce}.${mac}`, now)).toBe(false);
    expect(sessionValid(TEST_TOKEN, undefined, now)).toBe(false);
  });
});

describe("what the session cookie opens", () => {
  it("the API, the pages, /docs, /metrics and bull-board, as the token does", async () => {
    const cookie = await session();
    for (const path of ["/v1/stats/totals", "/console", "/docs", "/metrics", "/admin/queues"]) {
      const response = await fetch(base + path, { headers: { cookie } });
      expect({ path, status: response.status }).toEqual({ path, status: 200 });
    }
    // Bearer and Basic keep working for scripts.
    const basic = Buffer.from(`ops:${TEST_TOKEN}`).toString("base64");
    expect(
      (await fetch(`${base}/v1/stats/totals`, { headers: { authorization: `Basic ${basic}` } })).status,
    ).toBe(200);
    expect((await stack.api("GET", "/v1/stats/totals")).status).toBe(200);
  });

  it("a change through the cookie must come from the console's own origin", async () => {
    const cookie = await session();
    const sweep = (headers: Record<string, string>) =>
      fetch(`${base}/v1/sweeps`, {
        method: "POST",
        headers: { cookie, "content-type": "application/json", ...headers },
        body: JSON.stringify({ domain: "native-workspace-sync", companyId: randomUUID(), dryRun: true }),
      });
    expect((await sweep({})).status).toBe(401);
    expect((await sweep({ origin: "https://evil.example" })).status).toBe(401);
    expect((await sweep({ origin: base })).status).toBe(202);
  });

  it("logging out clears the cookie", async () => {
    const cookie = await session();
    const out = await fetch(`${base}/console/logout`, {
      method: "POST",
      headers: { cookie, origin: base },
      redirect: "manual",
    });
    expect(out.status).toBe(303);
    expect(out.headers.get("set-cookie")).toMatch(/^reclaim_session=; Path=\/; Max-Age=0/);
  });
});

describe("pages and assets", () => {
  it("an unknown domain or a malformed company id in a page URL gets the API's 404/400 body", async () => {
    const cookie = await session();
    const domain = await fetch(`${base}/console/domains/nope`, { headers: { cookie } });
    expect(domain.status).toBe(404);
    expect(await domain.json()).toEqual((await stack.api("GET", "/v1/reports?domain=nope")).body);
    const company = await fetch(`${base}/console/companies/not-a-uuid`, { headers: { cookie } });
    expect(company.status).toBe(400);
    expect(((await company.json()) as { field: string }).field).toBe("companyId");
    expect((await fetch(`${base}/console/companies/instance`, { headers: { cookie } })).status).toBe(200);
  });

  it("pages allow only this origin's scripts, styles and API", async () => {
    const page = await fetch(`${base}/console`, { headers: { cookie: await session() } });
    const policy = page.headers.get("content-security-policy")!;
    expect(policy).toContain("default-src 'self'");
    expect(policy).toContain("script-src 'self'");
    expect(await page.text()).not.toMatch(/https?:\/\//);
  });

  it("assets are served without a session; the vendor folder serves only uPlot's build", async () => {
    const app = await fetch(`${base}/console/assets/app.js`);
    expect(app.status).toBe(200);
    expect(app.headers.get("content-type")).toMatch(/javascript/);
    expect((await fetch(`${base}/console/vendor/uPlot.esm.js`)).status).toBe(200);
    expect((await fetch(`${base}/console/vendor/uPlot.min.css`)).status).toBe(200);
    for (const path of [
      "/console/vendor/uPlot.d.ts",
      "/console/vendor/../package.json",
      "/console/assets/../pages/login.html",
    ]) {
      expect({ path, status: (await fetch(base + path)).status }).not.toEqual({ path, status: 200 });
    }
  });
});
