/** The recipe and the removal plan an expiration records in the archive transaction (recipe.ts). */
import { randomUUID } from "node:crypto";
import path from "node:path";
import type { Identity } from "../../fs";
import type { Judged } from "./checkouts";
import type { GitWorkspace } from "./queries";
import { RECIPE_VERSION, type CheckoutRecipe, type Recipe, type Removal } from "./recipe";
import type { Trigger } from "./rules";
import type { SavedPoint } from "./save";
import type { CheckoutSurvey } from "./survey";

function checkoutRecipe(j: Judged, saved: Map<Judged, SavedPoint>): CheckoutRecipe {
  return {
    path: j.survey.path,
    kind: j.survey.kind,
    clone: j.survey.clone,
    repoUrl: j.remoteUrl,
    headRef: j.capture.preview.head.ref,
    head: j.capture.preview.head.oid,
    restorePointId: saved.get(j)?.restorePointId ?? null,
    upstream: j.upstream,
  };
}

export function buildRecipe(input: {
  ws: GitWorkspace;
  survey: { checkout: CheckoutSurvey };
  judged: Judged[];
  saved: Map<Judged, SavedPoint>;
  trigger: Trigger;
  generation: number;
  at: Date;
  mode: "strict" | "restore_point";
}): Recipe {
  const main = input.judged.find((j) => j.name === null)!;
  return {
    recipe: RECIPE_VERSION,
    expiredAt: input.at.toISOString(),
    mode: input.mode,
    trigger: input.trigger,
    generation: input.generation,
    worktree: {
      ...checkoutRecipe(main, input.saved),
      baseRef: input.ws.base_ref,
      branchName: input.ws.branch_name,
    },
    contents: input.judged
      .filter((j) => j.name !== null)
      .map((j) => ({ ...checkoutRecipe(j, input.saved), checkoutName: j.name! })),
  };
}

/**
 * Where the checkout goes aside (a recorded `.expired-<UUID>` beside it), which worktree
 * registrations and nested branches go with it, and the lock files the expiration holds.
 */
export function buildRemoval(input: {
  survey: { checkout: CheckoutSurvey; identity: Identity; allocatedBytes: number };
  judged: Judged[];
  /** Every lock file the expiration holds (a crash leaves them for the next attempt to break). */
  lockFiles: string[];
  lifecycleGeneration: number;
}): Removal {
  const main = input.survey.checkout;
  const registrations: Removal["registrations"] = [];
  const branches: Removal["branches"] = [];
  for (const j of input.judged) {
    const s = j.survey;
    if (s.kind !== "worktree") continue;
    registrations.push({ adminDir: s.repo.gitDir, gitdir: path.join(s.path, ".git") });
    // A nested worktree's own branch is deleted with it; the main worktree's branch stays in
    // its clone (the reopen checks it out again).
    if (j.name !== null && s.headRef !== null) {
      branches.push({ clone: s.clone, ref: s.headRef, oid: j.capture.preview.head.oid });
    }
  }
  return {
    state: "pending",
    lifecycleGeneration: input.lifecycleGeneration,
    path: main.path,
    identity: input.survey.identity,
    aside: path.join(path.dirname(main.path), `.expired-${randomUUID()}`),
    registrations,
    branches,
    lockFiles: input.lockFiles,
    allocatedBytes: input.survey.allocatedBytes,
  };
}
