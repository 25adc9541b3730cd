/**
 * Restore-point retention when an issue change and a review meet on the same rows, with two
 * real connections: the worker's review (paused at a fault point while it holds its row
 * locks and has read the tree) and a transaction that changes an issue of that tree. The
 * order of events is forced by what PostgreSQL reports (a backend waiting on a lock), never
 * by sleeping. Real scheduler, worker, LISTEN/NOTIFY and PostgreSQL.
 */
import { randomUUID } from "node:crypto";
import pg from "pg";
import { FaultPoints } from "@reclaim/core";
import { startStack, waitFor, type Stack } from "@reclaim/testkit";
import {
  advanceDeadlines,
  DAY_MS,
  deadlinesOf,
  DOMAIN,
  insertIssue,
  insertRestorePoint,
  outcomeOf,
  restorePointRow,
  sweepRestorePoints,
} from "@reclaim/testkit/src/fixtures/restore-points";

const ago = (ms: number) => new Date(Date.now() - ms);

/** Holds the first review that reaches the fault point after `arm()`, until `release()`. */
class ReviewPause {
  private armed = false;
  private reachedNow!: () => void;
  private releaseNow!: () => void;
  reached = Promise.resolve();

  arm(): void {
    this.armed = true;
    this.reached = new Promise<void>((resolve) => (this.reachedNow = resolve));
  }

  readonly handler = async (): Promise<void> => {
    if (!this.armed) return;
    this.armed = false;
    const released = new Promise<void>((resolve) => (this.releaseNow = resolve));
    this.reachedNow();
    await released;
  };

  release(): void {
    this.releaseNow();
  }
}

let stack: Stack;
const pause = new ReviewPause();
beforeAll(async () => {
  stack = await startStack({
    // Wake-ups stay in the ledger until a test runs them (advanceDeadlines).
    env: { RECLAIM_RESTORE_POINT_SETTLE_MS: "600000" },
    faults: FaultPoints.of({ "restore-point-retention.after-tree-read": pause.handler }),
  });
});
afterAll(async () => stack?.stop());

/** A connection of its own, as Paperclip's server would use to change issues. */
async function connection(): Promise<{ client: pg.Client; pid: number }> {
  const client = new pg.Client({ connectionString: stack.database.url });
  await client.connect();
  const { rows } = await client.query<{ pid: number }>("SELECT pg_backend_pid() AS pid");
  return { client, pid: rows[0]!.pid };
}

/** The backends that `pid` waits for, when it waits on a lock (empty otherwise). */
async function blockersOf(pid: number): Promise<number[]> {
  const rows = await stack.db.$queryRawUnsafe<{ blockers: number[] }[]>(
    `SELECT pg_blocking_pids(pid) AS blockers FROM pg_stat_activity
      WHERE pid = $1::int AND wait_event_type = 'Lock'`,
    pid,
  );
  return rows[0]?.blockers ?? [];
}

describe("an issue change that commits while a review holds the tree's restore points", () => {
  it("waits for the review's row lock and marks the row due again, so the closed tree still expires", async () => {
    const company = randomUUID();
    const closedAt = ago(100 * DAY_MS);
    const root = await insertIssue(stack, { companyId: company, status: "done", closedAt });
    const lastOpen = await insertIssue(stack, { companyId: company, parentId: root, status: "todo" });
    // Already due (an earlier change marked it): the review below picks it up.
    const id = await insertRestorePoint(stack, {
      companyId: company,
      sourceIssueId: root,
      deleteAfter: ago(1000),
    });

    pause.arm();
    const sweep = sweepRestorePoints(stack, company);
    await pause.reached; // the review holds the row and has read the tree: still open

    const paperclip = await connection();
    try {
      await paperclip.client.query("BEGIN");
      let updated = false;
      const closing = paperclip.client
        .query("UPDATE issues SET status = 'done', completed_at = $2 WHERE id = $1", [lastOpen, closedAt])
        .then(() => (updated = true));
      // Either the update waits for the review's lock, or it finished without waiting.
      const blockedBy = await waitFor(
        async () => (updated ? "nothing" : (await blockersOf(paperclip.pid)).length > 0 && "the review"),
        { what: "the issue update to wait or finish" },
      );

      pause.release(); // the review writes its verdict (tree open: clear delete_after) and commits
      await closing;
      const report = await sweep;
      expect(outcomeOf(report, id)).toBe("tree_open");
      await paperclip.client.query("COMMIT");

      const row = await restorePointRow(stack, id);
      expect(row.status).toBe("active");
      expect(row.deleteAfter).not.toBeNull();
      expect(row.deleteAfter!.getTime()).toBeLessThanOrEqual(Date.now());
      expect(blockedBy).toBe("the review");
    } finally {
      await paperclip.client.end();
    }

    // The trigger's notification asked for a review; run it now instead of after the settle window.
    await waitFor(async () => (await deadlinesOf(stack, company)).get("issue_changed"), {
      what: "the issue_changed wake-up",
    });
    await advanceDeadlines(stack, company);
    await waitFor(async () => (await restorePointRow(stack, id)).status === "deleted", {
      what: "the closed tree's restore point to expire and be deleted",
    });
  });
});

describe("a transaction that changes issues of two trees while a review needs rows of both", () => {
  it("never forms a lock cycle: the review skips the row the change holds and completes, and the change's commit wakes a review of both", async () => {
    const company = randomUUID();
    const trees = [
      await insertIssue(stack, { companyId: company }),
      await insertIssue(stack, { companyId: company }),
    ];
    const rows = await Promise.all(
      trees.map(async (issue) => ({
        issue,
        id: await insertRestorePoint(stack, {
          companyId: company,
          sourceIssueId: issue,
          deleteAfter: ago(1000),
        }),
      })),
    );
    // Reviews lock in id order: `first`, then `second`.
    const [first, second] = rows.sort((a, b) => (a.id < b.id ? -1 : 1));

    const paperclip = await connection();
    try {
      await paperclip.client.query("BEGIN");
      const close = (issue: string) =>
        paperclip.client.query("UPDATE issues SET status = 'done', completed_at = now() WHERE id = $1", [
          issue,
        ]);
      await close(second!.issue); // holds `second`

      // The review takes `first`, skips `second` (held), and finishes without waiting.
      const report = await sweepRestorePoints(stack, company);
      expect(report.error).toBeNull();
      expect(outcomeOf(report, first!.id)).toBe("tree_open");
      expect(outcomeOf(report, second!.id)).toBeUndefined();

      await close(first!.issue); // `first` is free again: no wait, no cycle
      await paperclip.client.query("COMMIT");
    } finally {
      await paperclip.client.end();
    }
    // The change's notification schedules a review; it sees both trees closed.
    await waitFor(async () => (await deadlinesOf(stack, company)).get("issue_changed"), {
      what: "the issue_changed wake-up",
    });
    await advanceDeadlines(stack, company);
    for (const row of rows) {
      await waitFor(
        async () =>
          ((await restorePointRow(stack, row.id)).deleteAfter?.getTime() ?? 0) > Date.now() + DAY_MS,
        { what: "the review of both closed trees", timeoutMs: 30_000 },
      );
    }
  });

  it("a deadline batch that finds every due row held elsewhere looks again 5 seconds later, never at once", async () => {
    const company = randomUUID();
    const issue = await insertIssue(stack, { companyId: company });
    const id = await insertRestorePoint(stack, {
      companyId: company,
      sourceIssueId: issue,
      deleteAfter: ago(1000),
    });
    const holder = await connection();
    try {
      await holder.client.query("BEGIN");
      await holder.client.query("SELECT 1 FROM execution_workspace_restore_points WHERE id = $1 FOR UPDATE", [
        id,
      ]);
      const before = Date.now();
      await stack.scheduler.deps.queues.request([
        { domain: DOMAIN, scope: company, reason: "issue_changed", dueAt: new Date() },
      ]);
      const next = await waitFor(async () => (await deadlinesOf(stack, company)).get("continue"), {
        what: "the batch to schedule its next look",
      });
      expect(next.getTime()).toBeGreaterThanOrEqual(before + 4_000);
      expect(next.getTime()).toBeLessThanOrEqual(Date.now() + 5_000);
      expect((await restorePointRow(stack, id)).deleteAfter).not.toBeNull(); // untouched
    } finally {
      await holder.client.query("ROLLBACK");
      await holder.client.end();
    }
  });
});
