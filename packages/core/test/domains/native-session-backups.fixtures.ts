/** Fixtures for native session backup tests: real session directories, real rows. */
import { execFile } from "node:child_process";
import { randomBytes, randomUUID } from "node:crypto";
import { chmod, mkdir, utimes, writeFile } from "node:fs/promises";
import { promisify } from "node:util";
import path from "node:path";
import { daysAgo, startStack, writeTree, type Stack, type StackOptions } from "@reclaim/testkit";
import { sweepDomain } from "@reclaim/testkit";

export const DOMAIN = "native-session-backups";
export const SESSIONS = "runtime/paperclip-runner/durable-sessions";

export function sessionsRoot(stack: Stack): string {
  return path.join(stack.instanceRoot, SESSIONS);
}

export const sessionDir = (stack: Stack, scope: string) => path.join(sessionsRoot(stack), scope);
export const currentDir = (stack: Stack, scope: string) =>
  path.join(sessionDir(stack, scope), "failover-backups", "current");
export const copyId = (scope: string) => `${SESSIONS}/${scope}/failover-backups/current`;

/** A session scope name as the runner makes them (sha256 hex). */
export const newScope = () => randomBytes(32).toString("hex");

export interface SessionFixture {
  scope: string;
  companyId: string;
  sessionId: string;
  issueId: string;
  runId: string;
  taskSessionId: string;
}

/** A failover copy (runner state, a Codex home with a 64 KiB thread, a manifest) written `ageDays` ago. */
export async function writeCopy(stack: Stack, scope: string, ageDays: number): Promise<void> {
  const when = daysAgo(ageDays);
  await writeTree(
    currentDir(stack, scope),
    {
      "manifest.json": JSON.stringify({ completedAt: when.toISOString() }),
      "runner/runner-state.json": "{}",
      "codex-home/sessions/thread.jsonl": 64 * 1024,
    },
    when,
  );
}

export async function writeState(stack: Stack, scope: string, state: unknown): Promise<void> {
  await mkdir(sessionDir(stack, scope), { recursive: true });
  await writeFile(
    path.join(sessionDir(stack, scope), "control-plane.json"),
    typeof state === "string" ? state : JSON.stringify(state),
  );
}

export interface SessionOptions {
  companyId?: string;
  issueStatus?: string;
  issueClosedDaysAgo?: number;
  runStatus?: string;
  runFinishedDaysAgo?: number | null;
  copyAgeDays?: number;
}

/**
 * A session of a closed issue, by default expirable: the issue was done 10 days ago, its one
 * run finished 9 days ago, the copy was written 9 days ago, an agent task session points at it.
 */
export async function closedSession(stack: Stack, options: SessionOptions = {}): Promise<SessionFixture> {
  const companyId = options.companyId ?? randomUUID();
  const scope = newScope();
  const sessionId = `codex-${randomUUID()}`;
  const status = options.issueStatus ?? "done";
  const closed = daysAgo(options.issueClosedDaysAgo ?? 10);
  const issue = await stack.db.issue.create({
    data: {
      companyId,
      status,
      completedAt: status === "done" ? closed : null,
      cancelledAt: status === "cancelled" ? closed : null,
      updatedAt: closed,
    },
  });
  const finished = options.runFinishedDaysAgo === undefined ? 9 : options.runFinishedDaysAgo;
  const run = await stack.db.heartbeatRun.create({
    data: {
      companyId,
      status: options.runStatus ?? "succeeded",
      finishedAt: finished === null ? null : daysAgo(finished),
      sessionIdAfter: sessionId,
      contextSnapshot: { issueId: issue.id },
    },
  });
  const task = await stack.db.agentTaskSession.create({
    data: { companyId, taskKey: `issue:${issue.id}`, sessionParams: { sessionId }, lastRunId: run.id },
  });
  await writeState(stack, scope, { companyId, sessionId });
  await writeCopy(stack, scope, options.copyAgeDays ?? 9);
  return { scope, companyId, sessionId, issueId: issue.id, runId: run.id, taskSessionId: task.id };
}

/** The Paperclip server's report of its live native sessions. */
export async function reportLive(
  stack: Stack,
  sessions: { id: string; state?: string; cleanupPending?: boolean }[] = [],
  reportedAt = new Date(),
): Promise<void> {
  const response = await stack.api("POST", "/v1/events", {
    events: [{ type: "native_sessions.live", sessions, reportedAt: reportedAt.toISOString() }],
  });
  expect(response.status).toBe(202);
}

export function sweep(stack: Stack, companyId: string | null, body: Record<string, unknown> = {}) {
  return sweepDomain(stack, DOMAIN, companyId, body);
}

export type Report = Awaited<ReturnType<typeof sweep>>;

/** The final outcome of an entry ("removed", "candidate" or the skip reason). */
export function outcomeOf(report: Report, id: string): string | undefined {
  const entry = report.entries.filter((e) => e.id === id).at(-1);
  return entry?.outcome === "skipped" || entry?.outcome === "noted" ? entry.reason : entry?.outcome;
}

/** Evidence entries: a continuity-break archive and a quarantine entry, written `ageDays` ago. */
export async function writeArchive(
  stack: Stack,
  scope: string,
  ageDays: number,
  epoch = daysAgo(ageDays).getTime(),
) {
  const name = `${epoch}-${randomUUID()}`;
  const dir = path.join(sessionDir(stack, scope), "continuity-breaks", name);
  await writeTree(dir, { "codex-home/thread.jsonl": 16 * 1024 }, daysAgo(ageDays));
  return { name, dir, id: `${SESSIONS}/${scope}/continuity-breaks/${name}` };
}

export async function writeQuarantine(stack: Stack, scope: string, ageDays: number, name?: string) {
  const entry = name ?? `${scope}.authority_lost.${daysAgo(ageDays).getTime()}.4242.${randomUUID()}`;
  const dir = path.join(sessionsRoot(stack), "quarantine", entry);
  await writeTree(dir, { "runner-state.json": 8 * 1024 }, daysAgo(ageDays));
  return { name: entry, dir, id: `${SESSIONS}/quarantine/${entry}` };
}

export async function touch(target: string, at: Date): Promise<void> {
  await utimes(target, at, at);
}

/** Runs `fn` on an instance of its own (with a fresh liveness report), then stops it. */
export async function withStack(options: StackOptions, fn: (stack: Stack) => Promise<void>): Promise<void> {
  const own = await startStack(options);
  try {
    await reportLive(own);
    await fn(own);
  } finally {
    await own.stop();
  }
}

/** A stack with `variable` set to `value` does not start, and says which variable is wrong. */
export async function expectRefused(variable: string, value: string): Promise<void> {
  await expect(startStack({ env: { [variable]: value } })).rejects.toThrow(variable);
}

/**
 * Makes `file` impossible to delete (or allows it again), so the removal of the tree it is
 * in fails as it would on a read-only or busy filesystem: the immutable attribute as root
 * (root ignores permissions), a read-only parent directory otherwise.
 */
export async function setDeletable(file: string, deletable: boolean): Promise<void> {
  if (process.getuid?.() === 0) await promisify(execFile)("chattr", [deletable ? "-i" : "+i", file]);
  else await chmod(path.dirname(file), deletable ? 0o755 : 0o555);
}
