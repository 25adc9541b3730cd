/**
 * What an expired git workspace's row records, in its metadata, for the reopen:
 *
 *   gitCacheRestoration         the versioned recipe `paperclip.git-cache-restoration.v2`:
 *                               the checkout (where, which clone, which branch and commit,
 *                               the repository URL) and its restore point, and the same for
 *                               each nested `.paperclip-repositories` checkout ("contents").
 *                               A reader refuses any other recipe version: an older server
 *                               never restores without the saved work.
 *   gitCacheExpirationRemoval   the removal still to finish (removal.ts): cleared once the
 *                               checkout is gone and its registrations are removed.
 *
 * A checkout without a restore point was reproducible from its remote when it expired: the
 * reopen re-adds it at the recorded commit.
 */
import { z } from "zod";

export const RECIPE_VERSION = "paperclip.git-cache-restoration.v2";
export const RECIPE_KEY = "gitCacheRestoration";
export const REMOVAL_KEY = "gitCacheExpirationRemoval";

const oid = z.string().regex(/^[0-9a-f]{40}([0-9a-f]{24})?$/);
const absolute = z
  .string()
  .min(1)
  .refine((p) => p.startsWith("/"), "must be an absolute path");

const checkout = z.object({
  /** The checkout's top level. */
  path: absolute,
  kind: z.enum(["worktree", "clone"]),
  /** The clone a worktree belongs to (its top level); the checkout itself for a clone. */
  clone: absolute,
  repoUrl: z.string().min(1),
  /** `refs/heads/...`, or null for a detached HEAD. */
  headRef: z.string().nullable(),
  head: oid,
  /** Null: the remote reproduced it exactly. */
  restorePointId: z.uuid().nullable(),
  /**
   * The branch's upstream when it expired (`refs/remotes/origin/<branch>`): the reopen sets it
   * again from here, not from the branch name (spec, "Nested project repository worktrees").
   */
  upstream: z.string().nullable().default(null),
});

export const recipeSchema = z.object({
  recipe: z.literal(RECIPE_VERSION),
  expiredAt: z.string(),
  mode: z.enum(["strict", "restore_point"]),
  trigger: z.enum(["terminal", "idle"]),
  generation: z.number().int().nonnegative(),
  worktree: checkout.extend({ baseRef: z.string().nullable(), branchName: z.string().nullable() }),
  contents: z.array(checkout.extend({ checkoutName: z.string().min(1) })),
});

export type CheckoutRecipe = z.infer<typeof checkout>;
export type NestedRecipe = CheckoutRecipe & { checkoutName: string };
export type Recipe = z.infer<typeof recipeSchema>;

const identity = z.object({ dev: z.number(), ino: z.number() });

export const removalSchema = z.object({
  state: z.enum(["pending", "renamed"]),
  /** The workspace's lifecycle generation when it was archived: a reopen raises it. */
  lifecycleGeneration: z.number().int().nonnegative(),
  path: absolute,
  identity,
  /** Where the checkout is renamed before it is deleted (a recorded `.expired-<UUID>` beside it). */
  aside: absolute,
  /** Worktree registrations to remove: `<clone>/.git/worktrees/<name>`, naming `<gitdir>`. */
  registrations: z.array(z.object({ adminDir: absolute, gitdir: absolute })),
  /** Nested worktrees' own branches, deleted only at the recorded commit. */
  branches: z.array(z.object({ clone: absolute, ref: z.string(), oid })),
  /** Reclaim's git lock files outside the checkout (ref locks in shared clones). */
  lockFiles: z.array(absolute),
  allocatedBytes: z.number().nonnegative(),
});

export type Removal = z.infer<typeof removalSchema>;

export type Parsed<T> =
  { state: "absent" } | { state: "invalid"; detail: string } | { state: "ok"; value: T };

function parse<T>(schema: z.ZodType<T>, value: unknown, what: string): Parsed<T> {
  if (value === undefined || value === null) return { state: "absent" };
  if (
    what === RECIPE_KEY &&
    typeof value === "object" &&
    (value as { recipe?: unknown }).recipe !== RECIPE_VERSION
  ) {
    return {
      state: "invalid",
      detail: `recipe ${JSON.stringify((value as { recipe?: unknown }).recipe)} is not ${RECIPE_VERSION}`,
    };
  }
  const result = schema.safeParse(value);
  return result.success
    ? { state: "ok", value: result.data }
    : { state: "invalid", detail: result.error.message };
}

export const readRecipe = (metadata: Record<string, unknown>): Parsed<Recipe> =>
  parse(recipeSchema, metadata[RECIPE_KEY], RECIPE_KEY);

export const readRemoval = (metadata: Record<string, unknown>): Parsed<Removal> =>
  parse(removalSchema, metadata[REMOVAL_KEY], REMOVAL_KEY);
