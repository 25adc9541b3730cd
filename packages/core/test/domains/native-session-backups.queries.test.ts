/**
 * The records of confirmed `.retiring-*` copies (reclaim_confirmed_retirements) are read by key:
 * a batch's `failover-backups/` folders as ranges of the path index, each listed name by primary
 * key, whatever the records of other folders (confirmed-retirements.sql read the whole table for
 * every batch that finished leftovers: ~250 ms at 20,000 records), and forgotten by primary key
 * (forget-retirements.sql). Real PostgreSQL.
 */
import { randomUUID } from "node:crypto";
import path from "node:path";
import pg from "pg";
import { createDb, poolOf, prismaTransaction, sqlFile, type Db } from "@reclaim/core";
import { createTestDatabase, readsUnderEveryPlan, type TestDatabase } from "@reclaim/testkit";
import { confirmedRetirementsIn, forgetRetirements } from "../../src/domains/native-session-backups/queries";

const SQL = path.join(__dirname, "../../src/domains/native-session-backups");
let database: TestDatabase;
let db: Db;
beforeAll(async () => {
  database = await createTestDatabase();
  db = createDb(database.url);
});
afterAll(async () => {
  await db.$disconnect();
  await database.drop();
});

/** `folders` failover-backups folders of `perFolder` records each; their paths by folder. */
async function records(folders: number, perFolder: number): Promise<Map<string, string[]>> {
  const byFolder = new Map<string, string[]>();
  for (let f = 0; f < folders; f++) {
    const folder = `${randomUUID()}/failover-backups/`;
    byFolder.set(
      folder,
      Array.from({ length: perFolder }, () => `${folder}.retiring-${randomUUID()}`),
    );
  }
  await poolOf(db).query(`INSERT INTO reclaim_confirmed_retirements (path) SELECT unnest($1::text[])`, [
    [...byFolder.values()].flat(),
  ]);
  return byFolder;
}

it("a batch's folders: the listed names' records come back, the folder's records of names no longer listed are forgotten, other folders' records stay", async () => {
  const byFolder = await records(3, 4);
  const [a, b, c] = [...byFolder.keys()];
  const [a0, a1, a2, a3] = byFolder.get(a!)!;
  // A folder whose name is a prefix of another's ends at its slash: the other keeps its records.
  const nested = `${a!.slice(0, -1)}x/`;
  await poolOf(db).query(`INSERT INTO reclaim_confirmed_retirements (path) VALUES ($1)`, [`${nested}.retiring-1`]);
  const listed = [a0!, a1!, `${a}.retiring-${randomUUID()}`]; // the last has no record
  const found = await prismaTransaction(db, (tx) =>
    confirmedRetirementsIn(tx, [
      { folder: a!, retiring: listed },
      { folder: b!, retiring: [] },
    ]),
  );
  expect([...found].sort()).toEqual([a0, a1].sort());
  const left = (await poolOf(db).query<{ path: string }>(`SELECT path FROM reclaim_confirmed_retirements`)).rows.map(
    (r) => r.path,
  );
  expect(left.sort()).toEqual([a0, a1, ...byFolder.get(c!)!, `${nested}.retiring-1`].sort());
  expect(left).not.toContain(a2);
  expect(left).not.toContain(a3);
  await forgetRetirements(db, [a0!]);
  expect(
    (await poolOf(db).query(`SELECT path FROM reclaim_confirmed_retirements WHERE path = ANY($1)`, [[a0, a1]])).rows,
  ).toEqual([{ path: a1 }]);
});

it("reads only the batch's folders' records and the listed names, whatever the other folders hold, planned young or analyzed, custom or generic", async () => {
  const byFolder = await records(200, 100); // 20,000 records
  const batch = [...byFolder.entries()].slice(10, 13).map(([folder, paths]) => ({
    folder,
    retiring: paths.slice(0, 50),
  }));
  const plans = await readsUnderEveryPlan(poolOf(db), {
    text: sqlFile(SQL, "confirmed-retirements.sql"),
    types: "jsonb",
    args: pg.escapeLiteral(JSON.stringify(batch)),
    writes: true,
  });
  for (const { analyzed, mode, read } of plans) {
    // Each folder's 100 records by range, each of its 50 listed names by key.
    expect({ analyzed, mode, read: read.get("reclaim_confirmed_retirements") }).toEqual({
      analyzed,
      mode,
      read: 3 * 100 + 3 * 50,
    });
  }
  const forget = await readsUnderEveryPlan(poolOf(db), {
    text: sqlFile(SQL, "forget-retirements.sql"),
    types: "jsonb",
    args: pg.escapeLiteral(JSON.stringify(batch.flatMap((f) => f.retiring))),
    writes: true,
  });
  for (const { analyzed, mode, read } of forget) {
    expect({ analyzed, mode, read: read.get("reclaim_confirmed_retirements") }).toEqual({ analyzed, mode, read: 150 });
  }
});
