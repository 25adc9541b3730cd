/**
 * The `issues` and `companies` triggers of the restore-point ledger, on real PostgreSQL:
 * they run inside the transaction that changes the issue (visible before commit, gone on
 * rollback), walk ancestors through deep trees and parent cycles, mark deletions, and notify
 * only when that transaction commits. Also on Paperclip's full `issues` table.
 */
import { randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import path from "node:path";
import pg from "pg";
import { createDb, type Db } from "@reclaim/core";
import { applyMigrations, REPO_ROOT } from "@reclaim/core/src/db/migrate";
import { createEmptyDatabase, createTestDatabase, waitFor, type TestDatabase } from "@reclaim/testkit";
import {
  closeIssue,
  insertChain,
  insertIssue,
  insertRestorePoint,
  restorePointRow,
} from "@reclaim/testkit/src/fixtures/restore-points";

let database: TestDatabase;
let db: Db;
let client: pg.Client;

beforeAll(async () => {
  database = await createTestDatabase();
  db = createDb(database.url, { max: 4 });
  client = new pg.Client({ connectionString: database.url });
  await client.connect();
});
afterAll(async () => {
  await client?.end();
  await db?.$disconnect();
  await database?.drop();
});

const ctx = () => ({ db });
const HOUR = 3600_000;

async function dueFlags(ids: string[]): Promise<boolean[]> {
  const rows = await db.executionWorkspaceRestorePoint.findMany({ where: { id: { in: ids } } });
  const byId = new Map(rows.map((r) => [r.id, r]));
  return ids.map((id) => byId.get(id)!.deleteAfter !== null);
}

/** Runs `sql` in a transaction on its own connection, calls `inside` before deciding, then commits or rolls back. */
async function inTransaction<T>(
  sql: string,
  params: unknown[],
  inside: (c: pg.Client) => Promise<T>,
  commit: boolean,
) {
  const c = new pg.Client({ connectionString: database.url });
  await c.connect();
  try {
    await c.query("BEGIN");
    await c.query(sql, params);
    const seen = await inside(c);
    await c.query(commit ? "COMMIT" : "ROLLBACK");
    return seen;
  } finally {
    await c.end();
  }
}

describe("an issue's status changes", () => {
  it("marks the active restore points of that issue and of every ancestor due, in the same transaction", async () => {
    const company = randomUUID();
    const chain = await insertChain(ctx(), company, 300);
    const changed = chain[200]!;
    const below = chain[250]!;
    const sibling = await insertIssue(ctx(), { companyId: company, parentId: chain[100] });
    const points = {
      root: await insertRestorePoint(ctx(), { companyId: company, sourceIssueId: chain[0]! }),
      middle: await insertRestorePoint(ctx(), { companyId: company, sourceIssueId: chain[150]! }),
      changed: await insertRestorePoint(ctx(), { companyId: company, sourceIssueId: changed }),
      below: await insertRestorePoint(ctx(), { companyId: company, sourceIssueId: below }),
      sibling: await insertRestorePoint(ctx(), { companyId: company, sourceIssueId: sibling }),
      pendingAtRoot: await insertRestorePoint(ctx(), {
        companyId: company,
        sourceIssueId: chain[0]!,
        status: "pending",
      }),
      supersededAtRoot: await insertRestorePoint(ctx(), {
        companyId: company,
        sourceIssueId: chain[0]!,
        status: "superseded",
      }),
    };
    const ids = Object.values(points);

    const inside = await inTransaction(
      "UPDATE issues SET status = 'done' WHERE id = $1",
      [changed],
      async (c) => {
        const rows = await c.query<{ id: string; marked: boolean }>(
          `SELECT id::text, delete_after IS NOT DISTINCT FROM now() AS marked
             FROM execution_workspace_restore_points WHERE id = ANY($1::uuid[])`,
          [ids],
        );
        return new Map(rows.rows.map((r) => [r.id, r.marked]));
      },
      false,
    );
    expect(ids.map((id) => inside.get(id))).toEqual([true, true, true, false, false, false, false]);
    // Rolled back with the issue update.
    expect(await dueFlags(ids)).toEqual([false, false, false, false, false, false, false]);
  });

  it("pulls a scheduled expiry forward to now, so the review sees the change", async () => {
    const company = randomUUID();
    const [root, leaf] = await insertChain(ctx(), company, 2, "done");
    const later = new Date(Date.now() + 30 * 24 * HOUR);
    const id = await insertRestorePoint(ctx(), {
      companyId: company,
      sourceIssueId: root!,
      deleteAfter: later,
    });
    await db.issue.update({ where: { id: leaf! }, data: { status: "todo" } });
    const row = await restorePointRow(ctx(), id);
    expect(row.deleteAfter!.getTime()).toBeLessThan(Date.now() + 1000);
  });

  it("marks nothing when other columns change", async () => {
    const company = randomUUID();
    const [root, leaf] = await insertChain(ctx(), company, 2);
    const id = await insertRestorePoint(ctx(), { companyId: company, sourceIssueId: root! });
    await db.issue.update({ where: { id: leaf! }, data: { title: "renamed", updatedAt: new Date() } });
    await db.issue.update({ where: { id: leaf! }, data: { status: "todo" } }); // same status
    expect((await restorePointRow(ctx(), id)).deleteAfter).toBeNull();
  });
});

describe("an issue's parent changes", () => {
  it("marks the old parent's and the new parent's chains, not the moved issue's subtree", async () => {
    const company = randomUUID();
    const oldChain = await insertChain(ctx(), company, 5);
    const newChain = await insertChain(ctx(), company, 5);
    const moved = await insertIssue(ctx(), { companyId: company, parentId: oldChain[4] });
    const child = await insertIssue(ctx(), { companyId: company, parentId: moved });
    const ids = [
      await insertRestorePoint(ctx(), { companyId: company, sourceIssueId: oldChain[0]! }),
      await insertRestorePoint(ctx(), { companyId: company, sourceIssueId: oldChain[4]! }),
      await insertRestorePoint(ctx(), { companyId: company, sourceIssueId: newChain[0]! }),
      await insertRestorePoint(ctx(), { companyId: company, sourceIssueId: moved }),
      await insertRestorePoint(ctx(), { companyId: company, sourceIssueId: child }),
    ];
    await db.issue.update({ where: { id: moved }, data: { parentId: newChain[2]! } });
    expect(await dueFlags(ids)).toEqual([true, true, true, true, false]);
  });

  it("ends the ancestor walk at a parent cycle", async () => {
    const company = randomUUID();
    const [a, b, c] = await insertChain(ctx(), company, 3);
    const id = await insertRestorePoint(ctx(), { companyId: company, sourceIssueId: b! });
    // a -> b -> c -> a: a cycle Paperclip should never write, but must not hang the update.
    await db.issue.update({ where: { id: a! }, data: { parentId: c! } });
    await db.executionWorkspaceRestorePoint.update({ where: { id }, data: { deleteAfter: null } });
    await db.issue.update({ where: { id: c! }, data: { status: "done" } });
    expect((await restorePointRow(ctx(), id)).deleteAfter).not.toBeNull();
  });
});

describe("deleting", () => {
  it("an issue marks its own pending and active rows delete_requested and its ancestors' rows due, in the same transaction", async () => {
    const company = randomUUID();
    const [root, , doomed] = await insertChain(ctx(), company, 3);
    const createdAt = new Date(Date.now() - 10 * 60_000);
    const own = await insertRestorePoint(ctx(), { companyId: company, sourceIssueId: doomed! });
    const ownPending = await insertRestorePoint(ctx(), {
      companyId: company,
      sourceIssueId: doomed!,
      status: "pending",
      createdAt,
    });
    const ownExpiring = await insertRestorePoint(ctx(), {
      companyId: company,
      sourceIssueId: doomed!,
      status: "expiring",
    });
    const ancestor = await insertRestorePoint(ctx(), { companyId: company, sourceIssueId: root! });
    const seen = await inTransaction(
      "DELETE FROM issues WHERE id = $1",
      [doomed],
      async (c) =>
        (
          await c.query<{ id: string; status: string }>(
            "SELECT id::text, status FROM execution_workspace_restore_points WHERE id = ANY($1::uuid[])",
            [[own, ownPending]],
          )
        ).rows.map((r) => r.status),
      true,
    );
    expect(seen).toEqual(["delete_requested", "delete_requested"]);
    expect((await restorePointRow(ctx(), own)).retryAt).toBeNull();
    // The capture may still be writing: deleted once the one-hour grace has ended.
    expect((await restorePointRow(ctx(), ownPending)).retryAt).toEqual(new Date(createdAt.getTime() + HOUR));
    // An expiring row runs its hook first; the worker then deletes it anyway.
    expect((await restorePointRow(ctx(), ownExpiring)).status).toBe("expiring");
    expect((await restorePointRow(ctx(), ancestor)).deleteAfter).not.toBeNull();
  });

  it("a company marks all its pending and active rows delete_requested", async () => {
    const company = await db.company.create({ data: { name: "gone" } });
    const issue = await insertIssue(ctx(), { companyId: company.id });
    const ids = [
      await insertRestorePoint(ctx(), { companyId: company.id, sourceIssueId: issue }),
      await insertRestorePoint(ctx(), {
        companyId: company.id,
        sourceIssueId: randomUUID(),
        status: "superseded",
      }),
    ];
    const other = await insertRestorePoint(ctx(), { companyId: randomUUID(), sourceIssueId: issue });
    await db.company.delete({ where: { id: company.id } });
    const rows = await Promise.all([...ids, other].map((id) => restorePointRow(ctx(), id)));
    expect(rows.map((r) => r.status)).toEqual(["delete_requested", "superseded", "active"]);
  });
});

describe("notifications", () => {
  it("reach a listener only when the changing transaction commits", async () => {
    const received: { companyId: string; reason: string }[] = [];
    client.on("notification", (m) => received.push(JSON.parse(m.payload ?? "{}")));
    await client.query("LISTEN reclaim_restore_points");
    const rolledBack = randomUUID();
    const committed = randomUUID();
    const [rbRoot, rbLeaf] = await insertChain(ctx(), rolledBack, 2);
    await insertRestorePoint(ctx(), { companyId: rolledBack, sourceIssueId: rbRoot! });
    const [root, leaf] = await insertChain(ctx(), committed, 2);
    await insertRestorePoint(ctx(), { companyId: committed, sourceIssueId: root! });

    await inTransaction(
      "UPDATE issues SET status = 'done' WHERE id = $1",
      [rbLeaf],
      async () => undefined,
      false,
    );
    await closeIssue(ctx(), root!);
    // Notifications arrive in commit order: the committed one proves the other was never sent.
    await waitFor(() => received.length > 0, { what: "a notification" });
    expect(received).toEqual([{ companyId: committed, reason: "issue_changed" }]);

    // Deleting the leaf changes the root's tree (its row, already due, is locked again);
    // deleting the root requests its row's deletion.
    await db.issue.delete({ where: { id: leaf! } });
    await db.issue.delete({ where: { id: root! } });
    await waitFor(() => received.length > 2, { what: "the deletions' notifications" });
    expect(received.slice(1)).toEqual([
      { companyId: committed, reason: "issue_changed" },
      { companyId: committed, reason: "issue_deleted" },
    ]);
  });

  it("are not sent for a company without live restore points", async () => {
    const received: string[] = [];
    const listener = new pg.Client({ connectionString: database.url });
    await listener.connect();
    listener.on("notification", (m) => received.push(m.payload ?? ""));
    await listener.query("LISTEN reclaim_restore_points");
    const company = randomUUID();
    const [root] = await insertChain(ctx(), company, 1);
    await insertRestorePoint(ctx(), { companyId: company, sourceIssueId: root!, status: "deleted" });
    await closeIssue(ctx(), root!);
    // A later notification of another company proves the first one would have arrived by now.
    const marker = randomUUID();
    const [markerIssue] = await insertChain(ctx(), marker, 1);
    await insertRestorePoint(ctx(), { companyId: marker, sourceIssueId: markerIssue! });
    await closeIssue(ctx(), markerIssue!);
    await waitFor(() => received.length > 0, { what: "the marker notification" });
    await listener.end();
    expect(received.map((p) => JSON.parse(p).companyId)).toEqual([marker]);
  });
});

describe("on Paperclip's own database", () => {
  let paperclip: TestDatabase;
  afterAll(async () => paperclip?.drop());

  it("the trigger runs on the full issues table", async () => {
    paperclip = await createEmptyDatabase();
    const c = new pg.Client({ connectionString: paperclip.url });
    await c.connect();
    try {
      await c.query(
        readFileSync(path.join(REPO_ROOT, "packages/testkit/fixtures/paperclip-public-schema.sql"), "utf8"),
      );
      await applyMigrations(paperclip.url);
      const company = randomUUID();
      const root = randomUUID();
      const leaf = randomUUID();
      await c.query(
        `INSERT INTO issues (id, company_id, parent_id, title, status) VALUES ($1, $3, NULL, 'root', 'todo'), ($2, $3, $1, 'leaf', 'todo')`,
        [root, leaf, company],
      );
      const inserted = await c.query<{ id: string }>(
        `INSERT INTO execution_workspace_restore_points
           (company_id, execution_workspace_id, source_issue_id, generation, kind, storage_provider, storage_key, status)
         VALUES ($1, gen_random_uuid(), $2, 1, 'worktree', 'local_disk', 'k-' || gen_random_uuid(), 'active') RETURNING id::text`,
        [company, root],
      );
      await c.query("UPDATE issues SET status = 'done', completed_at = now() WHERE id = $1", [leaf]);
      const row = await c.query<{ due: boolean }>(
        "SELECT delete_after IS NOT NULL AS due FROM execution_workspace_restore_points WHERE id = $1",
        [inserted.rows[0]!.id],
      );
      expect(row.rows[0]!.due).toBe(true);
    } finally {
      await c.end();
    }
  });
});
