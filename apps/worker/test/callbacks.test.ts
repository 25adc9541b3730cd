/**
 * Report callbacks: with RECLAIM_CALLBACK_URL set, every report is POSTed there, signed
 * with HMAC-SHA256 of the body, and retried with backoff until the receiver accepts it.
 */
import { createServer, type IncomingMessage } from "node:http";
import { randomUUID } from "node:crypto";
import { verifySignature } from "@reclaim/core";
import { startStack, waitFor } from "@reclaim/testkit";
import { sweep } from "@reclaim/testkit/src/fixtures/native-workspace-sync";

const read = (req: IncomingMessage) =>
  new Promise<string>((resolve) => {
    let body = "";
    req.on("data", (c: Buffer) => (body += c.toString()));
    req.on("end", () => resolve(body));
  });

it("POSTs each report signed with HMAC-SHA256, retrying with backoff after a failure", async () => {
  const received: { body: string; signature: string | undefined; status: number }[] = [];
  const server = createServer(async (req, res) => {
    const body = await read(req);
    const id = JSON.parse(body).id as string;
    const status = received.some((r) => JSON.parse(r.body).id === id) ? 204 : 503; // each report's first delivery fails
    received.push({ body, signature: req.headers["x-reclaim-signature"] as string | undefined, status });
    res.writeHead(status).end();
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  const secret = "callback-secret-0123456789";
  const stack = await startStack({
    env: { RECLAIM_CALLBACK_URL: `http://127.0.0.1:${port}/reclaim`, RECLAIM_CALLBACK_SECRET: secret },
  });
  try {
    const company = randomUUID();
    const report = await sweep(stack, company, { dryRun: true });
    const delivered = await waitFor(
      () =>
        received
          .filter((r) => r.status === 204)
          .map((r) => JSON.parse(r.body))
          .find((b) => b.jobId && b.companyId === company),
      { what: "the report's delivery", timeoutMs: 30_000 },
    );
    expect(delivered).toMatchObject({
      id: expect.any(String),
      domain: "native-workspace-sync",
      dryRun: true,
      checked: report.checked,
    });
    const attempts = received.filter((r) => JSON.parse(r.body).id === delivered.id);
    expect(attempts.map((a) => a.status)).toEqual([503, 204]);
    for (const attempt of received)
      expect(verifySignature(attempt.body, secret, attempt.signature)).toBe(true);
    expect(verifySignature(attempts[0]!.body, "another-secret", attempts[0]!.signature)).toBe(false);
  } finally {
    await stack.stop();
    server.close();
  }
});
