/**
 * The restore-point ledger API the Paperclip server uses: register, activate (Reclaim reads
 * the sealed object back and checks it), supersede, request deletion, read one, list by
 * workspace. Real scheduler, real PostgreSQL, real local_disk storage, real sealing.
 */
import { randomUUID } from "node:crypto";
import {
  createLocalDiskProvider,
  StorageKey,
  type SealedObject,
  type StorageProvider,
} from "@reclaim/shared";
import { startStack, type Stack } from "@reclaim/testkit";
import {
  deadlinesOf,
  insertIssue,
  insertWorkspace,
  restorePointRow,
  sealObject,
} from "@reclaim/testkit/src/fixtures/restore-points";
import path from "node:path";
import { Readable } from "node:stream";

let stack: Stack;
let storage: StorageProvider;
beforeAll(async () => {
  // No worker: the deadlines these calls request stay in the ledger for the assertions.
  stack = await startStack({ worker: false });
  storage = createLocalDiskProvider({ baseDir: path.join(stack.instanceRoot, "data", "storage") });
});
afterAll(async () => stack?.stop());

interface World {
  company: string;
  issue: string;
  workspace: string;
}

async function world(): Promise<World> {
  const company = randomUUID();
  const issue = await insertIssue(stack, { companyId: company });
  const workspace = await insertWorkspace(stack, company, issue);
  return { company, issue, workspace };
}

async function register(w: World, extra: Record<string, unknown> = {}) {
  return stack.api("POST", `/v1/companies/${w.company}/restore-points`, {
    executionWorkspaceId: w.workspace,
    sourceIssueId: w.issue,
    generation: 1,
    kind: "worktree",
    ...extra,
  });
}

/** POST .../activate with what the sealing returned, `change`d where a test lies about it. */
async function activate(
  w: World,
  id: string,
  sealed: SealedObject,
  change: Partial<Record<string, unknown>> = {},
) {
  return stack.api("POST", `/v1/companies/${w.company}/restore-points/${id}/activate`, {
    sha256: sealed.sha256,
    byteSize: sealed.byteSize,
    formatVersion: sealed.formatVersion,
    keyFingerprint: sealed.keyFingerprint,
    ...change,
  });
}

/** Registers, seals a real object into the returned key and activates it. */
async function activeRestorePoint(w: World) {
  const registered = await register(w);
  const { id, storageKey } = registered.body.restorePoint;
  const sealed = await sealObject(storage, StorageKey.parse(storageKey));
  const activated = await activate(w, id, sealed);
  expect(activated.status).toBe(200);
  return { id, storageKey, sealed };
}

describe("register", () => {
  it("creates a pending row and returns its id and a company-scoped storage key", async () => {
    const w = await world();
    const response = await register(w, { metadata: { branch: "feature" } });
    expect(response.status).toBe(201);
    const point = response.body.restorePoint;
    expect(point).toMatchObject({
      companyId: w.company,
      executionWorkspaceId: w.workspace,
      sourceIssueId: w.issue,
      status: "pending",
      storageProvider: "local_disk",
      sha256: null,
      metadata: { branch: "feature" },
    });
    expect(point.storageKey).toBe(
      `companies/${w.company}/git-restore-points/${w.workspace}/1/worktree/${point.id}`,
    );
  });

  it("schedules the end of the capture grace one hour later", async () => {
    const w = await world();
    const response = await register(w);
    const due = (await deadlinesOf(stack, w.company)).get("capture_grace");
    const expected = Date.parse(response.body.restorePoint.createdAt) + 3600_000;
    expect(due?.getTime()).toBe(expected);
  });

  it("stores a nested checkout under its checkout name, and requires the name", async () => {
    const w = await world();
    const nested = await register(w, { kind: "nested_checkout", checkoutName: "docs-site" });
    expect(nested.status).toBe(201);
    expect(nested.body.restorePoint.storageKey).toContain(`/1/nested-checkouts/docs-site/`);
    const missing = await register(w, { kind: "nested_checkout" });
    expect(missing.status).toBe(400);
    expect(missing.body.field).toBe("checkoutName");
    const unsafe = await register(w, { kind: "nested_checkout", checkoutName: "../escape" });
    expect(unsafe.status).toBe(400);
    expect(unsafe.body.field).toBe("checkoutName");
  });

  it("refuses a workspace or source issue of another company (400, field named)", async () => {
    const w = await world();
    const other = await world();
    const wrongWorkspace = await register(w, { executionWorkspaceId: other.workspace });
    expect(wrongWorkspace.status).toBe(400);
    expect(wrongWorkspace.body.field).toBe("executionWorkspaceId");
    const wrongIssue = await register(w, { sourceIssueId: other.issue });
    expect(wrongIssue.status).toBe(400);
    expect(wrongIssue.body.field).toBe("sourceIssueId");
  });

  it.each([
    [{ kind: "clone" }, "kind"],
    [{ generation: -1 }, "generation"],
    [{ sourceIssueId: "not-a-uuid" }, "sourceIssueId"],
  ])("rejects bad input %j with the field named", async (extra, field) => {
    const w = await world();
    const response = await register(w, extra);
    expect(response.status).toBe(400);
    expect(response.body).toMatchObject({ error: "RECLAIM_ERR_VALIDATION", field });
  });

  it("needs the API token", async () => {
    const w = await world();
    const response = await stack.api(
      "GET",
      `/v1/companies/${w.company}/restore-points/${randomUUID()}`,
      undefined,
      {
        token: null,
      },
    );
    expect(response.status).toBe(401);
  });
});

describe("activate", () => {
  it("reads the sealed object back, checks it, and makes the row active and due for review", async () => {
    const w = await world();
    const { id, sealed } = await activeRestorePoint(w);
    const row = await restorePointRow(stack, id);
    expect(row).toMatchObject({
      status: "active",
      sha256: sealed.sha256,
      byteSize: BigInt(sealed.byteSize),
      formatVersion: sealed.formatVersion,
      keyFingerprint: sealed.keyFingerprint,
    });
    expect(row.activatedAt).not.toBeNull();
    expect(row.deleteAfter).toEqual(row.activatedAt);
  });

  it("refuses a hash the stored object does not have (422 on sha256); the row stays pending", async () => {
    const w = await world();
    const { id, storageKey } = (await register(w)).body.restorePoint;
    const sealed = await sealObject(storage, StorageKey.parse(storageKey));
    const response = await activate(w, id, sealed, { sha256: "f".repeat(64) });
    expect(response.status).toBe(422);
    expect(response.body).toMatchObject({ error: "RECLAIM_ERR_RESTORE_POINT_UNVERIFIED", field: "sha256" });
    expect((await restorePointRow(stack, id)).status).toBe("pending");
  });

  it("refuses a wrong size (422 on byteSize) and a missing object (422 on storageKey)", async () => {
    const w = await world();
    const first = (await register(w)).body.restorePoint;
    const sealed = await sealObject(storage, StorageKey.parse(first.storageKey));
    const wrongSize = await activate(w, first.id, sealed, { byteSize: sealed.byteSize + 1 });
    expect(wrongSize.status).toBe(422);
    expect(wrongSize.body.field).toBe("byteSize");

    const second = (await register(w, { generation: 2 })).body.restorePoint;
    const missing = await activate(w, second.id, sealed);
    expect(missing.status).toBe(422);
    expect(missing.body.field).toBe("storageKey");
  });

  it("refuses a payload whose sealed key header is missing", async () => {
    const w = await world();
    const point = (await register(w)).body.restorePoint;
    const key = StorageKey.parse(point.storageKey);
    const sealed = await sealObject(storage, key);
    await storage.delete(key.withSuffix(".seal-header"));
    const response = await activate(w, point.id, sealed);
    expect(response.status).toBe(422);
    expect(response.body.field).toBe("storageKey");
  });

  it.each([
    ["keyFingerprint", { keyFingerprint: "cd".repeat(32) }],
    ["formatVersion", { formatVersion: 2 }],
  ])(
    "refuses a %s the sealed key header does not have (422 naming it); the row stays pending",
    async (field, change) => {
      const w = await world();
      const { id, storageKey } = (await register(w)).body.restorePoint;
      const sealed = await sealObject(storage, StorageKey.parse(storageKey));
      const response = await activate(w, id, sealed, change);
      expect(response.status).toBe(422);
      expect(response.body).toMatchObject({ error: "RECLAIM_ERR_RESTORE_POINT_UNVERIFIED", field });
      expect((await restorePointRow(stack, id)).status).toBe("pending");
    },
  );

  it("refuses a key header of a format version this build cannot read (422 on formatVersion), or one that is no key header (422 on storageKey)", async () => {
    const w = await world();
    const point = (await register(w)).body.restorePoint;
    const key = StorageKey.parse(point.storageKey);
    const sealed = await sealObject(storage, key);
    const headerKey = key.withSuffix(".seal-header");
    const header = Buffer.concat(await (await storage.get(headerKey)).toArray());
    header.writeUInt16BE(2, 8); // the version field that follows the magic
    await storage.put(headerKey, Readable.from([header]), header.length);
    const unknownVersion = await activate(w, point.id, sealed, { formatVersion: 2 });
    expect(unknownVersion.status).toBe(422);
    expect(unknownVersion.body.field).toBe("formatVersion");

    const garbage = Buffer.from("not a sealed key header");
    await storage.put(headerKey, Readable.from([garbage]), garbage.length);
    const notAHeader = await activate(w, point.id, sealed);
    expect(notAHeader.status).toBe(422);
    expect(notAHeader.body.field).toBe("storageKey");
    expect((await restorePointRow(stack, point.id)).status).toBe("pending");
  });

  it("takes only a whole key fingerprint (400 on keyFingerprint)", async () => {
    const w = await world();
    const { id, storageKey } = (await register(w)).body.restorePoint;
    const sealed = await sealObject(storage, StorageKey.parse(storageKey));
    const response = await activate(w, id, sealed, { keyFingerprint: sealed.keyFingerprint.slice(0, 12) });
    expect(response.status).toBe(400);
    expect(response.body).toMatchObject({ error: "RECLAIM_ERR_VALIDATION", field: "keyFingerprint" });
  });

  it("is idempotent for the same object, and 409 once the row is no longer pending", async () => {
    const w = await world();
    const { id, sealed } = await activeRestorePoint(w);
    const again = await activate(w, id, sealed);
    expect(again.status).toBe(200);
    await stack.api("POST", `/v1/companies/${w.company}/restore-points/${id}/supersede`);
    const late = await activate(w, id, sealed);
    expect(late.status).toBe(409);
    expect(late.body.error).toBe("RECLAIM_ERR_RESTORE_POINT_STATE");
  });
});

describe("supersede and request deletion", () => {
  it("supersede moves an active row to superseded and schedules its deletion now", async () => {
    const w = await world();
    const { id } = await activeRestorePoint(w);
    const before = Date.now();
    const response = await stack.api("POST", `/v1/companies/${w.company}/restore-points/${id}/supersede`);
    expect(response.status).toBe(200);
    expect(response.body.restorePoint.status).toBe("superseded");
    const due = (await deadlinesOf(stack, w.company)).get("superseded");
    expect(due!.getTime()).toBeGreaterThanOrEqual(before - 1000);
    expect(due!.getTime()).toBeLessThanOrEqual(Date.now());
  });

  it("supersede refuses a pending row (409)", async () => {
    const w = await world();
    const { id } = (await register(w)).body.restorePoint;
    const response = await stack.api("POST", `/v1/companies/${w.company}/restore-points/${id}/supersede`);
    expect(response.status).toBe(409);
  });

  it("request deletion of a pending row waits for the end of its capture grace", async () => {
    const w = await world();
    const { id, createdAt } = (await register(w)).body.restorePoint;
    const response = await stack.api(
      "POST",
      `/v1/companies/${w.company}/restore-points/${id}/request-deletion`,
    );
    expect(response.status).toBe(200);
    expect(response.body.restorePoint.status).toBe("delete_requested");
    expect(Date.parse(response.body.restorePoint.retryAt)).toBe(Date.parse(createdAt) + 3600_000);
    expect((await deadlinesOf(stack, w.company)).get("delete_requested")?.getTime()).toBe(
      Date.parse(createdAt) + 3600_000,
    );
  });

  it("request deletion refuses an expiring row (its hook runs first) and repeats harmlessly", async () => {
    const w = await world();
    const { id } = await activeRestorePoint(w);
    await stack.db.executionWorkspaceRestorePoint.update({ where: { id }, data: { status: "expiring" } });
    const refused = await stack.api(
      "POST",
      `/v1/companies/${w.company}/restore-points/${id}/request-deletion`,
    );
    expect(refused.status).toBe(409);
    await stack.db.executionWorkspaceRestorePoint.update({ where: { id }, data: { status: "active" } });
    const first = await stack.api("POST", `/v1/companies/${w.company}/restore-points/${id}/request-deletion`);
    const second = await stack.api(
      "POST",
      `/v1/companies/${w.company}/restore-points/${id}/request-deletion`,
    );
    expect([first.status, second.status]).toEqual([200, 200]);
    expect(second.body.restorePoint.status).toBe("delete_requested");
  });
});

describe("read and list", () => {
  it("a restore point of another company is a 404", async () => {
    const w = await world();
    const other = await world();
    const { id } = (await register(w)).body.restorePoint;
    for (const [method, url] of [
      ["GET", `/v1/companies/${other.company}/restore-points/${id}`],
      ["POST", `/v1/companies/${other.company}/restore-points/${id}/supersede`],
      ["POST", `/v1/companies/${other.company}/restore-points/${id}/request-deletion`],
      ["POST", `/v1/companies/${other.company}/restore-points/${id}/activate`],
    ] as const) {
      const body =
        method === "POST" && url.endsWith("activate")
          ? { sha256: "a".repeat(64), byteSize: 1, formatVersion: 1, keyFingerprint: "ab".repeat(32) }
          : undefined;
      const response = await stack.api(method, url, body);
      expect([url, response.status, response.body.error]).toEqual([
        url,
        404,
        "RECLAIM_ERR_RESTORE_POINT_NOT_FOUND",
      ]);
    }
    const own = await stack.api("GET", `/v1/companies/${w.company}/restore-points/${id}`);
    expect(own.status).toBe(200);
    expect(own.body.restorePoint.id).toBe(id);
  });

  it("lists a workspace's restore points newest first, by status, in pages", async () => {
    const w = await world();
    const ids: string[] = [];
    for (let generation = 1; generation <= 5; generation++) {
      ids.push((await register(w, { generation })).body.restorePoint.id);
    }
    await stack.api("POST", `/v1/companies/${w.company}/restore-points/${ids[0]}/request-deletion`);
    const base = `/v1/companies/${w.company}/execution-workspaces/${w.workspace}/restore-points`;
    const first = await stack.api("GET", `${base}?limit=2`);
    expect(first.status).toBe(200);
    expect(first.body.restorePoints.map((p: { id: string }) => p.id)).toEqual([ids[4], ids[3]]);
    const rest = await stack.api("GET", `${base}?limit=10&cursor=${first.body.nextCursor}`);
    expect(rest.body.restorePoints.map((p: { id: string }) => p.id)).toEqual([ids[2], ids[1], ids[0]]);
    expect(rest.body.nextCursor).toBeNull();
    const pending = await stack.api("GET", `${base}?status=pending`);
    expect(pending.body.restorePoints).toHaveLength(4);
    const bad = await stack.api("GET", `${base}?status=lost`);
    expect(bad.status).toBe(400);
    expect(bad.body.field).toBe("status.0");
    const otherCompany = await stack.api(
      "GET",
      `/v1/companies/${randomUUID()}/execution-workspaces/${w.workspace}/restore-points`,
    );
    expect(otherCompany.body.restorePoints).toEqual([]);
  });

  it("the routes appear in the OpenAPI document", async () => {
    const docs = await stack.api("GET", "/docs");
    expect(Object.keys(docs.body.paths)).toEqual(
      expect.arrayContaining([
        "/v1/companies/{companyId}/restore-points",
        "/v1/companies/{companyId}/restore-points/{id}/activate",
        "/v1/companies/{companyId}/execution-workspaces/{workspaceId}/restore-points",
      ]),
    );
  });
});
