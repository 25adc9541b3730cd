/**
 * The reopen route (POST /v1/companies/:companyId/execution-workspaces/:workspaceId/reopen):
 * validation naming the field, 404 for another company's workspace, the job on the reopen
 * queue run by the worker under the expiration locks, `?wait=` answering the result, and
 * `GET /v1/jobs/:jobId` answering it later. The kinds' own restores are tested with their
 * domains (task-directories, git-restore-points).
 */
import { randomUUID } from "node:crypto";
import { startStack, type Stack } from "@reclaim/testkit";
import pg from "pg";

let stack: Stack;
beforeAll(async () => {
  stack = await startStack();
});
afterAll(async () => stack?.stop());

async function workspace(status: string, fields: { mode?: string; strategyType?: string } = {}) {
  const company = randomUUID();
  const issue = randomUUID();
  const id = randomUUID();
  await stack.db.issue.create({
    data: { id: issue, companyId: company, status: "done", completedAt: new Date() },
  });
  await stack.db.executionWorkspace.create({
    data: {
      id,
      companyId: company,
      sourceIssueId: issue,
      status,
      cwd: `/srv/w/${id}`,
      mode: fields.mode ?? "isolated_workspace",
      strategyType: fields.strategyType ?? "adapter_managed",
      providerType: "adapter_managed",
    },
  });
  return { company, issue, id, url: `/v1/companies/${company}/execution-workspaces/${id}/reopen` };
}

describe("POST .../execution-workspaces/:workspaceId/reopen", () => {
  it("answers 400 naming the field for a bad reason or wait, and 404 for another company's workspace", async () => {
    const w = await workspace("archived");
    const bad = await stack.api("POST", w.url, { reason: "because" });
    expect([bad.status, bad.body.field]).toEqual([400, "reason"]);
    const tooLong = await stack.api("POST", `${w.url}?wait=121`, { reason: "run" });
    expect([tooLong.status, tooLong.body.field]).toEqual([400, "wait"]);
    const elsewhere = await stack.api(
      "POST",
      `/v1/companies/${randomUUID()}/execution-workspaces/${w.id}/reopen`,
      {
        reason: "run",
      },
    );
    expect([elsewhere.status, elsewhere.body.error]).toEqual([404, "RECLAIM_ERR_WORKSPACE_NOT_FOUND"]);
  });

  it("an open workspace is already applied; with ?wait the result comes in the same call", async () => {
    const w = await workspace("active");
    const answer = await stack.api("POST", `${w.url}?wait=30`, { reason: "comment" });
    expect(answer.status).toBe(200);
    expect(answer.body).toEqual({
      jobId: expect.stringMatching(/^reopen--/),
      outcome: "already_applied",
      path: `/srv/w/${w.id}`,
    });
  });

  it("a closed workspace no domain can restore fails (the run must not start elsewhere), and stays closed", async () => {
    const w = await workspace("archived");
    const answer = await stack.api("POST", `${w.url}?wait=30`, { reason: "run" });
    expect(answer.body).toMatchObject({ outcome: "failed", reason: "not_reopenable" });
    expect((await stack.db.executionWorkspace.findUnique({ where: { id: w.id } }))!.status).toBe("archived");
  });

  it("without ?wait: 202 {jobId}, and GET /v1/jobs/:jobId answers the result once it ran", async () => {
    const w = await workspace("idle");
    const queued = await stack.api("POST", w.url, { reason: "agent_update" });
    expect(queued.status).toBe(202);
    const jobId = queued.body.jobId as string;
    let job = await stack.api("GET", `/v1/jobs/${jobId}`);
    for (let i = 0; i < 600 && job.body.state !== "completed"; i++) {
      await new Promise((r) => setTimeout(r, 100));
      job = await stack.api("GET", `/v1/jobs/${jobId}`);
    }
    expect(job.body).toEqual({
      jobId,
      state: "completed",
      result: { outcome: "already_applied", path: `/srv/w/${w.id}` },
    });
    expect((await stack.api("GET", `/v1/jobs/reopen--${randomUUID()}`)).status).toBe(404);
  });

  it("waits for the issue's source lock, as expiration takes it", async () => {
    const w = await workspace("active");
    const paperclip = new pg.Client({ connectionString: stack.database.url });
    await paperclip.connect();
    try {
      await paperclip.query("BEGIN");
      await paperclip.query("UPDATE issues SET status = 'todo' WHERE id = $1", [w.issue]);
      const held = await stack.api("POST", `${w.url}?wait=1`, { reason: "run" });
      expect(held.status).toBe(202);
      await paperclip.query("COMMIT");
      let job = await stack.api("GET", `/v1/jobs/${held.body.jobId}`);
      for (let i = 0; i < 600 && job.body.state !== "completed"; i++) {
        await new Promise((r) => setTimeout(r, 100));
        job = await stack.api("GET", `/v1/jobs/${held.body.jobId}`);
      }
      expect(job.body.result).toMatchObject({ outcome: "already_applied" });
    } finally {
      await paperclip.end();
    }
  });
});
