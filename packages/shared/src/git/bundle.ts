/**
 * The bundle of a restore point: every commit the base lacks that the worktree's history
 * holds (HEAD, ORIG_HEAD, every HEAD reflog entry, the scope's branches and their reflog
 * entries; for a nested standalone clone also its remote-tracking refs and their reflogs,
 * saved as history-only objects), plus one commit carrying the index's blobs that no commit
 * has. With `restoredFrom` (the manifest of the restore point the checkout was restored from),
 * also the history-only objects that restore point imported (its `historyOnly` commits and its
 * index carrier): apply brings them back as objects that nothing reaches, so each later restore
 * point saves them again (spec: "the restore point keeps them until it expires").
 *
 * The base ("remote-verified"): `remote` lists the remote fresh (`git ls-remote`, run outside
 * the repository); `remote-tracking` trusts `refs/remotes/*` (the caller fetched just now);
 * `shared` takes what a shared clone's refs hold (capture against a shared base, for rehome
 * and nested-clone conversion: the bundle then holds exactly the commits the shared clone
 * lacks, and imports there).
 *
 * No object is ever written into the workspace's repository: the bundle is built in a
 * throwaway bare repository (in the caller's temporary directory) whose
 * `objects/info/alternates` lists the workspace's store (and the shared clone's), so a capture
 * killed, timed out or out of disk at any point leaves the repository exactly as it was. A
 * capture publishes nothing, so it needs no quarantine; apply's import does (apply.ts).
 */
import { createHash } from "node:crypto";
import { createReadStream } from "node:fs";
import { mkdir, open, stat, writeFile } from "node:fs/promises";
import path from "node:path";
import type { RestoreLimits } from "./capture";
import { CaptureRefusedError } from "./errors";
import type { RestoreManifest } from "./manifest";
import { refuseNestedHistory, type HelperGit } from "./nested-rules";
import { emptyDir, openSafeRepository, remoteEnv, runSafeGit, type SafeRepository } from "./safe-git";
import { reflogOids, ZERO_OID, type CaptureScope, type WorktreeState } from "./worktree-state";

export type BaseSource =
  { kind: "remote"; url?: string } | { kind: "remote-tracking" } | { kind: "shared"; repository: string };

export interface BuiltBundle {
  file: string;
  bytes: number;
  sha256: string;
  commits: number;
  indexCarrier: string | null;
  historyOnly: string[];
}

export interface BundleOptions {
  base: BaseSource;
  scope: CaptureScope;
  nested: boolean;
  limits: RestoreLimits;
  /** The history-only commits an earlier restore point imported (restoredHistory()). */
  restored?: string[];
  signal?: AbortSignal;
  inherited?: NodeJS.ProcessEnv;
}

const OID = /^[0-9a-f]{40}([0-9a-f]{24})?$/;

/**
 * The commits whose objects apply of `manifest` imported and recreated no ref or reflog entry
 * for: its history-only commits and its index carrier (sorted, well-formed oids only).
 */
export function restoredHistory(manifest: RestoreManifest | undefined): string[] {
  const bundle = manifest?.bundle;
  if (!bundle) return [];
  const oids = [...(bundle.historyOnly ?? []), ...(bundle.indexCarrier ? [bundle.indexCarrier] : [])];
  return [...new Set(oids.filter((oid) => typeof oid === "string" && OID.test(oid)))].sort();
}

/** `oid -> type` for the oids the helper can read (the workspace's store and the shared clone's). */
export async function objectTypes(
  helperGit: HelperGit,
  oids: Iterable<string>,
): Promise<Map<string, string>> {
  const list = [...new Set(oids)].sort();
  const types = new Map<string, string>();
  if (list.length === 0) return types;
  const out = await helperGit(
    ["cat-file", "--batch-check=%(objectname) %(objecttype)"],
    list.join("\n") + "\n",
  );
  for (const line of out.split("\n")) {
    const [oid, type] = line.split(" ");
    if (oid && type && type !== "missing") types.set(oid, type);
  }
  return types;
}

async function baseTips(repo: SafeRepository, base: BaseSource, signal?: AbortSignal): Promise<string[]> {
  const tips = (out: string): string[] => out.split("\n").filter(Boolean);
  if (base.kind === "remote-tracking") {
    return tips(await repo.text(["for-each-ref", "--format=%(objectname)", "refs/remotes/"]));
  }
  if (base.kind === "shared") {
    const shared = await openSafeRepository(base.repository, { signal });
    return tips(await shared.text(["for-each-ref", "--format=%(objectname)"]));
  }
  let url = base.url;
  if (url === undefined) {
    url = repo.config.get("remote.origin.url") ?? "";
    if (url === "") throw new CaptureRefusedError("no_remote_base", [], "no origin URL");
    // A local path is relative to the work tree.
    if (!/^[a-z][a-z0-9+.-]*:/i.test(url) && !url.startsWith("/")) url = path.resolve(repo.worktree!, url);
  }
  const listed = await runSafeGit(["ls-remote", "--", url], { cwd: emptyDir(), env: remoteEnv(), signal });
  return tips(listed.stdout.toString()).map((line) => line.split("\t")[0]!);
}

/** The commits the bundle names as prerequisites (its `-<oid>` header lines), sorted. */
async function prerequisitesOf(file: string): Promise<string[]> {
  const handle = await open(file, "r");
  try {
    const out: string[] = [];
    let header = "";
    let position = 0;
    const chunk = Buffer.alloc(64 * 1024);
    // The header ends at the first empty line; it is text, the pack follows.
    for (;;) {
      const { bytesRead } = await handle.read(chunk, 0, chunk.length, position);
      if (bytesRead === 0) break;
      position += bytesRead;
      header += chunk.subarray(0, bytesRead).toString("latin1");
      if (header.includes("\n\n")) break;
    }
    for (const line of header.slice(0, header.indexOf("\n\n")).split("\n")) {
      if (line.startsWith("-")) out.push(line.slice(1).split(" ")[0]!);
    }
    return out.sort();
  } finally {
    await handle.close();
  }
}

/**
 * An empty bare repository written directly (what `git init --bare --template=` writes; one
 * process less per capture).
 */
async function initHelper(tmp: string, objectFormat: string): Promise<string> {
  const helper = path.join(tmp, "helper.git");
  for (const dir of ["objects/info", "objects/pack", "refs/heads", "refs/tags"]) {
    await mkdir(path.join(helper, dir), { recursive: true });
  }
  await writeFile(path.join(helper, "HEAD"), "ref: refs/heads/main\n");
  const format = objectFormat === "sha1" ? "" : `[extensions]\n\tobjectFormat = ${objectFormat}\n`;
  const version = objectFormat === "sha1" ? 0 : 1;
  await writeFile(
    path.join(helper, "config"),
    `[core]\n\trepositoryformatversion = ${version}\n\tbare = true\n${format}`,
  );
  return helper;
}

/**
 * The index's blobs that HEAD's tree does not hold at the same path (staged changes and
 * conflict stages), read from the status records (`1 XY sub mH mI mW hH hI path`,
 * `u XY sub m1 m2 m3 mW h1 h2 h3 path`). The rest of the index is in HEAD's commit, which is
 * in the bundle or the base.
 */
function stagedBlobs(state: WorktreeState): string[] {
  const out = new Set<string>();
  for (const record of state.trackedStatus) {
    const fields = record.split(" ");
    const oids = record[0] === "1" ? (fields[6] === fields[7] ? [] : [fields[7]]) : fields.slice(7, 10);
    for (const oid of oids) if (oid && !ZERO_OID.test(oid)) out.add(oid);
  }
  return [...out].sort();
}

export async function buildBundle(
  repo: SafeRepository,
  state: WorktreeState,
  options: BundleOptions,
  tmp: string,
): Promise<{ base: { source: BaseSource["kind"]; oids: string[] }; bundle: BuiltBundle | null }> {
  // The throwaway repository: reads the workspace's (and the shared clone's) objects, writes only its own.
  const helper = await initHelper(tmp, repo.objectFormat);
  const env = remoteEnv(options.inherited);
  const alternates = [repo.objectsDir];
  if (options.base.kind === "shared") {
    alternates.push(
      (await openSafeRepository(options.base.repository, { signal: options.signal })).objectsDir,
    );
  }
  await writeFile(path.join(helper, "objects", "info", "alternates"), alternates.join("\n") + "\n");
  const helperEnv = { ...env, GIT_DIR: helper, GIT_AUTHOR_DATE: "@0 +0000", GIT_COMMITTER_DATE: "@0 +0000" };
  const helperGit: HelperGit = (args, input) =>
    runSafeGit(args, { cwd: helper, env: helperEnv, input, signal: options.signal }).then((r) =>
      r.stdout.toString(),
    );

  const standaloneNested = options.nested && options.scope.kind === "clone";
  const candidates = new Set<string>([state.head.oid]);
  if (state.origHead) candidates.add(state.origHead);
  for (const oid of reflogOids(state.headReflog)) candidates.add(oid);
  for (const ref of state.refs) candidates.add(ref.oid);
  for (const log of state.refReflogs) for (const oid of reflogOids(log.log)) candidates.add(oid);
  // A nested checkout saves what only its remote-tracking refs hold (history-only objects);
  // so does a clone that moves onto a shared clone (conversion), where such refs become branches.
  // What an earlier restore point imported as history-only objects is saved again.
  const historyOnly = new Set<string>(options.restored ?? []);
  if (standaloneNested || (options.scope.kind === "clone" && options.base.kind === "shared")) {
    for (const ref of state.remoteTracking ?? []) historyOnly.add(ref.oid);
    for (const log of state.remoteTrackingReflogs)
      for (const oid of reflogOids(log.log)) historyOnly.add(oid);
  }
  for (const oid of historyOnly) candidates.add(oid);
  const blobs = stagedBlobs(state);
  const baseOids = await baseTips(repo, options.base, options.signal);
  const types = await objectTypes(helperGit, [...candidates, ...blobs, ...baseOids]);
  const tips = [...candidates].filter((oid) => types.has(oid)).sort();
  const negatives = [...new Set(baseOids)].filter((oid) => types.has(oid)).sort();

  // Candidates apply brings back as no ref or reflog entry: what the manifest lists as history-only.
  const recreated = new Set<string>([...negatives, state.head.oid, ...state.refs.map((r) => r.oid)]);
  if (state.origHead) recreated.add(state.origHead);
  for (const oid of reflogOids(state.headReflog)) recreated.add(oid);
  for (const log of state.refReflogs) for (const oid of reflogOids(log.log)) recreated.add(oid);
  const restored = (options.restored ?? []).filter((oid) => types.has(oid));
  const historyOnlyTips = [...historyOnly].filter((oid) => types.has(oid) && !recreated.has(oid)).sort();

  if (standaloneNested) await refuseNestedHistory(repo, state, helperGit, negatives, types, restored);

  let indexCarrier: string | null = null;
  const carried = blobs.filter((oid) => types.get(oid) === "blob").sort();
  if (carried.length > 0) {
    const tree = (
      await helperGit(["mktree"], carried.map((oid) => `100644 blob ${oid}\t${oid}\n`).join(""))
    ).trim();
    indexCarrier = (await helperGit(["commit-tree", tree, "-m", "reclaim index blobs"])).trim();
  }

  // The bundle's refs, written as the helper's packed-refs (sorted, as git keeps them).
  const bundleRefs = new Map<string, string>();
  const named = new Set<string>();
  for (const ref of state.refs) {
    if (types.has(ref.oid)) {
      bundleRefs.set(ref.name, ref.oid);
      named.add(ref.oid);
    }
  }
  bundleRefs.set("refs/reclaim/head", state.head.oid);
  for (const oid of tips) {
    if (!named.has(oid) && oid !== state.head.oid) bundleRefs.set(`refs/reclaim/history/${oid}`, oid);
  }
  if (indexCarrier) bundleRefs.set("refs/reclaim/index", indexCarrier);
  const refNames = [...bundleRefs.keys()].sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)));
  await writeFile(
    path.join(helper, "packed-refs"),
    "# pack-refs with: sorted \n" + refNames.map((name) => `${bundleRefs.get(name)} ${name}\n`).join(""),
  );
  const revInput = [...refNames, ...negatives.map((oid) => `^${oid}`)].join("\n") + "\n";

  const commits = Number((await helperGit(["rev-list", "--count", "--stdin"], revInput)).trim());
  if (commits > options.limits.maxCommits) {
    throw new CaptureRefusedError("restore_point_too_many_commits", [], `${commits} commits`);
  }
  if (commits === 0 && indexCarrier === null)
    return { base: { source: options.base.kind, oids: [] }, bundle: null };
  const file = path.join(tmp, "restore.bundle");
  await helperGit(["bundle", "create", "-q", file, "--stdin"], revInput);
  const bytes = (await stat(file)).size;
  if (bytes > options.limits.maxBundleBytes) {
    throw new CaptureRefusedError("restore_point_bundle_too_large", [], `${bytes} bytes`);
  }
  const hash = createHash("sha256");
  for await (const chunk of createReadStream(file)) hash.update(chunk as Buffer);
  return {
    base: { source: options.base.kind, oids: await prerequisitesOf(file) },
    bundle: { file, bytes, sha256: hash.digest("hex"), commits, indexCarrier, historyOnly: historyOnlyTips },
  };
}
