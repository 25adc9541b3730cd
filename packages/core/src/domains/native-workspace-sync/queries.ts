/**
 * The database reads of this domain (SQL in the .sql files beside this one). The reads before
 * the job's transaction (which folders are whose) run as prepared statements on the pool
 * (db/statements.ts): they send up to thousands of folder names, which Prisma's query
 * compiler would spend several times the query's own time on. The checks' reads run in the
 * job's Prisma transaction, on its connection (runStates).
 */
import { runStatementIn, type Db, type Tx } from "../../db";
import { statement } from "../../db/sql";
import { rulesWithUnwrittenSources, sourceTables } from "../sources";
import { SOURCES, type RunState, type SourceRule } from "./rules";

const RUN_OWNERS = statement(__dirname, "run-owners.sql");
const COMPANY_RUNS = statement(__dirname, "company-runs.sql");
const RUN_STATE = statement(__dirname, "run-state.sql");

/**
 * The company of each run this process has read. A run's company never changes, so a company
 * job sends PostgreSQL only the folder names it has not seen yet, instead of every name after
 * its cursor at each batch (a name without a run is asked again each time: its run may
 * appear). It only chooses which folders a batch looks at: every decision reads the run again
 * in the job's transaction. Bounded: emptied when full, and then read again.
 */
const knownOwners = new Map<string, string>();
const KNOWN_OWNERS_MAX = 100_000;

function remember(runId: string, companyId: string): void {
  if (knownOwners.size >= KNOWN_OWNERS_MAX) knownOwners.clear();
  knownOwners.set(runId, companyId);
}

export async function runOwners(db: Db, runIds: readonly string[]): Promise<Map<string, string>> {
  if (runIds.length === 0) return new Map();
  const rows = await runStatementIn<{ id: string; company_id: string }>(db, RUN_OWNERS, [
    JSON.stringify(runIds),
  ]);
  for (const row of rows) remember(row.id, row.company_id);
  return new Map(rows.map((r) => [r.id, r.company_id]));
}

/** The first index of sorted `names` whose name sorts after `after` (all of them for null). */
function firstAfter(names: readonly string[], after: string | null): number {
  if (after === null) return 0;
  let low = 0;
  let high = names.length;
  while (low < high) {
    const mid = (low + high) >>> 1;
    if (names[mid]! <= after) low = mid + 1;
    else high = mid;
  }
  return low;
}

/**
 * A listing's run folder names by the company whose runs they are, as far as this process
 * knows, and the names whose company it does not know (no run yet, or not asked yet), each
 * list in name order: a company's batch reads its own names after its cursor, not every
 * other company's. Built once per listing (the names array of runFolderNames), then kept up
 * to date as owners are learned and runs go.
 */
class OwnerIndex {
  private readonly byCompany = new Map<string, string[]>();
  /** Companies whose list had names added since it was sorted. */
  private readonly unsorted = new Set<string>();
  private unknown: string[] = [];

  constructor(names: readonly string[]) {
    for (const name of names) {
      const owner = knownOwners.get(name);
      if (owner === undefined) this.unknown.push(name);
      else this.add(owner, name);
    }
    this.unsorted.clear(); // `names` is sorted
  }

  /** The company's first `limit` names after `after`, in order. */
  own(companyId: string, after: string | null, limit: number): string[] {
    const list = this.byCompany.get(companyId) ?? [];
    if (this.unsorted.delete(companyId)) list.sort();
    const from = firstAfter(list, after);
    return list.slice(from, from + limit);
  }

  /** The names of unknown owner after `after` and before `before` (null: no bound), in order. */
  unknownBetween(after: string | null, before: string | null): string[] {
    const from = firstAfter(this.unknown, after);
    const to = before === null ? this.unknown.length : firstAfter(this.unknown, before);
    return this.unknown.slice(from, Math.max(from, to));
  }

  /** Names of unknown owner now known: each goes to its company's list. */
  learned(owners: ReadonlyMap<string, string>): void {
    if (owners.size === 0) return;
    this.unknown = this.unknown.filter((name) => {
      const owner = owners.get(name);
      if (owner !== undefined) this.add(owner, name);
      return owner === undefined;
    });
  }

  /** A name that is no run of the company (any more): asked again like a name never seen. */
  forget(companyId: string, name: string): void {
    const list = this.byCompany.get(companyId)?.filter((n) => n !== name);
    if (list) this.byCompany.set(companyId, list);
    this.unknown.splice(firstAfter(this.unknown, name), 0, name);
  }

  private add(companyId: string, name: string): void {
    const list = this.byCompany.get(companyId);
    if (list) list.push(name);
    else this.byCompany.set(companyId, [name]);
    this.unsorted.add(companyId);
  }
}

/** The index of each listing's names (a reused listing is the same array: fs/listings.ts). */
const indexes = new WeakMap<readonly string[], OwnerIndex>();

export type CompanyRun = Pick<RunState, "id" | "status" | "finished_at">;

/**
 * The first `limit` of the folders `names` (a listing's run folder names, in name order) after
 * `after` that are runs of the company, with their status and finish. The names whose
 * company this process knows come from its index of the listing (OwnerIndex), so a batch
 * reads only its own company's names; PostgreSQL is asked about the unknown names before the
 * `limit`-th known run of the company (no name after it can be one of the first `limit`),
 * then for the status of the company's first `limit`. A run it knew that is gone (or, were
 * that possible, moved to another company) is forgotten and the next ones are asked instead.
 */
export async function companyRunsInOrder(
  db: Db,
  names: readonly string[],
  after: string | null,
  companyId: string,
  limit: number,
): Promise<CompanyRun[]> {
  let index = indexes.get(names);
  if (index === undefined) indexes.set(names, (index = new OwnerIndex(names)));
  // Names this call found to be no run of the company (a name with no run stays unknown).
  const passed = new Set<string>();
  for (;;) {
    const known = index.own(companyId, after, limit);
    const unknown = index
      .unknownBetween(after, known.length === limit ? known[limit - 1]! : null)
      .filter((name) => !passed.has(name));
    // Learned since the index was built (another batch's discovery, say), or asked now.
    const owners = new Map<string, string>();
    const ask: string[] = [];
    for (const name of unknown) {
      const owner = knownOwners.get(name);
      if (owner === undefined) ask.push(name);
      else owners.set(name, owner);
    }
    for (const [id, owner] of await runOwners(db, ask)) owners.set(id, owner);
    index.learned(owners);
    for (const name of unknown) if (owners.get(name) !== companyId) passed.add(name);
    const mine = [...known, ...unknown.filter((name) => owners.get(name) === companyId)]
      .sort()
      .slice(0, limit);
    if (mine.length === 0) return [];
    const rows = await runStatementIn<CompanyRun>(db, COMPANY_RUNS, [JSON.stringify(mine), companyId, limit]);
    if (rows.length === mine.length) return rows;
    const found = new Set(rows.map((row) => row.id));
    for (const id of mine) {
      if (found.has(id)) continue;
      passed.add(id);
      knownOwners.delete(id);
      index.forget(companyId, id);
    }
  }
}

export interface RunStates {
  /** By run id: the runs among the ids asked for. */
  runs: Map<string, RunState>;
  /**
   * The rules whose tables nothing but Reclaim writes here (sources/index.ts), read in the same
   * round trip; when no run was read, every rule the operator did not opt out of (nothing told
   * otherwise: a run judged with these is kept as `source_unavailable`).
   */
  unavailable: Set<SourceRule>;
}

/**
 * Run state for the check, in the job's transaction: on its own connection as a prepared
 * statement where it can be told (the query is large; Prisma's compiler doubled its time),
 * else through `tx`.
 */
export async function runStates(
  tx: Tx,
  runIds: string[],
  assumeEmpty: readonly SourceRule[],
): Promise<RunStates> {
  const tables = sourceTables(SOURCES);
  const rows =
    runIds.length === 0
      ? []
      : await runStatementIn<RunState & { unwritten_tables: string[] }>(tx, RUN_STATE, [
          JSON.stringify(runIds),
          tables,
        ]);
  return {
    runs: new Map(rows.map((r) => [r.id, r])),
    unavailable: rulesWithUnwrittenSources(SOURCES, rows[0]?.unwritten_tables ?? tables, assumeEmpty),
  };
}
