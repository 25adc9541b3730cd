/**
 * The one way this library runs git on a workspace an agent controls.
 *
 * Agents can plant anything in a repository's local config (and in files it includes),
 * in `.git/hooks`, and in the environment the service inherited. Every command started here:
 *
 *  - starts from an environment without any inherited `GIT_*` variable, with `HOME` and
 *    `XDG_CONFIG_HOME` pointing at an empty private directory, `GIT_CONFIG_NOSYSTEM=1` and
 *    `GIT_CONFIG_GLOBAL=/dev/null` (no system or global config, no global attributes or
 *    excludes), no terminal prompt, no pager, no editor, no askpass;
 *  - passes `GIT_DIR` and `GIT_WORK_TREE` explicitly, so a planted `core.worktree` cannot
 *    redirect it;
 *  - carries command-scope config (`GIT_CONFIG_COUNT`, which git reads after every config
 *    file, so it wins over the repository's local config and whatever that includes):
 *    `core.hooksPath` = an empty directory, `core.fsmonitor=false`, `core.sshCommand=ssh`,
 *    an emptied credential helper list, `protocol.allow=never` except file/http(s)/ssh,
 *    no gpg signing, no auto gc, symlinks and file modes honoured, no CRLF conversion; plus,
 *    for every key the repository's config (includes followed) sets that names a command or
 *    driver (`filter.<x>.clean/smudge/process`, `diff.<x>.command/textconv`,
 *    `merge.<x>.driver`, `credential.<url>.helper`, `remote.<x>.uploadpack/receivepack`,
 *    `protocol.<x>.allow`, ...) an override that disables it. `include`/`includeIf` files are
 *    still read by git, but nothing they set can name a command that runs: the listing the
 *    overrides come from follows them too.
 *
 * Commands that talk to a remote run outside the repository (`cwd` = the empty directory,
 * no `GIT_DIR`), so `url.<x>.insteadOf`, `remote.<x>.*` and other local config do not apply.
 *
 * `plantedConfig` lists the keys that were neutralized, for callers whose rule is to refuse
 * such a repository (`unsupported_base_git_config`).
 */
import { lstatSync, mkdirSync, mkdtempSync, readdirSync } from "node:fs";
import { realpath, stat } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { errnoCode } from "../errors";
import { spawnGit } from "../git-process";
import { GitRestoreError } from "./errors";

let emptyDirectory: string | undefined;

/** A real directory (not a link) of this user, closed to everyone else, with nothing in it. */
function isPrivateAndEmpty(dir: string): boolean {
  try {
    const info = lstatSync(dir);
    return (
      info.isDirectory() &&
      info.uid === process.getuid?.() &&
      (info.mode & 0o077) === 0 &&
      readdirSync(dir).length === 0
    );
  } catch {
    return false;
  }
}

/**
 * A private empty directory (hooks path, HOME, cwd of remote commands), checked at each use:
 * `reclaim-git-empty-<uid>` in the system's temporary folder, one for all of this user's
 * processes, so that no process leaves one behind (one per process accumulated, one for each
 * start of a worker or a test process). Made with mode 0700 when missing; when what is there is
 * anything but a private empty directory of this user (a link, another user's, something
 * planted in it), this process makes a fresh one of its own instead.
 */
export function emptyDir(): string {
  if (emptyDirectory !== undefined && isPrivateAndEmpty(emptyDirectory)) return emptyDirectory;
  const shared = path.join(os.tmpdir(), `reclaim-git-empty-${process.getuid?.() ?? "user"}`);
  try {
    mkdirSync(shared, { mode: 0o700 });
  } catch (error) {
    if (errnoCode(error) !== "EEXIST") throw error;
  }
  emptyDirectory = isPrivateAndEmpty(shared)
    ? shared
    : mkdtempSync(path.join(os.tmpdir(), "reclaim-git-empty-"));
  return emptyDirectory;
}

/** Protocols a remote may use; everything else (ext::, fd::, remote helpers) is refused. */
const ALLOWED_PROTOCOLS = ["file", "https", "http", "ssh"];

function staticOverrides(): [string, string][] {
  return [
    ["core.hooksPath", emptyDir()],
    ["core.fsmonitor", "false"],
    ["core.sshCommand", "ssh"],
    ["core.askPass", ""],
    ["core.pager", "cat"],
    ["core.editor", "false"],
    ["sequence.editor", "false"],
    ["core.attributesFile", "/dev/null"],
    ["core.excludesFile", "/dev/null"],
    ["core.symlinks", "true"],
    ["core.fileMode", "true"],
    ["core.autocrlf", "false"],
    ["core.safecrlf", "false"],
    ["core.untrackedCache", "false"],
    ["core.splitIndex", "false"],
    ["credential.helper", ""],
    ["protocol.allow", "never"],
    ...ALLOWED_PROTOCOLS.map((p): [string, string] => [`protocol.${p}.allow`, "always"]),
    ["commit.gpgSign", "false"],
    ["tag.gpgSign", "false"],
    ["gpg.program", "false"],
    ["gc.auto", "0"],
    ["maintenance.auto", "false"],
    ["submodule.recurse", "false"],
    ["fetch.recurseSubmodules", "false"],
    ["diff.external", ""],
    ["advice.detachedHead", "false"],
    ["init.defaultBranch", "main"],
    ["pack.threads", "1"],
  ];
}

/** The override that disables a key the repository's config sets, or undefined if harmless. */
export function neutralValue(key: string): string | undefined {
  const lower = key.toLowerCase();
  const parts = lower.split(".");
  const section = parts[0];
  const variable = parts[parts.length - 1];
  const sub = parts.length > 2;
  if (section === "filter" && sub) {
    if (variable === "clean" || variable === "smudge" || variable === "process") return "";
    if (variable === "required") return "false";
  }
  if (section === "diff" && sub && (variable === "command" || variable === "textconv")) return "";
  if (section === "merge" && sub && variable === "driver") return "";
  if (section === "credential" && variable === "helper") return "";
  if (section === "protocol" && sub && variable === "allow") {
    return ALLOWED_PROTOCOLS.includes(parts.slice(1, -1).join(".")) ? "always" : "never";
  }
  return undefined;
}

/** Keys that are reported as planted even though the static overrides already cover them. */
const COMMAND_KEYS =
  /^(core\.(hookspath|fsmonitor|sshcommand|askpass|pager|editor|gitproxy|alternaterefscommand|worktree|attributesfile)|sequence\.editor|gpg\..*|include\.path|includeif\..*\.path|remote\..*\.(vcs|uploadpack|receivepack)|uploadpack\.packobjectshook|pager\..*|alias\..*)$/;

function configEnv(overrides: [string, string][], base: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const env = { ...base };
  env.GIT_CONFIG_COUNT = String(overrides.length);
  overrides.forEach(([key, value], i) => {
    env[`GIT_CONFIG_KEY_${i}`] = key;
    env[`GIT_CONFIG_VALUE_${i}`] = value;
  });
  return env;
}

/** The service environment without anything git would pick up from it. */
export function neutralBaseEnv(inherited: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(inherited)) {
    if (name.startsWith("GIT_")) continue;
    if (["HOME", "XDG_CONFIG_HOME", "SSH_ASKPASS", "EDITOR", "VISUAL", "PAGER", "LESS"].includes(name))
      continue;
    env[name] = value;
  }
  const empty = emptyDir();
  Object.assign(env, {
    HOME: empty,
    XDG_CONFIG_HOME: empty,
    LC_ALL: "C",
    GIT_CONFIG_NOSYSTEM: "1",
    GIT_CONFIG_GLOBAL: "/dev/null",
    GIT_ATTR_NOSYSTEM: "1",
    GIT_TERMINAL_PROMPT: "0",
    GIT_ASKPASS: "false",
    GIT_PAGER: "cat",
    GIT_EDITOR: "false",
    GIT_OPTIONAL_LOCKS: "0",
    GIT_AUTHOR_NAME: "Reclaim",
    GIT_AUTHOR_EMAIL: "reclaim@localhost",
    GIT_COMMITTER_NAME: "Reclaim",
    GIT_COMMITTER_EMAIL: "reclaim@localhost",
  });
  return env;
}

/** Environment for commands that never touch a repository (ls-remote of a URL, clone). */
export function remoteEnv(inherited?: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  return configEnv(staticOverrides(), neutralBaseEnv(inherited));
}

export interface GitResult {
  stdout: Buffer;
  stderr: string;
  code: number;
}

export interface RunOptions {
  cwd: string;
  env: NodeJS.ProcessEnv;
  input?: string | Buffer;
  signal?: AbortSignal;
  /** Exit codes that resolve instead of rejecting (default only 0). */
  okCodes?: number[];
}

/**
 * Runs `git <args>` (no shell) in its own process group; on abort kills the whole group and
 * settles after git exited. Rejects with RECLAIM_ERR_GIT_COMMAND_FAILED on another exit code.
 */
export function runSafeGit(args: string[], options: RunOptions): Promise<GitResult> {
  return spawnGit(
    ["--no-pager", ...withTransportCommands(args)],
    options,
    (detail, cause) =>
      new GitRestoreError(
        "RECLAIM_ERR_GIT_COMMAND_FAILED",
        `git ${args.join(" ")}: ${detail}`,
        cause ? { cause } : undefined,
      ),
  );
}

/**
 * `remote.<x>.uploadpack`/`receivepack` cannot be overridden by config (git refuses a second
 * value and uses the first, the repository's), so commands that start them get the stock
 * program on their command line, which wins.
 */
function withTransportCommands(args: string[]): string[] {
  const [command, ...rest] = args;
  if (command === "fetch" || command === "ls-remote" || command === "pull" || command === "clone") {
    return [command, "--upload-pack=git-upload-pack", ...rest];
  }
  if (command === "push") return [command, "--receive-pack=git-receive-pack", ...rest];
  return args;
}

/** A repository opened through the safe runner. */
export interface SafeRepository {
  /** The work tree's top level (resolved), or undefined for a bare repository. */
  readonly worktree: string | undefined;
  /** `$GIT_DIR`: `.git`, or `<common>/worktrees/<name>` for a linked worktree. */
  readonly gitDir: string;
  /** The common directory (objects, refs, config). */
  readonly commonDir: string;
  readonly objectsDir: string;
  /** True for a linked worktree of another clone (`git worktree add`). */
  readonly linked: boolean;
  /** sha1 or sha256. */
  readonly objectFormat: string;
  /** Config keys of the repository (and its includes) that were neutralized. */
  readonly plantedConfig: readonly string[];
  /** The neutral environment every command of this repository runs with. */
  readonly env: NodeJS.ProcessEnv;
  /**
   * The repository's own config as read when it was opened (local, worktree and included
   * files; the last value of each key), keys lower-cased. Values only: nothing here runs.
   */
  readonly config: ReadonlyMap<string, string>;
  git(
    args: string[],
    options?: { input?: string | Buffer; signal?: AbortSignal; okCodes?: number[] },
  ): Promise<GitResult>;
  /** stdout as text. */
  text(args: string[], options?: { input?: string | Buffer; signal?: AbortSignal }): Promise<string>;
}

/**
 * Opens `dir` (a work tree's top level, a linked worktree, or a bare repository) through the
 * safe runner. Discovery itself runs with system/global config off and hooks off.
 *
 * @throws GitRestoreError RECLAIM_ERR_GIT_NOT_A_REPOSITORY
 */
export async function openSafeRepository(
  dir: string,
  options: { inherited?: NodeJS.ProcessEnv; signal?: AbortSignal } = {},
): Promise<SafeRepository> {
  const root = await realpath(path.resolve(dir)).catch((error) => {
    throw new GitRestoreError("RECLAIM_ERR_GIT_NOT_A_REPOSITORY", dir, { cause: error });
  });
  const base = configEnv(staticOverrides(), neutralBaseEnv(options.inherited));
  let facts: string[];
  try {
    // GIT_CEILING_DIRECTORIES: discovery never climbs out of `dir` into a parent repository.
    const env = { ...base, GIT_CEILING_DIRECTORIES: path.dirname(root) };
    const out = await runSafeGit(
      [
        "rev-parse",
        "--absolute-git-dir",
        "--git-common-dir",
        "--is-bare-repository",
        "--git-path",
        "objects",
        "--show-object-format",
      ],
      { cwd: root, env, signal: options.signal },
    );
    facts = out.stdout.toString("utf8").split("\n");
  } catch (error) {
    throw new GitRestoreError("RECLAIM_ERR_GIT_NOT_A_REPOSITORY", root, { cause: error });
  }
  const gitDir = await realpath(facts[0]!);
  const commonDir = await realpath(path.resolve(root, facts[1]!));
  const bare = facts[2] === "true";
  const objectsDir = await realpath(path.resolve(root, facts[3]!));
  if (!bare) {
    const top = await stat(path.join(root, ".git")).catch(() => undefined);
    if (!top)
      throw new GitRestoreError("RECLAIM_ERR_GIT_NOT_A_REPOSITORY", `${root} is not a work tree's top level`);
  }

  // Everything the local config (and worktree config, and what they include) sets.
  const listing = await runSafeGit(["config", "--list", "--null", "--includes", "--show-scope"], {
    cwd: root,
    env: { ...neutralBaseEnv(options.inherited), GIT_DIR: gitDir },
    signal: options.signal,
    okCodes: [0, 1],
  });
  const planted = new Set<string>();
  const dynamic: [string, string][] = [];
  const values = new Map<string, string>();
  // --null --show-scope: "<scope>\0<key>\n<value>\0" per entry.
  const fields = listing.stdout.toString("utf8").split("\0");
  for (let i = 0; i + 1 < fields.length; i += 2) {
    if (fields[i] === "command") continue;
    const record = fields[i + 1]!;
    const newline = record.indexOf("\n");
    const key = newline < 0 ? record : record.slice(0, newline);
    values.set(key.toLowerCase(), newline < 0 ? "" : record.slice(newline + 1));
    const neutral = neutralValue(key);
    if (neutral !== undefined) {
      planted.add(key);
      if (!dynamic.some(([k]) => k === key)) dynamic.push([key, neutral]);
    } else if (COMMAND_KEYS.test(key.toLowerCase())) planted.add(key);
  }
  const env = configEnv([...staticOverrides(), ...dynamic], {
    ...neutralBaseEnv(options.inherited),
    GIT_DIR: gitDir,
    ...(bare ? {} : { GIT_WORK_TREE: root }),
  });
  const objectFormat = facts[4]?.trim() ?? "";
  const cwd = root;
  const repo: SafeRepository = {
    worktree: bare ? undefined : root,
    gitDir,
    commonDir,
    objectsDir,
    linked: gitDir !== commonDir,
    objectFormat: objectFormat || "sha1",
    plantedConfig: [...planted].sort(),
    config: values,
    env,
    git: (args, o = {}) =>
      runSafeGit(args, { cwd, env, input: o.input, signal: o.signal ?? options.signal, okCodes: o.okCodes }),
    text: async (args, o = {}) =>
      (
        await runSafeGit(args, { cwd, env, input: o.input, signal: o.signal ?? options.signal })
      ).stdout.toString("utf8"),
  };
  return repo;
}

/**
 * The environment for `withObjectQuarantine` (its `env` option): neutral, with the
 * repository's overrides, without GIT_DIR/GIT_WORK_TREE (the quarantine finds the repository
 * from its cwd and adds its own object-directory variables).
 */
export function quarantineBaseEnv(repo: SafeRepository): NodeJS.ProcessEnv {
  const env = { ...repo.env };
  delete env.GIT_DIR;
  delete env.GIT_WORK_TREE;
  return env;
}
