/**
 * The environment that points git child processes at a quarantine, as git's own
 * tmp_objdir_create does for receive-pack:
 *
 *   GIT_OBJECT_DIRECTORY              the quarantine: every new object is written there
 *   GIT_ALTERNATE_OBJECT_DIRECTORIES  the caller's value, then the real store: existing
 *                                     objects stay readable (git also follows the real
 *                                     store's own info/alternates from there)
 *   GIT_QUARANTINE_PATH               the quarantine: git refuses ref updates while it is set
 *   GIT_INDEX_FILE                    a private index inside the quarantine
 *
 * Variables that would point git at another repository or object store are dropped from
 * the base environment first.
 */
export interface QuarantinePaths {
  quarantine: string;
  objectsDir: string;
  indexFile: string;
}

const REPOSITORY_VARIABLES = [
  "GIT_DIR",
  "GIT_WORK_TREE",
  "GIT_COMMON_DIR",
  "GIT_INDEX_FILE",
  "GIT_OBJECT_DIRECTORY",
  "GIT_QUARANTINE_PATH",
];

/** The base environment without variables that redirect git to another repository. */
export function repositoryEnv(base: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const env = { ...base };
  for (const name of REPOSITORY_VARIABLES) delete env[name];
  return env;
}

export function quarantineEnv(base: NodeJS.ProcessEnv, paths: QuarantinePaths): NodeJS.ProcessEnv {
  const env = repositoryEnv(base);
  const existing = env.GIT_ALTERNATE_OBJECT_DIRECTORIES;
  const real = quoteAlternate(paths.objectsDir);
  env.GIT_ALTERNATE_OBJECT_DIRECTORIES = existing ? `${existing}:${real}` : real;
  env.GIT_OBJECT_DIRECTORY = paths.quarantine;
  env.GIT_QUARANTINE_PATH = paths.quarantine;
  env.GIT_INDEX_FILE = paths.indexFile;
  return env;
}

/**
 * One entry of GIT_ALTERNATE_OBJECT_DIRECTORIES, quoted as git's env_append does: only when
 * the path contains the separator `:` or starts with `"`, because older git does not
 * understand quoting; then in C style (quote_c_style with core.quotePath's default), which
 * git's parser undoes.
 */
export function quoteAlternate(dir: string): string {
  if (!dir.startsWith('"') && !dir.includes(":")) return dir;
  let out = '"';
  for (const byte of Buffer.from(dir, "utf8")) {
    const named = C_ESCAPES[byte];
    if (named) out += named;
    else if (byte < 0x20 || byte >= 0x7f) out += "\\" + byte.toString(8).padStart(3, "0");
    else out += String.fromCharCode(byte);
  }
  return out + '"';
}

const C_ESCAPES: Record<number, string> = {
  0x07: "\\a",
  0x08: "\\b",
  0x09: "\\t",
  0x0a: "\\n",
  0x0b: "\\v",
  0x0c: "\\f",
  0x0d: "\\r",
  0x22: '\\"',
  0x5c: "\\\\",
};
