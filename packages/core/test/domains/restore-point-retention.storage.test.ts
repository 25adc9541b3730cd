/**
 * Restore-point retention against the real storage providers: local_disk and S3 (the Ceph
 * RADOS Gateway the Jest global setup starts). The whole path runs through the API and the
 * worker: register, seal into the returned key, activate (Reclaim reads the object back),
 * supersede, deletion confirmed by the provider. Then an S3 outage that recovers, through a
 * TCP proxy in front of the gateway: nothing is marked deleted before the provider confirms
 * it, no object of an `expiring` row is deleted, and retries are timed by the ledger.
 */
import { randomUUID } from "node:crypto";
import path from "node:path";
import { FaultPoints, InjectedFault, type BatchReport } from "@reclaim/core";
import {
  createLocalDiskProvider,
  createS3Provider,
  StorageKey,
  type S3Options,
  type StorageProvider,
} from "@reclaim/shared";
import { createTestBucket, startStack, waitFor, type Stack, type TestBucket } from "@reclaim/testkit";
import {
  advanceDeadlines,
  DAY_MS,
  deadlinesOf,
  DOMAIN,
  insertChain,
  insertIssue,
  insertWorkspace,
  MINUTE_MS,
  objectState,
  restorePointRow,
  sealObject,
  startHookServer,
  startTcpProxy,
  storedRestorePoint,
  type HookServer,
  type TcpProxy,
} from "@reclaim/testkit/src/fixtures/restore-points";

// Created on first use, so the local_disk suite runs even when no S3 server could start.
let bucket: TestBucket | undefined;
async function testBucket(): Promise<TestBucket> {
  bucket ??= await createTestBucket();
  return bucket;
}
afterAll(async () => bucket?.remove());

const PREFIX = "reclaim-restore-points/";

function s3Options(bucket: TestBucket, endpoint: string): S3Options {
  return {
    bucket: bucket.name,
    endpoint,
    region: bucket.server.region,
    forcePathStyle: true,
    prefix: PREFIX,
    accessKeyId: bucket.server.accessKey,
    secretAccessKey: bucket.server.secretKey,
  };
}

function s3Env(bucket: TestBucket, endpoint: string): Record<string, string> {
  return {
    PAPERCLIP_STORAGE_PROVIDER: "s3",
    PAPERCLIP_STORAGE_S3_BUCKET: bucket.name,
    PAPERCLIP_STORAGE_S3_ENDPOINT: endpoint,
    PAPERCLIP_STORAGE_S3_REGION: bucket.server.region,
    PAPERCLIP_STORAGE_S3_FORCE_PATH_STYLE: "true",
    PAPERCLIP_STORAGE_S3_PREFIX: PREFIX,
    AWS_ACCESS_KEY_ID: bucket.server.accessKey,
    AWS_SECRET_ACCESS_KEY: bucket.server.secretKey,
  };
}

interface ProviderCase {
  name: string;
  env: () => Promise<Record<string, string>>;
  /** The test's own view of the same storage, independent of Reclaim's. */
  direct: (stack: Stack) => Promise<StorageProvider>;
}

const cases: ProviderCase[] = [
  {
    name: "local_disk",
    env: async () => ({}),
    direct: async (stack) =>
      createLocalDiskProvider({ baseDir: path.join(stack.instanceRoot, "data", "storage") }),
  },
  {
    name: "s3 (Ceph RGW)",
    env: async () => {
      const b = await testBucket();
      return s3Env(b, b.server.endpoint);
    },
    direct: async () => {
      const b = await testBucket();
      return createS3Provider(s3Options(b, b.server.endpoint));
    },
  },
];

describe.each(cases)("with $name storage", (provider) => {
  let stack: Stack;
  let storage: StorageProvider;
  beforeAll(async () => {
    stack = await startStack({ env: await provider.env() });
    storage = await provider.direct(stack);
  });
  afterAll(async () => stack?.stop());

  it("a superseded restore point's object is deleted, then the row is marked deleted", async () => {
    const company = randomUUID();
    const issue = await insertIssue(stack, { companyId: company });
    const workspace = await insertWorkspace(stack, company, issue);
    const registered = await stack.api("POST", `/v1/companies/${company}/restore-points`, {
      executionWorkspaceId: workspace,
      sourceIssueId: issue,
      generation: 1,
      kind: "worktree",
    });
    expect(registered.status).toBe(201);
    const { id, storageKey, storageProvider } = registered.body.restorePoint;
    expect(storageProvider).toBe(storage.kind);
    const sealed = await sealObject(storage, StorageKey.parse(storageKey), 256 * 1024);
    const activated = await stack.api("POST", `/v1/companies/${company}/restore-points/${id}/activate`, {
      sha256: sealed.sha256,
      byteSize: sealed.byteSize,
      formatVersion: sealed.formatVersion,
      keyFingerprint: sealed.keyFingerprint,
    });
    expect(activated.status).toBe(200);
    expect(await objectState(storage, storageKey)).toBe("present");

    await stack.api("POST", `/v1/companies/${company}/restore-points/${id}/supersede`);
    const row = await waitFor(
      async () => {
        const r = await restorePointRow(stack, id);
        return r.status === "deleted" ? r : null;
      },
      { what: "the deletion" },
    );
    expect(row.deletedAt).not.toBeNull();
    expect(await objectState(storage, storageKey)).toBe("absent");
    const mine = (x: BatchReport) => x.companyId === company && x.removed > 0;
    const report = (await stack.waitForReports(DOMAIN, (r) => r.some(mine))).find(mine);
    expect(report).toMatchObject({ removed: 1, reclaimedBytes: sealed.byteSize });
  });

  it("an expired restore point goes through expiry and its object is deleted", async () => {
    const company = randomUUID();
    const [root] = await insertChain(stack, company, 2, "done", new Date(Date.now() - 120 * DAY_MS));
    const point = await storedRestorePoint(stack, storage, {
      companyId: company,
      sourceIssueId: root!,
      deleteAfter: new Date(Date.now() - 1000),
    });
    await stack.api("POST", "/v1/events", {
      events: [{ type: "issue.deleted", companyId: company, issueId: randomUUID() }],
    });
    await waitFor(async () => (await restorePointRow(stack, point.id)).status === "deleted", {
      what: "expiry",
    });
    expect(await objectState(storage, point.storageKey)).toBe("absent");
  });
});

describe("an S3 outage that recovers", () => {
  let stack: Stack;
  let proxy: TcpProxy;
  let hook: HookServer;
  let storage: StorageProvider;
  beforeAll(async () => {
    const b = await testBucket();
    proxy = await startTcpProxy(b.server.endpoint);
    hook = await startHookServer();
    stack = await startStack({
      env: {
        ...s3Env(b, proxy.endpoint),
        ...hook.env,
        RECLAIM_RESTORE_POINT_SETTLE_MS: "600000",
      },
    });
    storage = createS3Provider(s3Options(b, b.server.endpoint));
  });
  afterAll(async () => {
    await stack?.stop();
    await proxy?.close();
    await hook?.close();
  });

  it("keeps rows undeleted until the provider confirms, never deletes an expiring row's object, and retries after 15 minutes", async () => {
    const company = randomUUID();
    const [root] = await insertChain(stack, company, 1, "done", new Date(Date.now() - 120 * DAY_MS));
    const superseded = await storedRestorePoint(stack, storage, {
      companyId: company,
      sourceIssueId: root!,
      status: "superseded",
    });
    const expiring = await storedRestorePoint(stack, storage, {
      companyId: company,
      sourceIssueId: root!,
      status: "expiring",
      generation: 2,
    });
    hook.respondWith(503);

    // Storage goes away; the deletion is requested (a real deadline, due now).
    await proxy.cut();
    const failedAt = Date.now();
    await stack.api("POST", "/v1/events", {
      events: [{ type: "issue.deleted", companyId: company, issueId: randomUUID() }],
    });
    const failed = await waitFor(
      async () => {
        const r = await restorePointRow(stack, superseded.id);
        return r.lastError ? r : null;
      },
      { what: "the failed deletion" },
    );
    expect(failed.status).toBe("superseded");
    expect(failed.lastError).toMatch(/storage delete failed: RECLAIM_ERR_STORAGE_UNAVAILABLE/);
    expect(failed.retryAt!.getTime()).toBeGreaterThanOrEqual(failedAt + 15 * MINUTE_MS - 1000);
    expect(failed.retryAt!.getTime()).toBeLessThan(Date.now() + 15 * MINUTE_MS);
    expect(await objectState(storage, superseded.storageKey)).toBe("present");
    // The failed hook keeps the expiring row, and its object, for 15 minutes too.
    const waiting = await restorePointRow(stack, expiring.id);
    expect(waiting.status).toBe("expiring");
    expect(waiting.lastError).toMatch(/expiry hook failed/);
    expect(await objectState(storage, expiring.storageKey)).toBe("present");
    // The ledger holds the retry at the earliest retry_at.
    await stack.idle();
    const retryAt = Math.min(failed.retryAt!.getTime(), waiting.retryAt!.getTime());
    expect((await deadlinesOf(stack, company)).get("retry")?.getTime()).toBe(retryAt);

    // Storage is back, the hook too; 15 minutes pass (rows and deadlines backdated).
    await proxy.restore();
    hook.respondWith(204);
    await stack.db.executionWorkspaceRestorePoint.updateMany({
      where: { id: { in: [superseded.id, expiring.id] } },
      data: { retryAt: new Date(Date.now() - 1000) },
    });
    const seenDuringHook: string[] = [];
    hook.onCall(async (call) => {
      if (call.body.restorePoint.id === expiring.id)
        seenDuringHook.push(await objectState(storage, expiring.storageKey));
    });
    await advanceDeadlines(stack, company);
    for (const point of [superseded, expiring]) {
      await waitFor(async () => (await restorePointRow(stack, point.id)).status === "deleted", {
        what: `deletion of ${point.id}`,
      });
      expect(await objectState(storage, point.storageKey)).toBe("absent");
    }
    expect(seenDuringHook).toEqual(["present"]);
    const done = await restorePointRow(stack, superseded.id);
    expect(done).toMatchObject({ lastError: null, retryAt: null });
    await stack.idle();
    expect(await deadlinesOf(stack, company)).toEqual(new Map());
  });
});

describe("a batch that dies between the storage delete and the ledger update", () => {
  let stack: Stack;
  afterAll(async () => stack?.stop());

  it("leaves the row unmarked; the retried batch deletes again and marks it deleted", async () => {
    stack = await startStack({ worker: false });
    const storage = createLocalDiskProvider({ baseDir: path.join(stack.instanceRoot, "data", "storage") });
    const company = randomUUID();
    const point = await storedRestorePoint(stack, storage, {
      companyId: company,
      sourceIssueId: randomUUID(),
      status: "superseded",
    });
    const atFault: { status: string; object: string }[] = [];
    await stack.startWorker({
      faults: FaultPoints.of({
        "restore-point-retention.after-delete": async () => {
          atFault.push({
            status: (await restorePointRow(stack, point.id)).status,
            object: await objectState(storage, point.storageKey),
          });
          if (atFault.length === 1) throw new InjectedFault("restore-point-retention.after-delete");
        },
      }),
    });
    await stack.api("POST", "/v1/events", {
      events: [{ type: "issue.deleted", companyId: company, issueId: randomUUID() }],
    });
    await waitFor(async () => (await restorePointRow(stack, point.id)).status === "deleted", {
      what: "the retried deletion",
    });
    // The object was gone before the first attempt died, and the row was not yet marked.
    expect(atFault).toEqual([
      { status: "superseded", object: "absent" },
      { status: "superseded", object: "absent" },
    ]);
  });
});
