/**
 * Skill version caches, the spec's first paragraph: a version's cache is evicted only when
 * the version can be rebuilt — a durable package in the configured storage that is there
 * now, or a git package's saved recipe; authored or legacy packages without a recipe need
 * independent external durability, and storage that cannot be reached keeps the cache.
 * Real caches, real rows, real local_disk storage (and an S3 endpoint nobody serves).
 */
import { randomUUID } from "node:crypto";
import { existsSync } from "node:fs";
import { Readable } from "node:stream";
import { StorageKey } from "@reclaim/shared";
import { readConfig } from "../../src/domains/skill-version-caches/config";
import { storageFor } from "../../src/storage";
import { startStack, type Stack } from "@reclaim/testkit";
import {
  cachedSkill,
  makeVersion,
  observedSince,
  outcomeOf,
  sweep,
  versionDir,
  type SkillFixture,
} from "./skill-version-caches.fixtures";

type Package =
  | { kind: "storage"; storageKey: string; byteSize: bigint }
  | { kind: "git_recipe"; recipe: unknown }
  | { kind: "authored" | "legacy"; externallyDurable: boolean }
  | null;

/** A skill with an old version (not current, long unused) whose package is `pkg`. */
async function oldVersion(stack: Stack, pkg: Package): Promise<SkillFixture & { old: string }> {
  const c = randomUUID();
  await observedSince(stack, c);
  const skill = await cachedSkill(stack, c, 2);
  const old = skill.versions[0]!;
  await stack.db.companySkillVersionPackage.deleteMany({ where: { companySkillVersionId: old } });
  if (pkg !== null)
    await stack.db.companySkillVersionPackage.create({
      data: { companyId: c, companySkillVersionId: old, ...pkg } as never,
    });
  return { ...skill, old };
}

async function putPackage(stack: Stack, companyId: string, key: string, bytes: number): Promise<void> {
  const storage = storageFor(readConfig(stack.env).storage);
  await storage.put(StorageKey.of(companyId, key), Readable.from([Buffer.alloc(bytes, 7)]), bytes);
}

describe("with local_disk storage", () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack();
  });
  afterAll(async () => stack?.stop());

  it("a version whose durable package is in the configured storage now, with its recorded size, is evicted", async () => {
    const s = await oldVersion(stack, {
      kind: "storage",
      storageKey: "skill-packages/p1.tar",
      byteSize: 1000n,
    });
    await putPackage(stack, s.companyId, "skill-packages/p1.tar", 1000);
    expect(outcomeOf(await sweep(stack, s.companyId), s.companyId, s.skillId, s.old)).toBe("removed");
    expect(existsSync(versionDir(stack, s.companyId, s.skillId, s.old))).toBe(false);
  });

  it("is kept when its package object is missing from storage, or has another size", async () => {
    const missing = await oldVersion(stack, {
      kind: "storage",
      storageKey: "skill-packages/gone.tar",
      byteSize: 10n,
    });
    const resized = await oldVersion(stack, {
      kind: "storage",
      storageKey: "skill-packages/p2.tar",
      byteSize: 10n,
    });
    await putPackage(stack, resized.companyId, "skill-packages/p2.tar", 11);
    const a = await sweep(stack, missing.companyId);
    const b = await sweep(stack, resized.companyId);
    expect(outcomeOf(a, missing.companyId, missing.skillId, missing.old)).toBe("package_missing");
    expect(outcomeOf(b, resized.companyId, resized.skillId, resized.old)).toBe("package_size_mismatch");
    expect(existsSync(versionDir(stack, missing.companyId, missing.skillId, missing.old))).toBe(true);
    expect(existsSync(versionDir(stack, resized.companyId, resized.skillId, resized.old))).toBe(true);
  });

  it("a git package is evicted with a saved recipe (repository and exact commit), kept with an incomplete one", async () => {
    const full = await oldVersion(stack, {
      kind: "git_recipe",
      recipe: { repository: "https://example.test/s.git", commit: "b".repeat(40) },
    });
    const partial = await oldVersion(stack, {
      kind: "git_recipe",
      recipe: { repository: "https://example.test/s.git", commit: "main" },
    });
    expect(outcomeOf(await sweep(stack, full.companyId), full.companyId, full.skillId, full.old)).toBe(
      "removed",
    );
    expect(
      outcomeOf(await sweep(stack, partial.companyId), partial.companyId, partial.skillId, partial.old),
    ).toBe("recipe_incomplete");
  });

  it.each(["authored", "legacy"] as const)(
    "an %s package without a recipe is kept unless it is independently durable elsewhere",
    async (kind) => {
      const bare = await oldVersion(stack, { kind, externallyDurable: false });
      const durable = await oldVersion(stack, { kind, externallyDurable: true });
      expect(outcomeOf(await sweep(stack, bare.companyId), bare.companyId, bare.skillId, bare.old)).toBe(
        "not_externally_durable",
      );
      expect(
        outcomeOf(await sweep(stack, durable.companyId), durable.companyId, durable.skillId, durable.old),
      ).toBe("removed");
    },
  );

  it("a version with no record of how to rebuild it is kept", async () => {
    const s = await oldVersion(stack, null);
    expect(outcomeOf(await sweep(stack, s.companyId), s.companyId, s.skillId, s.old)).toBe(
      "rebuild_source_unknown",
    );
    expect(existsSync(versionDir(stack, s.companyId, s.skillId, s.old))).toBe(true);
  });

  it("a cache whose version row is gone is still evicted (nothing can resolve it again)", async () => {
    const c = randomUUID();
    await observedSince(stack, c);
    const skill = randomUUID();
    const version = randomUUID();
    await makeVersion(stack, c, skill, version);
    expect(outcomeOf(await sweep(stack, c), c, skill, version)).toBe("removed");
  });
});

describe("with storage that cannot be reached", () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack({
      env: {
        PAPERCLIP_STORAGE_PROVIDER: "s3",
        // Nothing listens on the discard port: every request is refused.
        PAPERCLIP_STORAGE_S3_ENDPOINT: "http://127.0.0.1:9",
        PAPERCLIP_STORAGE_S3_FORCE_PATH_STYLE: "true",
        AWS_ACCESS_KEY_ID: "test",
        AWS_SECRET_ACCESS_KEY: "test-secret",
      },
    });
  });
  afterAll(async () => stack?.stop());

  it("a storage package keeps its cache (storage_unavailable) and is looked at again in 15 minutes; a git recipe needs no storage", async () => {
    const stored = await oldVersion(stack, {
      kind: "storage",
      storageKey: "skill-packages/p.tar",
      byteSize: 5n,
    });
    const report = await sweep(stack, stored.companyId);
    expect(outcomeOf(report, stored.companyId, stored.skillId, stored.old)).toBe("storage_unavailable");
    expect(existsSync(versionDir(stack, stored.companyId, stored.skillId, stored.old))).toBe(true);
    const retry = await stack.db.reclaimDeadline.findFirst({
      where: { domain: "skill-version-caches", companyId: stored.companyId, reason: "retry" },
    });
    expect(retry).not.toBeNull();

    const recipe = await oldVersion(stack, {
      kind: "git_recipe",
      recipe: { repository: "https://example.test/s.git", commit: "c".repeat(40) },
    });
    expect(
      outcomeOf(await sweep(stack, recipe.companyId), recipe.companyId, recipe.skillId, recipe.old),
    ).toBe("removed");
  });
});
