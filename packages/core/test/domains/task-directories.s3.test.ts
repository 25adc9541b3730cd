/**
 * Isolated task directories on the real S3 gateway (Ceph RGW from packages/testkit): the
 * save-remove-reopen round trip compares every byte, mode and link target; with s3 and the
 * key from a key file instead of PAPERCLIP_SECRETS_MASTER_KEY, restore points are refused and
 * the directory is kept (`restore_points_refused`).
 */
import { createTestBucket, startStack, type Stack, type TestBucket } from "@reclaim/testkit";
import {
  closeEvent,
  exists,
  removed,
  snapshotOf,
  task,
  TASK_ENV,
  workspaceRow,
} from "@reclaim/testkit/src/fixtures/task-directories";

let bucket: TestBucket;
const stacks: Stack[] = [];
beforeAll(async () => {
  bucket = await createTestBucket();
});
afterAll(async () => {
  for (const s of stacks) await s.stop();
  await bucket?.remove();
});

function s3Env(): Record<string, string> {
  return {
    PAPERCLIP_STORAGE_PROVIDER: "s3",
    PAPERCLIP_STORAGE_S3_BUCKET: bucket.name,
    PAPERCLIP_STORAGE_S3_ENDPOINT: bucket.server.endpoint,
    PAPERCLIP_STORAGE_S3_REGION: bucket.server.region,
    PAPERCLIP_STORAGE_S3_FORCE_PATH_STYLE: "true",
    PAPERCLIP_STORAGE_S3_PREFIX: "reclaim-task-directories/",
    AWS_ACCESS_KEY_ID: bucket.server.accessKey,
    AWS_SECRET_ACCESS_KEY: bucket.server.secretKey,
  };
}

describe("a closed task's directory on S3 storage", () => {
  it("is saved, removed and restored with every byte, mode and link target", async () => {
    const stack = await startStack({ env: { ...TASK_ENV, ...s3Env() } });
    stacks.push(stack);
    const t = await task(stack);
    const before = await snapshotOf(t.dir);
    for (const k of Object.keys(before)) if (k.startsWith("node_modules")) delete before[k];
    await closeEvent(stack, t);
    await removed(stack, t);
    const rp = await stack.db.executionWorkspaceRestorePoint.findFirstOrThrow({
      where: { executionWorkspaceId: t.workspace },
    });
    expect([rp.status, rp.storageProvider]).toEqual(["active", "s3"]);
    const reopened = await stack.api(
      "POST",
      `/v1/companies/${t.company}/execution-workspaces/${t.workspace}/reopen?wait=60`,
      { reason: "run" },
    );
    expect(reopened.body).toMatchObject({ outcome: "restored", path: t.dir });
    expect(await snapshotOf(t.dir)).toEqual(before);
  });

  it("is kept when the key comes from a key file (restore_points_refused)", async () => {
    const { PAPERCLIP_SECRETS_MASTER_KEY: _key, ...withoutKey } = TASK_ENV;
    const stack = await startStack({ env: { ...withoutKey, ...s3Env() } });
    stacks.push(stack);
    const t = await task(stack);
    await closeEvent(stack, t);
    await stack.waitForReports("task-directories", (rs) =>
      rs.some((r) => r.skipped["restore_points_refused"]),
    );
    expect(await exists(t.dir)).toBe(true);
    expect((await workspaceRow(stack, t)).status).toBe("active");
  });
});
