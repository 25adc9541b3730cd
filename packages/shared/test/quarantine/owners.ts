/** Ownership records as the tests plant and inspect them (the format of pack-ownership.ts). */
import { randomUUID } from "node:crypto";
import { mkdir, readdir, readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import type { OwnerRecord } from "../../src/quarantine/pack-ownership";
import { currentProcess, identityOf, type ProcessIdentity } from "../../src/quarantine/process-identity";
import type { Repo } from "./git-fixture";

export function ownersDir(repo: Repo): string {
  return path.join(repo.objects, "info", "reclaim-pack-owners");
}

/** Entries of the owners directory; null when it does not exist (removed when empty). */
export async function ownerEntries(repo: Repo): Promise<string[] | null> {
  return readdir(ownersDir(repo)).then(
    (names) => names.sort(),
    () => null,
  );
}

export async function readRecord(repo: Repo, name: string): Promise<OwnerRecord> {
  return JSON.parse(await readFile(path.join(ownersDir(repo), name), "utf8")) as OwnerRecord;
}

/** The identity of a live process, as its own record would hold it. */
export async function liveIdentity(pid: number): Promise<ProcessIdentity> {
  const identity = await identityOf(pid);
  if (!identity) throw new Error(`process ${pid} is not running`);
  return identity;
}

/** Writes record (or break lock) `name` with `fields` over this host's defaults. */
export async function plantRecord(
  repo: Repo,
  name: string,
  fields: Partial<OwnerRecord> & { pid: number },
): Promise<OwnerRecord> {
  const record: OwnerRecord = {
    ...currentProcess(),
    pidStart: "1",
    lockId: randomUUID(),
    captureId: "planted",
    instance: "planted", // another copy of the module, unless `fields` says INSTANCE
    createdAt: Date.now(),
    ...fields,
  };
  await mkdir(ownersDir(repo), { recursive: true });
  await writeFile(path.join(ownersDir(repo), name), JSON.stringify(record), { flag: "wx" });
  return record;
}
