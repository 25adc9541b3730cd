/**
 * A client that stops sending in the middle of a request (headers never finished, or a body
 * shorter than its Content-Length) is closed after RECLAIM_HTTP_HEADERS_TIMEOUT_MS /
 * RECLAIM_HTTP_REQUEST_TIMEOUT_MS, not kept open. Raw sockets against a listening scheduler
 * with short timeouts.
 */
import net from "node:net";
import { readSchedulerConfig } from "@reclaim/core";
import { startStack, TEST_TOKEN, type Stack } from "@reclaim/testkit";

const HEADERS_TIMEOUT_MS = 300;
const REQUEST_TIMEOUT_MS = 600;
/** Generous for a loaded two-core machine; before the timeouts existed, such sockets stayed open for minutes. */
const CLOSED_WITHIN_MS = 5000;

let stack: Stack;
let port: number;
beforeAll(async () => {
  stack = await startStack({
    worker: false,
    env: {
      RECLAIM_HTTP_HEADERS_TIMEOUT_MS: String(HEADERS_TIMEOUT_MS),
      RECLAIM_HTTP_REQUEST_TIMEOUT_MS: String(REQUEST_TIMEOUT_MS),
    },
  });
  port = Number(new URL(await stack.scheduler.listen()).port);
});
afterAll(async () => stack?.stop());

/** Sends `data`, then nothing; resolves with what came back and when the server closed the socket. */
function stall(data: string): Promise<{ closedAfterMs: number | null; received: string }> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, "127.0.0.1");
    const started = Date.now();
    let received = "";
    const giveUp = setTimeout(() => {
      socket.destroy();
      resolve({ closedAfterMs: null, received });
    }, CLOSED_WITHIN_MS);
    socket.on("connect", () => socket.write(data));
    socket.on("data", (chunk) => (received += chunk.toString("latin1")));
    socket.on("error", reject);
    socket.on("close", () => {
      clearTimeout(giveUp);
      resolve({ closedAfterMs: Date.now() - started, received });
    });
  });
}

it("a body that stalls before its Content-Length is answered 408 and closed after the request timeout", async () => {
  const { closedAfterMs, received } = await stall(
    [
      "POST /v1/events HTTP/1.1",
      "Host: 127.0.0.1",
      `Authorization: Bearer ${TEST_TOKEN}`,
      "Content-Type: application/json",
      "Content-Length: 1000",
      "",
      '{"events": [',
    ].join("\r\n"),
  );
  expect(closedAfterMs).not.toBeNull();
  expect(closedAfterMs!).toBeGreaterThanOrEqual(REQUEST_TIMEOUT_MS - 50);
  expect(received).toMatch(/^HTTP\/1\.1 408 /);
});

it("headers that never finish are closed after the headers timeout", async () => {
  const { closedAfterMs } = await stall("GET /v1/domains HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ");
  expect(closedAfterMs).not.toBeNull();
  expect(closedAfterMs!).toBeGreaterThanOrEqual(HEADERS_TIMEOUT_MS - 50);
});

it("a request that arrives in time is answered as usual", async () => {
  const { received } = await stall(
    `GET /v1/domains HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${TEST_TOKEN}\r\nConnection: close\r\n\r\n`,
  );
  expect(received).toMatch(/^HTTP\/1\.1 200 /);
});

it("the timeouts are settings with defaults, and the request timeout cannot be shorter than the headers one", () => {
  const token = { RECLAIM_API_TOKEN: TEST_TOKEN };
  expect(readSchedulerConfig(token)).toMatchObject({
    headersTimeoutMs: 10_000,
    requestTimeoutMs: 30_000,
    connectionTimeoutMs: 600_000,
  });
  expect(() =>
    readSchedulerConfig({
      ...token,
      RECLAIM_HTTP_HEADERS_TIMEOUT_MS: "5000",
      RECLAIM_HTTP_REQUEST_TIMEOUT_MS: "1000",
    }),
  ).toThrow(/RECLAIM_HTTP_REQUEST_TIMEOUT_MS/);
  expect(() => readSchedulerConfig({ RECLAIM_API_TOKEN: "a token with spaces in it" })).toThrow(/whitespace/);
});
