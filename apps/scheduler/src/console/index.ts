/**
 * The operator console at /console: a login form that sets the session cookie (session.ts),
 * three pages (overview, domain, company) served as one HTML shell whose script reads the
 * JSON API (`/v1/domains`, `/v1/stats/*`, `/v1/reports`, `/v1/sweeps`, `/v1/jobs`), and its
 * static assets: the console's own files (apps/scheduler/console/assets) and uPlot's build
 * from node_modules, both through @fastify/static, nothing from a CDN. Page URLs are checked
 * with the API's guards, so an unknown domain or a malformed company id gets the API's
 * 404/400 body here too.
 */
import { readFileSync } from "node:fs";
import path from "node:path";
import fastifyStatic from "@fastify/static";
import { storableString } from "@reclaim/core";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { z } from "zod";
import { tokenMatches } from "../auth";
import type { ApiDeps } from "../deps";
import { implementedDomain } from "../routes/guards";
import { scopeParam } from "../routes/schemas";
import { parseInput } from "../validation";
import { clearedSessionCookie, issueSession, sessionCookie } from "./session";

const CONSOLE_DIR = path.resolve(__dirname, "../../console");
const UPLOT_DIR = path.dirname(require.resolve("uplot"));
const UPLOT_FILES = new Set(["/uPlot.esm.js", "/uPlot.min.css"]);

/** Headers of every console page: nothing but this origin's own scripts, styles and API. */
const PAGE_HEADERS = {
  "content-type": "text/html; charset=utf-8",
  "cache-control": "no-store",
  "content-security-policy":
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
    "frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
  "x-content-type-options": "nosniff",
  "referrer-policy": "same-origin",
};

const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

const template = (name: string) => readFileSync(path.join(CONSOLE_DIR, "pages", name), "utf8");

/**
 * Where the login form may send a browser back to: a console page, never another site nor,
 * through a `..` or `%2e` segment, another path.
 */
function safeNext(next: string | undefined): string {
  return next && /^\/console(\/[A-Za-z0-9_~-][A-Za-z0-9._~-]*)*$/.test(next) ? next : "/console";
}

const loginBody = z.object({
  token: storableString({ min: 1, max: 1000 }),
  next: storableString({ max: 1000 }).optional(),
});

export async function registerConsole(app: FastifyInstance, token: string, deps: ApiDeps): Promise<void> {
  const shell = template("index.html");
  const login = template("login.html");
  const loginPage = (reply: FastifyReply, status: number, next: string, error = "") =>
    reply
      .code(status)
      .headers(PAGE_HEADERS)
      .send(
        login
          .replace("{{next}}", escapeHtml(next))
          .replace("{{error}}", error ? `<p class="error" role="alert">${escapeHtml(error)}</p>` : ""),
      );
  const page = (_request: FastifyRequest, reply: FastifyReply) => reply.headers(PAGE_HEADERS).send(shell);

  await app.register(async (scope) => {
    // The login form posts url-encoded fields; only these routes parse them.
    scope.addContentTypeParser(
      "application/x-www-form-urlencoded",
      { parseAs: "string", bodyLimit: 8192 },
      (_request, body, done) => done(null, Object.fromEntries(new URLSearchParams(body as string))),
    );
    scope.get("/console/login", async (request, reply) => {
      const { next } = request.query as { next?: string };
      return loginPage(reply, 200, safeNext(typeof next === "string" ? next : undefined));
    });
    scope.post("/console/login", async (request, reply) => {
      const body = parseInput(loginBody, request.body, "body");
      const next = safeNext(body.next);
      if (!tokenMatches(token, body.token)) return loginPage(reply, 401, next, "Wrong token.");
      const secure = request.protocol === "https" || request.headers["x-forwarded-proto"] === "https";
      return reply
        .header("set-cookie", sessionCookie(issueSession(token, deps.clock.now()), secure))
        .redirect(next, 303);
    });
    scope.post("/console/logout", async (_request, reply) =>
      reply.header("set-cookie", clearedSessionCookie()).redirect("/console/login", 303),
    );
    scope.get("/console", page);
    scope.get("/console/domains/:domain", async (request, reply) => {
      implementedDomain(deps, (request.params as { domain: string }).domain);
      return page(request, reply);
    });
    scope.get("/console/companies/:companyId", async (request, reply) => {
      parseInput(z.object({ companyId: scopeParam }), request.params, "params");
      return page(request, reply);
    });
    await scope.register(fastifyStatic, {
      root: path.join(CONSOLE_DIR, "assets"),
      prefix: "/console/assets/",
      index: false,
      list: false,
    });
    await scope.register(fastifyStatic, {
      root: UPLOT_DIR,
      prefix: "/console/vendor/",
      decorateReply: false,
      index: false,
      allowedPath: (pathName) => UPLOT_FILES.has(pathName),
    });
  });
}
