/**
 * Per-item deadlines against real PostgreSQL: a wake-up never postpones an earlier due time,
 * a job's verdict never overwrites a wake-up that came while it judged the item, and only
 * scheduled items make a company due.
 */
import { randomUUID } from "node:crypto";
import path from "node:path";
import pg from "pg";
import {
  dueItems,
  nextItemDue,
  poolOf,
  scopesWithItems,
  settleItem,
  settleItems,
  sqlFile,
  wakeItems,
  type Db,
} from "@reclaim/core";
import { fileDatabase, readsUnderEveryPlan } from "@reclaim/testkit";

const DOMAIN = "git-restore-points";
const file = fileDatabase();
let db: Db;
beforeAll(() => (db = file.db()));

const at = (minutes: number) => new Date(Date.UTC(2026, 11, 5, 12, minutes));

it("a wake-up keeps the earlier due time and returns the ledger request for it", async () => {
  const company = randomUUID();
  const item = randomUUID();
  const wake = (dueAt: Date, reason: string) =>
    wakeItems(db, [{ domain: DOMAIN, scope: company, itemId: item, reason, dueAt }], at(0));
  expect(await wake(at(30), "idle")).toEqual([
    { domain: DOMAIN, scope: company, reason: "idle", dueAt: at(30) },
  ]);
  await wake(at(50), "terminal");
  await wake(at(10), "issue.changed");
  const due = await dueItems(db, DOMAIN, company, at(20), 10);
  expect(due).toEqual([expect.objectContaining({ itemId: item, reason: "issue.changed", dueAt: at(10) })]);
  expect(await dueItems(db, DOMAIN, company, at(5), 10)).toEqual([]);
});

it("a verdict is written only when no wake-up came while the item was judged", async () => {
  const company = randomUUID();
  const item = randomUUID();
  await wakeItems(
    db,
    [{ domain: DOMAIN, scope: company, itemId: item, reason: "startup", dueAt: at(0) }],
    at(0),
  );
  const [seen] = await dueItems(db, DOMAIN, company, at(1), 10);
  // An event wakes it while the job judges it: the verdict (nothing until an event) is dropped.
  await wakeItems(
    db,
    [{ domain: DOMAIN, scope: company, itemId: item, reason: "issue.changed", dueAt: at(2) }],
    at(2),
  );
  expect(
    await settleItem(db, { domain: DOMAIN, ...seen! }, { dueAt: null, reason: "tree_open" }, at(3)),
  ).toBe(false);
  const [again] = await dueItems(db, DOMAIN, company, at(3), 10);
  expect(again).toEqual(expect.objectContaining({ reason: "startup", dueAt: at(0) }));
  expect(
    await settleItem(db, { domain: DOMAIN, ...again! }, { dueAt: null, reason: "tree_open" }, at(4)),
  ).toBe(true);
  expect(await dueItems(db, DOMAIN, company, at(100), 10)).toEqual([]);
  expect(await nextItemDue(db, DOMAIN, company)).toBeNull();
  // A wake-up of an unscheduled item schedules it.
  await wakeItems(
    db,
    [{ domain: DOMAIN, scope: company, itemId: item, reason: "workspace.changed", dueAt: at(9) }],
    at(5),
  );
  expect(await nextItemDue(db, DOMAIN, company)).toEqual(at(9));
  expect(await scopesWithItems(db, DOMAIN)).toEqual(
    expect.arrayContaining([{ scope: company, dueAt: at(9) }]),
  );
});

it("a batch's verdicts are written in one statement, each only where no wake-up came; an item given twice keeps its first", async () => {
  const company = randomUUID();
  const [kept, woken, retried] = [randomUUID(), randomUUID(), randomUUID()];
  await wakeItems(
    db,
    [kept, woken, retried].map((itemId) => ({
      domain: DOMAIN,
      scope: company,
      itemId,
      reason: "startup",
      dueAt: at(0),
    })),
    at(0),
  );
  const seen = new Map((await dueItems(db, DOMAIN, company, at(1), 10)).map((d) => [d.itemId, d]));
  await wakeItems(
    db,
    [{ domain: DOMAIN, scope: company, itemId: woken, reason: "issue.changed", dueAt: at(2) }],
    at(2),
  );
  const verdict = (itemId: string, dueAt: Date | null, reason: string) => ({
    itemId,
    version: seen.get(itemId)!.version,
    dueAt,
    reason,
  });
  const settled = await settleItems(
    db,
    DOMAIN,
    [
      verdict(kept, null, "tree_open"),
      verdict(woken, null, "tree_open"),
      verdict(retried, at(60), "lock_busy"),
      verdict(retried, null, "removed"),
    ],
    at(3),
  );
  expect([...settled].sort()).toEqual([kept, retried].sort());
  // The woken item is still due as the wake-up left it; the retried one at its first verdict.
  expect(await dueItems(db, DOMAIN, company, at(59), 10)).toEqual([
    expect.objectContaining({ itemId: woken, reason: "startup", dueAt: at(0) }),
  ]);
  expect(await dueItems(db, DOMAIN, company, at(60), 10)).toEqual(
    expect.arrayContaining([
      expect.objectContaining({ itemId: retried, reason: "lock_busy", dueAt: at(60) }),
    ]),
  );
  expect(await settleItems(db, DOMAIN, [], at(4))).toEqual(new Set());
});

it("a batch's verdicts read only the batch's items, planned young or analyzed, custom or generic", async () => {
  await poolOf(db).query(
    `INSERT INTO reclaim_item_deadlines (domain, item_id, company_id, reason, due_at, version)
     SELECT 'plans', 'item-' || g, gen_random_uuid()::text, 'startup', now(), 1 FROM generate_series(1, 20000) AS g`,
  );
  const verdicts = Array.from({ length: 10 }, (_, i) => ({
    itemId: `item-${i * 7 + 1}`,
    version: "1",
    dueAt: null,
    reason: "tree_open",
  }));
  const plans = await readsUnderEveryPlan(poolOf(db), {
    text: sqlFile(path.join(__dirname, "../src/ledger"), "settle-items.sql"),
    types: "text, jsonb, timestamptz",
    args: `'plans', ${pg.escapeLiteral(JSON.stringify(verdicts))}, now()`,
    writes: true,
  });
  for (const { analyzed, mode, read } of plans) {
    expect({ analyzed, mode, items: read.get("reclaim_item_deadlines") }).toEqual({
      analyzed,
      mode,
      items: 10,
    });
  }
});
