/**
 * A private PostgreSQL server for a benchmark that needs more connections than the shared
 * server (127.0.0.1:5432, which the tests of others use) has left: initdb into a temporary
 * directory, started with pg_ctl on a free port of 127.0.0.1 (trust auth, its unix socket in
 * the same directory) and removed by stop(), or on exit, Ctrl-C or SIGTERM of this process;
 * a directory left by a process that was killed outright is removed by the next start.
 * The shared server's configuration is never changed.
 *
 * The server is configured like the one it stands in for: every setting that server's
 * configuration file sets (shared_buffers, autovacuum, WAL sizes, ...) is copied, except its
 * address, files and max_connections. fsync, synchronous_commit and full_page_writes keep
 * what that server has (the defaults: on), so figures measured on either stay comparable.
 *
 * PostgreSQL 15's binaries (Debian: /usr/lib/postgresql/15/bin, or RECLAIM_BENCH_PG_BIN);
 * initdb refuses root, so as root they run as the `postgres` user (runuser).
 */
import { execFile, execFileSync } from "node:child_process";
import {
  appendFileSync,
  chownSync,
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { rm } from "node:fs/promises";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import pg from "pg";

const execFileAsync = promisify(execFile);

const BIN = process.env.RECLAIM_BENCH_PG_BIN ?? "/usr/lib/postgresql/15/bin";
const DIR_PREFIX = "reclaim-bench-pg-";
/** Settings of the copied configuration that name the other server, or that are set here. */
const NOT_COPIED =
  /^(port|listen_addresses|unix_socket_\w+|max_connections|cluster_name|data_directory|\w+_file|ssl\w*)$/;

export interface PrivatePostgres {
  /** The server's `postgres` database, as user postgres. */
  adminUrl: string;
  port: number;
  maxConnections: number;
  /** Stops the server and removes its directory (idempotent). */
  stop(): void;
}

const asRoot = process.getuid?.() === 0;

/** One of PostgreSQL's programs, run as `postgres` when this process is root. */
function pgCommand(program: string, args: string[]): [string, string[]] {
  const file = path.join(BIN, program);
  return asRoot ? ["runuser", ["-u", "postgres", "--", file, ...args]] : [file, args];
}

function pgProgram(cwd: string, program: string, args: string[]): string {
  const [command, argv] = pgCommand(program, args);
  return execFileSync(command, argv, { cwd, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
}

/** pg_ctl's arguments to stop `dir`'s server: fast, or failing that at once. */
const stopArgs = (dir: string) =>
  ["fast", "immediate"].map((mode) => ["stop", "-D", path.join(dir, "data"), "-m", mode, "-w", "-t", "30"]);
const running = (dir: string) => existsSync(path.join(dir, "data", "postmaster.pid"));

/** Stops the server of `dir` (no-op when none runs) and removes the directory. */
function removeServer(dir: string): void {
  for (const args of running(dir) ? stopArgs(dir) : []) {
    try {
      pgProgram(dir, "pg_ctl", args);
      break;
    } catch {
      // Not stopped that way (or not running: a stale pid file).
    }
  }
  rmSync(dir, { recursive: true, force: true });
}

/**
 * The same without blocking this process: after Ctrl-C, tsx's parent process kills its child
 * (SIGKILL) when the child does not answer a relayed signal within 30 ms.
 */
async function removeServerAsync(dir: string): Promise<void> {
  for (const args of running(dir) ? stopArgs(dir) : []) {
    const [command, argv] = pgCommand("pg_ctl", args);
    const stopped = await execFileAsync(command, argv, { cwd: dir }).then(
      () => true,
      () => false,
    );
    if (stopped) break;
  }
  await rm(dir, { recursive: true, force: true });
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
};

/** Servers whose bench process is gone (killed before it could stop them). */
function removeOrphans(): void {
  for (const name of readdirSync(os.tmpdir())) {
    if (!name.startsWith(DIR_PREFIX)) continue;
    const dir = path.join(os.tmpdir(), name);
    let owner: number;
    try {
      owner = Number(readFileSync(path.join(dir, "owner.pid"), "utf8"));
    } catch {
      continue; // being created, or not ours
    }
    if (owner > 0 && !alive(owner)) removeServer(dir);
  }
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

/** `name = 'value'` lines for the settings `like`'s configuration file sets. */
async function copiedSettings(like: string): Promise<string[]> {
  const client = new pg.Client({ connectionString: like });
  await client.connect();
  try {
    const { rows } = await client.query<{ name: string; value: string }>(
      "SELECT name, current_setting(name) AS value FROM pg_settings WHERE source = 'configuration file'",
    );
    return rows
      .filter((row) => !NOT_COPIED.test(row.name))
      .map((row) => `${row.name} = '${row.value.replace(/'/g, "''")}'`);
  } finally {
    await client.end();
  }
}

/** Starts a private server with `maxConnections`, configured like the server at `like` (an admin URL). */
export async function startPrivatePostgres(options: {
  maxConnections: number;
  like: string;
}): Promise<PrivatePostgres> {
  removeOrphans();
  const settings = await copiedSettings(options.like);
  const port = await freePort();
  const dir = mkdtempSync(path.join(os.tmpdir(), DIR_PREFIX));
  writeFileSync(path.join(dir, "owner.pid"), String(process.pid));
  let removed = false;
  let interrupt: Promise<void> | undefined;
  const refusals = () => {
    const log = path.join(dir, "server.log");
    const refused = existsSync(log) ? readFileSync(log, "utf8").split("too many clients").length - 1 : 0;
    if (refused)
      process.stderr.write(`private PostgreSQL refused ${refused} connection(s): too many clients\n`);
  };
  const stop = () => {
    if (removed) return;
    if (!interrupt) refusals();
    removeServer(dir);
    removed = true;
    process.off("exit", stop);
    process.off("SIGINT", interrupted);
    process.off("SIGTERM", interrupted);
  };
  // Ctrl-C reaches this process more than once (from the terminal, and relayed by tsx): the
  // first stops the server, the others wait for it. A process.exit meanwhile (the bench
  // failing as its connections end) removes it synchronously ("exit").
  function interrupted(signal: NodeJS.Signals) {
    interrupt ??= (async () => {
      refusals();
      await removeServerAsync(dir);
      removed = true;
      process.exit(128 + os.constants.signals[signal]);
    })();
  }
  process.on("exit", stop);
  process.on("SIGINT", interrupted);
  process.on("SIGTERM", interrupted);
  try {
    if (asRoot) {
      const uid = Number(execFileSync("id", ["-u", "postgres"], { encoding: "utf8" }));
      const gid = Number(execFileSync("id", ["-g", "postgres"], { encoding: "utf8" }));
      chownSync(dir, uid, gid);
    }
    const data = path.join(dir, "data");
    pgProgram(dir, "initdb", ["-D", data, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync"]);
    // Appended to initdb's postgresql.conf: the last occurrence of a setting wins.
    appendFileSync(
      path.join(data, "postgresql.conf"),
      [
        "# bench/private-postgres.ts: the settings of the server it stands in for, then its own",
        ...settings,
        `port = ${port}`,
        "listen_addresses = '127.0.0.1'",
        `unix_socket_directories = '${dir}'`,
        `max_connections = ${options.maxConnections}`,
        "",
      ].join("\n"),
    );
    try {
      pgProgram(dir, "pg_ctl", ["start", "-D", data, "-l", path.join(dir, "server.log"), "-w", "-t", "60"]);
    } catch (error) {
      const log = path.join(dir, "server.log");
      const tail = existsSync(log) ? readFileSync(log, "utf8").split("\n").slice(-10).join("\n") : "";
      throw new Error(`private PostgreSQL did not start on 127.0.0.1:${port}: ${String(error)}\n${tail}`);
    }
    return {
      adminUrl: `postgresql://postgres@127.0.0.1:${port}/postgres`,
      port,
      maxConnections: options.maxConnections,
      stop,
    };
  } catch (error) {
    stop();
    throw error;
  }
}
