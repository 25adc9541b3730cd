/**
 * The files apply writes besides the checkout: the staged payload checked against its
 * manifest, ignored files linked in without replacing anything, the index written exactly,
 * and the history (HEAD reflog, ORIG_HEAD, branch reflogs) written back.
 */
import { createHash, randomUUID } from "node:crypto";
import { createReadStream } from "node:fs";
import {
  chmod,
  link,
  lstat,
  mkdir,
  open,
  readdir,
  readFile,
  rename,
  unlink,
  writeFile,
} from "node:fs/promises";
import path from "node:path";
import { validateSnapshot } from "../tree-snapshot";
import { GitRestoreError } from "./errors";
import { writeIndex, type IndexEntry } from "./index-file";
import { sha256, type RestoreManifest } from "./manifest";
import type { SafeRepository } from "./safe-git";
import { errnoCode } from "../errors";

export const READ_LIMITS = {
  maxFiles: 10_000_000,
  maxFileBytes: Number.MAX_SAFE_INTEGER,
  maxTotalBytes: Number.MAX_SAFE_INTEGER,
};

export interface StagedIndex {
  version: number;
  entries: IndexEntry[];
  deleted: string[];
  tracked: string[];
  /** Paths the checkout of HEAD writes that the untracked or ignored snapshot brings back. */
  untrackedFromHead?: string[];
}
export interface StagedHistory {
  headReflog: string;
  origHead: string | null;
  refReflogs: { name: string; log: string }[];
}

/** The staged payload is the manifest's: hashes of the bundle and sections, tree digests. */
export async function checkStaged(
  staging: string,
  manifest: RestoreManifest,
): Promise<{ index: StagedIndex; history: StagedHistory }> {
  const invalid = (what: string): GitRestoreError =>
    new GitRestoreError("RECLAIM_ERR_GIT_PAYLOAD_INVALID", `${what} does not match the manifest`);
  const indexRaw = await readFile(path.join(staging, "index"));
  const historyRaw = await readFile(path.join(staging, "history"));
  if (sha256(indexRaw) !== manifest.sections.indexSha256) throw invalid("index section");
  if (sha256(historyRaw) !== manifest.sections.historySha256) throw invalid("history section");
  if (manifest.bundle) {
    const hash = createHash("sha256");
    for await (const chunk of createReadStream(path.join(staging, "bundle"))) hash.update(chunk as Buffer);
    if (hash.digest("hex") !== manifest.bundle.sha256) throw invalid("bundle");
  }
  for (const name of ["tracked", "untracked", "ignored"] as const) {
    await validateSnapshot(createReadStream(path.join(staging, name)), {
      limits: READ_LIMITS,
      expectedTreeDigest: manifest[name].treeDigest,
    }).catch((error: unknown) => {
      throw new GitRestoreError(
        "RECLAIM_ERR_GIT_PAYLOAD_INVALID",
        `${name} files: ${(error as Error).message}`,
        {
          cause: error,
        },
      );
    });
  }
  return {
    index: JSON.parse(indexRaw.toString("utf8")) as StagedIndex,
    history: JSON.parse(historyRaw.toString("utf8")) as StagedHistory,
  };
}

/** Moves `from/rel` into `to/rel` by hard links; an existing entry is kept (listed), never replaced. */
export async function linkInWithoutReplacing(
  from: string,
  to: string,
  rel: string,
  kept: string[],
): Promise<void> {
  for (const item of await readdir(path.join(from, rel), { withFileTypes: true })) {
    const child = rel === "" ? item.name : `${rel}/${item.name}`;
    const source = path.join(from, child);
    const dest = path.join(to, child);
    if (item.isDirectory()) {
      const there = await lstat(dest).catch(() => null);
      if (there === null) {
        await mkdir(dest);
        await linkInWithoutReplacing(from, to, child, kept);
        await chmod(dest, (await lstat(source)).mode & 0o7777);
      } else if (there.isDirectory()) {
        await linkInWithoutReplacing(from, to, child, kept);
      } else {
        kept.push(child);
      }
    } else {
      await link(source, dest).catch((error: unknown) => {
        if (errnoCode(error) !== "EEXIST") throw error;
        kept.push(child);
      });
    }
  }
}

async function blobSizes(repo: SafeRepository, entries: IndexEntry[]): Promise<Map<string, number>> {
  const sizes = new Map<string, number>();
  const oids = [...new Set(entries.filter((e) => !e.intentToAdd).map((e) => e.oid))];
  if (oids.length === 0) return sizes;
  const out = await repo.text(["cat-file", "--batch-check=%(objectname) %(objectsize)"], {
    input: oids.join("\n") + "\n",
  });
  for (const line of out.split("\n")) {
    const [oid, size] = line.split(" ");
    if (oid && size && /^\d+$/.test(size)) sizes.set(oid, Number(size));
  }
  return sizes;
}

export async function writeIndexFile(repo: SafeRepository, entries: IndexEntry[]): Promise<void> {
  const lock = path.join(repo.gitDir, "index.lock");
  const handle = await open(lock, "wx", 0o644);
  try {
    await handle.writeFile(writeIndex(entries, repo.objectFormat, await blobSizes(repo, entries)));
  } catch (error) {
    await handle.close();
    await unlink(lock).catch(() => undefined);
    throw error;
  }
  await handle.close();
  await rename(lock, path.join(repo.gitDir, "index"));
}

/**
 * `renameRef` maps a captured branch to the target's name (null: not recreated). A branch
 * apply created (`created`) keeps no reflog the capture did not have (a tag that became a
 * branch, a branch git kept no reflog for).
 */
export async function writeHistory(
  repo: SafeRepository,
  history: StagedHistory,
  renameRef: (name: string) => string | null,
  created: ReadonlySet<string>,
): Promise<void> {
  const write = async (file: string, data: Buffer): Promise<void> => {
    await mkdir(path.dirname(file), { recursive: true });
    const temp = `${file}.reclaim-${randomUUID()}`;
    await writeFile(temp, data, { flag: "wx", mode: 0o644 });
    await rename(temp, file);
  };
  await write(path.join(repo.gitDir, "logs", "HEAD"), Buffer.from(history.headReflog, "base64"));
  const orig = path.join(repo.gitDir, "ORIG_HEAD");
  if (history.origHead) await write(orig, Buffer.from(`${history.origHead}\n`));
  else await unlink(orig).catch(() => undefined);
  const logged = new Set<string>();
  for (const log of history.refReflogs) {
    const name = renameRef(log.name);
    if (name === null) continue;
    logged.add(name);
    await write(path.join(repo.commonDir, "logs", name), Buffer.from(log.log, "base64"));
  }
  for (const name of created) {
    if (!logged.has(name)) await unlink(path.join(repo.commonDir, "logs", name)).catch(() => undefined);
  }
}
