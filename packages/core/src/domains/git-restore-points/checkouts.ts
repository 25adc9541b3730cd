/**
 * The checkouts of one workspace under the expiration locks: the main checkout and each
 * nested `.paperclip-repositories` checkout get git's lock files, are captured and judged
 * (inspect.ts), and, after their restore points were saved, verified: each must still match
 * its capture exactly (a saved one against its manifest; a reproducible one must still be
 * reproducible at the same commit), or expiration rolls back.
 */
import {
  captureWorktree,
  takeGitLocks,
  verifyUnchanged,
  type Capture,
  type HeldGitLocks,
  type RestoreManifest,
} from "@reclaim/shared";
import { scratchDir } from "../../process";
import { inspectCheckout, isReproducible, scopeOf, type Inspection } from "./inspect";
import type { SavedPoint } from "./save";
import type { CheckoutSurvey, NestedSurvey } from "./survey";

export interface Judged {
  survey: CheckoutSurvey;
  /** The nested checkout's name, or null for the main checkout. */
  name: string | null;
  remoteUrl: string;
  /** The capture: sealed when it is unreproducible in restore-point mode, else disposed. */
  capture: Capture;
  reproducible: boolean;
  /** The manifest it was last restored from, passed to every capture of it (manifests.ts). */
  restoredFrom?: RestoreManifest;
  /** The branch's upstream (`refs/remotes/origin/<branch>`), recorded for the reopen; null when none. */
  upstream: string | null;
}

export type Judgement =
  | { state: "judged"; checkouts: Judged[] }
  | { state: "blocked"; reason: string; checkout: string | null; paths: string[]; detail: string };

/** Takes the lock files of every checkout; on a busy one releases what it took and rethrows. */
export async function lockCheckouts(surveys: CheckoutSurvey[]): Promise<HeldGitLocks[]> {
  const held: HeldGitLocks[] = [];
  try {
    for (const s of surveys) held.push(await takeGitLocks(s.repo, { headRef: s.headRef }));
  } catch (error) {
    await releaseAll(held);
    throw error;
  }
  return held;
}

export async function releaseAll(held: HeldGitLocks[]): Promise<void> {
  for (const h of held.splice(0).reverse()) await h.release().catch(() => undefined);
}

export async function disposeAll(judged: Judged[]): Promise<void> {
  for (const j of judged) await j.capture.dispose().catch(() => undefined);
}

/**
 * Captures and judges every checkout. A nested checkout whose origin is none of the
 * project's repository URLs is never read against its remote (`unknown_nested_checkout`).
 */
export async function judgeCheckouts(
  main: { survey: CheckoutSurvey; remoteUrl: string },
  nested: NestedSurvey[],
  nestedUrls: string[],
  options: {
    tmpDir?: string;
    signal?: AbortSignal;
    /** Nested checkout name -> the manifest it was last restored from. */
    restoredFrom?: Map<string, RestoreManifest>;
  },
): Promise<Judgement> {
  const judged: Judged[] = [];
  const verdict = async (
    survey: CheckoutSurvey,
    name: string | null,
    remoteUrl: string,
  ): Promise<Judgement | null> => {
    const restoredFrom = name === null ? undefined : options.restoredFrom?.get(name);
    const inspection: Inspection = await inspectCheckout(survey, {
      remoteUrl,
      nested: name !== null,
      restoredFrom,
      tmpDir: options.tmpDir,
      signal: options.signal,
    });
    if (inspection.verdict === "blocked") {
      return {
        state: "blocked",
        reason: inspection.reason,
        checkout: name,
        paths: inspection.paths,
        detail: inspection.detail,
      };
    }
    judged.push({
      survey,
      name,
      remoteUrl,
      capture: inspection.capture,
      reproducible: inspection.verdict === "reproducible",
      restoredFrom,
      upstream: await upstreamOf(survey),
    });
    return null;
  };
  const walk = async (): Promise<Judgement | null> => {
    const blocked = await verdict(main.survey, null, main.remoteUrl);
    if (blocked) return blocked;
    for (const n of nested) {
      const origin = await originOf(n);
      if (origin === null || !nestedUrls.includes(origin)) {
        return {
          state: "blocked",
          reason: "unknown_nested_checkout",
          checkout: n.name,
          paths: [n.path],
          detail: `origin ${origin ?? "(none)"} is not one of the project's repositories`,
        };
      }
      const nestedBlocked = await verdict(n, n.name, origin);
      if (nestedBlocked) return nestedBlocked;
    }
    return null;
  };
  let blocked: Judgement | null;
  try {
    blocked = await walk();
  } catch (error) {
    await disposeAll(judged);
    throw error;
  }
  if (blocked) {
    await disposeAll(judged);
    return blocked;
  }
  return { state: "judged", checkouts: judged };
}

/** The checked-out branch's upstream as a full ref name (`refs/remotes/origin/main`), or null. */
async function upstreamOf(survey: CheckoutSurvey): Promise<string | null> {
  if (survey.headRef === null) return null;
  const r = await survey.repo.git(["for-each-ref", "--format=%(upstream)", survey.headRef], { okCodes: [0] });
  const ref = r.stdout.toString().trim();
  return ref.startsWith("refs/remotes/") ? ref : null;
}

async function originOf(survey: CheckoutSurvey): Promise<string | null> {
  const r = await survey.repo.git(["config", "--get", "remote.origin.url"], { okCodes: [0, 1] });
  const url = r.stdout.toString().trim();
  return r.code === 0 && url !== "" ? url : null;
}

/**
 * Each checkout still matches its capture (under the locks, after the restore points were
 * saved). Returns null, or the first difference found.
 */
export async function verifyCheckouts(
  judged: Judged[],
  saved: Map<Judged, SavedPoint>,
  signal?: AbortSignal,
  /** Where each checkout is now (its tree renamed aside); default: its own path. */
  at: (checkoutPath: string) => string = (p) => p,
): Promise<string | null> {
  for (const j of judged) {
    const label = j.name === null ? "worktree" : `nested checkout ${j.name}`;
    const point = saved.get(j);
    if (point) {
      const result = await verifyUnchanged(at(j.survey.path), point.manifest, { signal });
      if (!result.unchanged) return `${label}: ${result.differences.map((d) => d.detail).join("; ")}`;
      continue;
    }
    // Reproducible when captured: it must still be, at the same commit and branches.
    let again: Capture;
    try {
      again = await captureWorktree(at(j.survey.path), {
        base: { kind: "remote", url: j.remoteUrl },
        tmpDir: await scratchDir(),
        scope: scopeOf(j.survey),
        nested: j.name !== null,
        restoredFrom: j.restoredFrom,
        signal,
      });
    } catch (error) {
      return `${label}: ${(error as Error).message}`;
    }
    try {
      const before = j.capture.preview;
      const now = again.preview;
      if (!isReproducible(now)) return `${label}: no longer reproducible from its remote`;
      if (JSON.stringify([now.head, now.refs]) !== JSON.stringify([before.head, before.refs])) {
        return `${label}: HEAD or branches moved`;
      }
    } finally {
      await again.dispose();
    }
  }
  return null;
}
