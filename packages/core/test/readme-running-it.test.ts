/**
 * README "Running it" works verbatim on a fresh clone: the repository is cloned at HEAD (`git
 * clone` of this working repository) and the README's `npm` steps are run in it, as they are
 * written there, against a fresh database and Redis prefix: `npm ci` (which builds), `npm prune
 * --omit=dev` (so nothing at run time can lean on a development dependency such as tsx),
 * `npm run migrate`, then `npm run scheduler` answers /readyz and a job requested through its
 * API is processed by `npm run worker`.
 *
 * `npm ci` may take the packages from the local npm cache (npm_config_prefer_offline); it still
 * installs and builds everything from scratch, so this test takes minutes on a loaded machine.
 */
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { createServer } from "node:net";
import path from "node:path";
import { REPO_ROOT } from "../src/db/migrate";
import {
  databaseUrl,
  deleteKeys,
  dropDatabase,
  tempDir,
  uniqueName,
  uniquePrefix,
  waitFor,
} from "@reclaim/testkit";

jest.setTimeout(25 * 60_000);

/** The `npm ...` lines of the README's "Running it" block, comments dropped. */
function runningItSteps(): string[] {
  const readme = readFileSync(path.join(REPO_ROOT, "README.md"), "utf8");
  const section = readme.slice(readme.indexOf("## Running it"));
  const block = /```bash\n([\s\S]*?)```/.exec(section)![1]!;
  return block
    .split("\n")
    .map((line) => line.replace(/\s+#.*$/, "").trim())
    .filter((line) => line.startsWith("npm "));
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

interface Service {
  child: ChildProcess;
  output: () => string;
}

/** A long-running step, in its own process group (npm, its shell and node are stopped together). */
function start(step: string, cwd: string, env: NodeJS.ProcessEnv): Service {
  const child = spawn("bash", ["-c", step], { cwd, env, detached: true, stdio: ["ignore", "pipe", "pipe"] });
  let output = "";
  child.stdout!.on("data", (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on("data", (chunk: Buffer) => (output += chunk.toString()));
  return { child, output: () => output };
}

async function stop(service: Service): Promise<void> {
  const { child } = service;
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once("exit", resolve));
  process.kill(-child.pid!, "SIGTERM");
  const timer = setTimeout(() => process.kill(-child.pid!, "SIGKILL"), 30_000);
  await exited;
  clearTimeout(timer);
}

it("README's Running it steps start the scheduler and a worker on a fresh clone, dev dependencies pruned", async () => {
  const steps = runningItSteps();
  expect(steps).toEqual([
    "npm ci",
    "npm prune --omit=dev",
    "npm run migrate",
    "npm run scheduler",
    "npm run worker",
  ]);

  const dir = await tempDir("reclaim-clone-");
  const database = uniqueName("t");
  const prefix = uniquePrefix();
  const services: Service[] = [];
  try {
    const clone = path.join(dir.path, "reclaim");
    const cloned = spawnSync("git", ["clone", "--quiet", REPO_ROOT, clone], { encoding: "utf8" });
    expect(cloned.stderr).toBe("");
    const port = await freePort();
    const token = "fresh-clone-token-0123456789";
    const env: NodeJS.ProcessEnv = {
      PATH: process.env.PATH,
      HOME: process.env.HOME ?? "/root",
      npm_config_prefer_offline: "true",
      DATABASE_URL: databaseUrl(database),
      REDIS_URL: process.env.RECLAIM_TEST_REDIS_URL ?? "redis://127.0.0.1:6379",
      RECLAIM_QUEUE_PREFIX: prefix,
      RECLAIM_API_TOKEN: token,
      RECLAIM_PORT: String(port),
      PAPERCLIP_INSTANCE_ROOT: path.join(dir.path, "instance"),
    };

    for (const step of steps.filter((s) => !/^npm run (scheduler|worker)$/.test(s))) {
      const ran = spawnSync("bash", ["-c", step], { cwd: clone, env, encoding: "utf8", maxBuffer: 64 << 20 });
      if (ran.status !== 0)
        throw new Error(`${step} failed (${ran.status}):\n${(ran.stdout + ran.stderr).slice(-4000)}`);
    }
    // Built, and what runs below cannot use tsx or TypeScript: they are gone.
    expect(existsSync(path.join(clone, "dist/apps/scheduler/src/main.js"))).toBe(true);
    expect(existsSync(path.join(clone, "node_modules/tsx/package.json"))).toBe(false);

    const scheduler = start("npm run scheduler", clone, env);
    const worker = start("npm run worker", clone, env);
    services.push(scheduler, worker);
    const api = (route: string, init: RequestInit = {}) =>
      fetch(`http://127.0.0.1:${port}${route}`, {
        ...init,
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      });
    const ready = await waitFor(
      async () => {
        const response = await api("/readyz").catch(() => null);
        return response?.ok ? ((await response.json()) as { status: string }) : null;
      },
      { timeoutMs: 120_000, what: "scheduler /readyz" },
    ).catch((error: Error) => {
      throw new Error(`${error.message}\n${scheduler.output().slice(-3000)}`);
    });
    expect(ready.status).toBe("ready");

    const requested = await api("/v1/sweeps", {
      method: "POST",
      body: JSON.stringify({ domain: "native-workspace-sync", companyId: null, dryRun: true }),
    });
    expect(requested.status).toBe(202);
    const { jobId } = (await requested.json()) as { jobId: string };
    const job = await waitFor(
      async () => {
        const body = (await (await api(`/v1/jobs/${jobId}`)).json()) as {
          state: string;
          report?: { dryRun: boolean; error: string | null };
        };
        return body.state === "completed" || body.state === "failed" ? body : null;
      },
      { timeoutMs: 120_000, what: `job ${jobId}` },
    ).catch((error: Error) => {
      throw new Error(`${error.message}\n${worker.output().slice(-3000)}`);
    });
    expect(job).toMatchObject({ state: "completed", report: { dryRun: true, error: null } });
    expect(worker.output()).toContain(jobId);
  } finally {
    for (const service of services) await stop(service);
    await dropDatabase(database);
    await deleteKeys(prefix);
    await dir.remove();
  }
});
