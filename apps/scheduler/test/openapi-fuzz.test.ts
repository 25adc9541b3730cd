/**
 * Bad input never gets a 500, and every answer is the one documented: a property-based
 * test over the OpenAPI document the scheduler serves at /docs. For every operation it
 * sends requests whose path parameters, query parameters and body are built from the
 * documented schemas, mostly with one part replaced by a hostile value (NUL, lone
 * surrogates, bytes that are not UTF-8, extreme dates and numbers, JSON nested past any
 * limit, long strings, traversal strings, wrong types, extra and missing properties), over
 * real HTTP to a listening scheduler on real PostgreSQL and Redis. It fails on any 5xx that
 * is not a documented 501 (a known but unimplemented domain), on a status the operation does
 * not document, and on a body that does not match the schema documented for its status.
 *
 * Reproducible and bounded: a fixed seed and RUNS requests per operation (a few hundred in
 * all, seconds here). RECLAIM_FUZZ_SEED and RECLAIM_FUZZ_RUNS explore further by hand.
 */
import http from "node:http";
import { randomUUID } from "node:crypto";
import Ajv2020, { type ValidateFunction } from "ajv/dist/2020";
import addFormats from "ajv-formats";
import fc from "fast-check";
import { DOMAIN_IDS, encodeCursor } from "@reclaim/core";
import { startStack, TEST_TOKEN, type Stack } from "@reclaim/testkit";
import { insertIssue, insertWorkspace } from "@reclaim/testkit/src/fixtures/restore-points";
import {
  hostileFor,
  hostileInstance,
  validValue,
  type JsonSchema,
  type KnownValues,
} from "./fuzz/from-schema";
import { bodyBytes, paramText, Raw } from "./fuzz/hostile";

const SEED = Number(process.env.RECLAIM_FUZZ_SEED ?? 17);
/** Requests per field of an operation (and one more share for the valid request as a whole). */
const RUNS = Number(process.env.RECLAIM_FUZZ_RUNS ?? 12);

interface Parameter {
  name: string;
  in: "path" | "query";
  schema: JsonSchema;
}
interface Operation {
  operationId: string;
  parameters: Parameter[];
  requestBody?: { content: { "application/json": { schema: JsonSchema } } };
  responses: Record<string, { content?: Record<string, { schema: JsonSchema }> }>;
}
interface Sent {
  method: string;
  url: string;
  body?: Buffer;
}
interface Answer {
  status: number;
  contentType: string;
  text: string;
}

let stack: Stack;
let port: number;
const agent = new http.Agent({ keepAlive: true, maxSockets: 4 });
const knownValues: KnownValues = { uuids: [], strings: [...DOMAIN_IDS, "instance"], byName: {} };
/** Known values of one operation's fields, where they differ from other operations' (two kinds of cursor). */
const knownOf: Record<string, KnownValues["byName"]> = {};

beforeAll(async () => {
  stack = await startStack({ worker: false });
  port = Number(new URL(await stack.scheduler.listen()).port);
  // Rows and jobs that exist, so that a request's valid parts reach past the lookups.
  const company = randomUUID();
  const issue = await insertIssue(stack, { companyId: company });
  const workspace = await insertWorkspace(stack, company, issue);
  const points: string[] = [];
  for (const generation of [1, 2]) {
    const registered = await stack.api("POST", `/v1/companies/${company}/restore-points`, {
      executionWorkspaceId: workspace,
      sourceIssueId: issue,
      generation,
      kind: "worktree",
    });
    points.push(registered.body.restorePoint.id);
  }
  const page = await stack.api(
    "GET",
    `/v1/companies/${company}/execution-workspaces/${workspace}/restore-points?limit=1`,
  );
  const sweep = await stack.api("POST", "/v1/sweeps", { domain: "native-workspace-sync", dryRun: true });
  knownValues.uuids.push(company, issue, workspace, ...points);
  knownValues.strings.push(sweep.body.jobId, ...DOMAIN_IDS.map((id) => `${id}--instance`));
  knownValues.byName = {
    companyId: [company],
    workspaceId: [workspace],
    executionWorkspaceId: [workspace],
    sourceIssueId: [issue],
    issueId: [issue],
    id: points,
    jobId: [
      sweep.body.jobId,
      `native-workspace-sync--${company}`,
      ...DOMAIN_IDS.map((id) => `${id}--instance`),
      ...DOMAIN_IDS.map((id) => `sweep--${id}--${randomUUID()}`),
    ],
    domain: [...DOMAIN_IDS],
  };
  knownOf.listRestorePoints = {
    cursor: [page.body.nextCursor],
    status: ["active", "pending", "pending,active,expiring"],
  };
  // A sweep's cursor (the shape a check's walks write into nextCursor).
  knownOf.requestSweep = { cursor: [encodeCursor({ folders: "a", leftovers: "b" })] };
});
afterAll(async () => {
  agent.destroy();
  await stack?.stop();
});

function send(request: Sent): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: "127.0.0.1",
        port,
        method: request.method,
        path: request.url,
        agent,
        timeout: 20_000,
        headers: {
          authorization: `Bearer ${TEST_TOKEN}`,
          ...(request.body
            ? { "content-type": "application/json", "content-length": request.body.length }
            : {}),
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("end", () =>
          resolve({
            status: res.statusCode ?? 0,
            contentType: String(res.headers["content-type"] ?? ""),
            text: Buffer.concat(chunks).toString("utf8"),
          }),
        );
        res.on("error", reject);
      },
    );
    req.on("timeout", () => req.destroy(new Error("no answer within 20 s")));
    req.on("error", reject);
    req.end(request.body);
  });
}

const ajv = new Ajv2020({ strict: false, allErrors: false });
addFormats(ajv);
const validators = new Map<JsonSchema, ValidateFunction>();
function validatorOf(schema: JsonSchema): ValidateFunction {
  let validate = validators.get(schema);
  if (!validate) validators.set(schema, (validate = ajv.compile(schema)));
  return validate;
}

/** Why `answer` breaks the document (null when it is a documented answer). */
function problemWith(operation: Operation, answer: Answer): string | null {
  const documented = operation.responses[String(answer.status)];
  if (answer.status >= 500 && !(answer.status === 501 && documented)) return `a ${answer.status}`;
  if (!documented) return `status ${answer.status}, which the operation does not document`;
  const mediaType = answer.contentType.split(";")[0]!.trim();
  if (!documented.content) return answer.text.length ? "a body where none is documented" : null;
  const media = documented.content[mediaType];
  if (!media) return `content type ${JSON.stringify(mediaType)}, which is not documented for it`;
  if (mediaType !== "application/json") return null;
  let body: unknown;
  try {
    body = JSON.parse(answer.text);
  } catch {
    return "a body that is not JSON";
  }
  const validate = validatorOf(media.schema);
  return validate(body) ? null : `a body off its schema: ${ajv.errorsText(validate.errors)}`;
}

/**
 * A hostile path or query value (within Node's 16 KiB header limit, whose 431 comes before any
 * route). A long poll's hostile `wait` is never a valid one of more than a second (shortPolls).
 */
const hostileParameter = ({ name, schema }: Parameter, known: KnownValues) =>
  hostileFor(name, known, schema.type === "integer" || schema.type === "number" ? 0 : "")
    .filter((v) => (typeof v === "string" || v instanceof Raw ? paramLength(v) : 0) <= 2500)
    .filter((v) => paramText(v).length <= 8000)
    .filter((v) => name !== "wait" || !(Number(v instanceof Raw ? v.text : v) > 1));

function paramLength(v: string | Raw): number {
  return typeof v === "string" ? v.length : v.text.length;
}

/**
 * A long poll (`?wait=<seconds>`, answered when the job finishes or the time is up) waits at
 * most a second here: there is no worker, so a valid wait always runs out, and its answer
 * when it does (202) is what the test checks.
 */
function shortPolls(parameter: Parameter): Parameter {
  return parameter.name === "wait"
    ? { ...parameter, schema: { ...parameter.schema, maximum: 1 } }
    : parameter;
}

/**
 * Requests for one operation: every field valid (from the known values first) but one, the
 * focus, which is hostile: a path parameter, a query parameter (also given twice, which the
 * query parser turns into an array) or the body (a valid body with one part replaced,
 * removed or added). Sometimes no focus: the request is valid as a whole.
 */
function requests(path: string, method: string, operation: Operation): fc.Arbitrary<Sent> {
  const known = { ...knownValues, byName: { ...knownValues.byName, ...knownOf[operation.operationId] } };
  const pathParameters = operation.parameters.filter((p) => p.in === "path");
  const queryParameters = operation.parameters.filter((p) => p.in === "query").map(shortPolls);
  const body = operation.requestBody?.content["application/json"].schema;
  const fieldCount = pathParameters.length + queryParameters.length + (body ? 1 : 0);
  // One arbitrary per focus (the last: none), built once: building them is not cheap.
  const variants = Array.from({ length: fieldCount + 1 }, (_, focus) => {
    let field = 0;
    const pathValues = pathParameters.map((p) =>
      // An empty segment addresses another route (or none): not this operation's input.
      field++ === focus
        ? hostileParameter(p, known).filter((v) => paramText(v).length > 0)
        : validValue(p.schema, known, p.name),
    );
    const queryValues = queryParameters.map((p) =>
      field++ === focus
        ? fc.oneof(
            { weight: 4, arbitrary: hostileParameter(p, known).map((v) => [v]) },
            {
              weight: 1,
              arbitrary: fc.tuple(hostileParameter(p, known), validValue(p.schema, known, p.name)),
            },
          )
        : fc.option(
            validValue(p.schema, known, p.name).map((v) => [v]),
            { freq: 2 },
          ),
    );
    const bodyValue = !body
      ? fc.constant(undefined)
      : field++ === focus
        ? hostileInstance(body, known)
        : validValue(body, known);
    return fc.record({ path: fc.tuple(...pathValues), query: fc.tuple(...queryValues), body: bodyValue });
  });
  return fc.oneof(...variants).map(({ path: values, query, body: sentBody }) => {
    let url = path;
    pathParameters.forEach((p, i) => (url = url.replace(`{${p.name}}`, paramText(values[i]))));
    const pairs = queryParameters.flatMap((p, i) =>
      ((query[i] as unknown[] | null) ?? []).map((v) => `${encodeURIComponent(p.name)}=${paramText(v)}`),
    );
    if (pairs.length) url += `?${pairs.join("&")}`;
    return { method: method.toUpperCase(), url, ...(body ? { body: bodyBytes(sentBody) } : {}) };
  });
}

const shown = (text: string) => (text.length > 300 ? `${text.slice(0, 300)}… (${text.length} chars)` : text);

it(
  "every operation of /docs answers hostile input as documented, never with a 500",
  async () => {
    const docs = await send({ method: "GET", url: "/docs" });
    const paths = JSON.parse(docs.text).paths as Record<string, Record<string, Operation>>;
    const failures: string[] = [];
    const reached: Record<string, Set<number>> = {};
    for (const [path, operations] of Object.entries(paths)) {
      for (const [method, operation] of Object.entries(operations)) {
        const statuses = (reached[operation.operationId] = new Set());
        const result = await fc.check(
          fc.asyncProperty(requests(path, method, operation), async (request) => {
            const answer = await send(request);
            statuses.add(answer.status);
            const problem = problemWith(operation, answer);
            if (problem) {
              throw new Error(`${problem}\n  answer: ${shown(answer.text)}`);
            }
          }),
          { seed: SEED, numRuns: RUNS * (operation.parameters.length + (operation.requestBody ? 2 : 1)) },
        );
        if (result.failed) {
          const [request] = result.counterexample ?? [];
          failures.push(
            `${operation.operationId} (${method.toUpperCase()} ${path}) answered ${result.errorInstance instanceof Error ? result.errorInstance.message : String(result.errorInstance)}\n` +
              `  to: ${request ? `${request.method} ${shown(request.url)} ${shown(request.body?.toString("latin1") ?? "")}` : "?"}\n` +
              `  (seed ${result.seed}, path ${JSON.stringify(result.counterexamplePath)})`,
          );
        }
      }
    }
    expect(failures).toEqual([]);

    // Every operation was reached, and its valid parts got past validation at least once.
    expect(Object.keys(reached).length).toBeGreaterThanOrEqual(18);
    for (const [id, statuses] of Object.entries(reached)) {
      expect({ id, beyondValidation: [...statuses].some((s) => s !== 400) }).toEqual({
        id,
        beyondValidation: true,
      });
    }
    // A clean run takes seconds (tens on a loaded machine); shrinking a failure takes longer.
  },
  Math.max(180_000, RUNS * 15_000),
);
