/**
 * Webhook receivers (report callbacks, restore-point expiry hooks) hold the key that signs
 * what they receive. It is a secret of its own: with a callback or hook URL and no
 * RECLAIM_CALLBACK_SECRET, or that secret equal to the API token, neither service starts,
 * and the error names the variable.
 */
import { ConfigError, readServiceConfig } from "@reclaim/core";
import { readConfig as readRestorePointConfig } from "@reclaim/core/src/domains/restore-point-retention/config";
import { spawnService, TEST_REDIS_URL, TEST_TOKEN } from "@reclaim/testkit";

const base = {
  DATABASE_URL: "postgresql://postgres@127.0.0.1:5432/reclaim_unused",
  REDIS_URL: TEST_REDIS_URL,
  RECLAIM_API_TOKEN: TEST_TOKEN,
  PAPERCLIP_INSTANCE_ROOT: "/nonexistent/instance",
  RECLAIM_PORT: "0",
};
const CALLBACK = { RECLAIM_CALLBACK_URL: "http://127.0.0.1:9/reports" };
const HOOK = { RECLAIM_RESTORE_POINT_EXPIRY_HOOK_URL: "http://127.0.0.1:9/hook" };

function variableOf(read: () => unknown): string {
  try {
    read();
  } catch (error) {
    if (error instanceof ConfigError) return error.message;
    throw error;
  }
  return "(accepted)";
}

describe("the webhook signing secret is never the API token", () => {
  it.each([
    ["a callback URL", CALLBACK],
    ["an expiry hook URL", HOOK],
  ])(
    "with %s and no RECLAIM_CALLBACK_SECRET, neither service starts",
    async (_what, url) => {
      for (const service of ["scheduler", "worker"] as const) {
        const child = spawnService(service, { ...base, ...url });
        // A service that started anyway is stopped, and the test fails on its exit code (the
        // bound leaves room for a loaded machine: starting tsx took over 20 s under load).
        const started = setTimeout(() => child.kill("SIGKILL"), 50_000);
        const exit = await child.exited.finally(() => clearTimeout(started));
        expect({ service, code: exit.code }).toEqual({ service, code: 2 });
        expect(child.output()).toContain("RECLAIM_CALLBACK_SECRET");
        expect(child.output()).toContain(Object.keys(url)[0]);
      }
    },
    120_000,
  );

  it("refuses a signing secret equal to the API token", () => {
    const env = { ...base, RECLAIM_CALLBACK_SECRET: TEST_TOKEN };
    expect(variableOf(() => readServiceConfig({ ...env, ...CALLBACK }))).toMatch(
      /^RECLAIM_CALLBACK_SECRET: .*must differ from RECLAIM_API_TOKEN/,
    );
    expect(variableOf(() => readRestorePointConfig({ ...env, ...HOOK }))).toMatch(
      /^RECLAIM_CALLBACK_SECRET: .*must differ from RECLAIM_API_TOKEN/,
    );
  });

  it("accepts a secret of its own, and needs none without a URL", () => {
    const own = { ...base, RECLAIM_CALLBACK_SECRET: "callback-secret-0123456789" };
    expect(readServiceConfig({ ...own, ...CALLBACK }).callbackSecret).toBe("callback-secret-0123456789");
    expect(readRestorePointConfig({ ...own, ...HOOK }).expiryHook?.secret).toBe("callback-secret-0123456789");
    expect(variableOf(() => readServiceConfig(base))).toBe("(accepted)");
    expect(readRestorePointConfig(base).expiryHook).toBeNull();
  });
});
