/**
 * Native session backups and runner evidence: below the configured top folder
 * (`<instance>/runtime/paperclip-runner/durable-sessions`) nothing is followed, read through or
 * written through. Every level (a session scope, `failover-backups`, `current`, a `.retiring-*`
 * or `.expired-*` leftover, `continuity-breaks`, an archive, `quarantine`, a quarantine entry)
 * is planted as a symlink to a directory outside the instance holding entries shaped like the
 * real ones, with rows that would make them expire: the sweeps leave it exactly as it was
 * (listing, times, contents; atimes show nothing read) and the report names the link `symlink`.
 */
import { randomUUID } from "node:crypto";
import fs, { renameSync, symlinkSync } from "node:fs";
import { rm } from "node:fs/promises";
import path from "node:path";
import { sessionsTop, surveySession } from "@reclaim/core/src/domains/native-session-backups/survey";
import { daysAgo, outsideDir, outsideDirs, startStack, type Stack } from "@reclaim/testkit";
import {
  closedSession,
  currentDir,
  newScope,
  reportLive,
  SESSIONS,
  sessionDir,
  sessionsRoot,
  sweep,
  writeArchive,
  type Report,
  type SessionFixture,
} from "./native-session-backups.fixtures";

let stack: Stack;
beforeAll(async () => {
  stack = await startStack();
  await reportLive(stack);
});
afterAll(async () => {
  await stack?.stop();
  await targets.removeAll();
});

const OLD = daysAgo(30);
const targets = outsideDirs(OLD);
const plant = targets.plant;
const COPY = {
  "manifest.json": JSON.stringify({ completedAt: OLD.toISOString() }),
  "runner/runner-state.json": "{}",
  "codex-home/sessions/thread.jsonl": 16 * 1024,
};
const under = (prefix: string, files: Record<string, string | number>) =>
  Object.fromEntries(Object.entries(files).map(([name, content]) => [`${prefix}/${name}`, content]));
const archiveName = () => `${OLD.getTime()}-${randomUUID()}`;
const quarantineName = (scope: string) => `${scope}.authority_lost.${OLD.getTime()}.4242.${randomUUID()}`;

const reasonsOf = (report: Report, id: string) =>
  report.entries.filter((e) => e.id === id).map((e) => e.reason ?? e.outcome);

/** Two instance sweeps (the evidence walk runs in both) and a company's diagnosis. */
async function sweeps(session: SessionFixture): Promise<Report[]> {
  const reports = [await sweep(stack, null), await sweep(stack, null), await sweep(stack, session.companyId)];
  for (const report of reports) expect(report.error).toBeNull();
  return reports.slice(0, 2);
}

describe("nothing below durable-sessions/ is followed through a symlink", () => {
  it("a session scope that is a symlink: its target's state, copies and archives are not read or touched", async () => {
    const s = await closedSession(stack);
    const outside = await plant(sessionDir(stack, s.scope), {
      "control-plane.json": JSON.stringify({ companyId: s.companyId, sessionId: s.sessionId }),
      ...under("failover-backups/current", COPY),
      ...under(`failover-backups/.retiring-${randomUUID()}`, COPY),
      ...under(`failover-backups/.expired-${randomUUID()}`, COPY),
      [`continuity-breaks/${archiveName()}/thread.jsonl`]: 4096,
    });
    const reports = await sweeps(s);
    expect(await outside.changes()).toEqual([]);
    for (const report of reports) expect(reasonsOf(report, `${SESSIONS}/${s.scope}`)).toEqual(["symlink"]);
  });

  it("failover-backups that is a symlink: the copies in its target stay", async () => {
    const s = await closedSession(stack);
    const outside = await plant(path.join(sessionDir(stack, s.scope), "failover-backups"), {
      ...under("current", COPY),
      ...under(`.retiring-${randomUUID()}`, COPY),
      ...under(`.expired-${randomUUID()}`, COPY),
    });
    const reports = await sweeps(s);
    expect(await outside.changes()).toEqual([]);
    for (const report of reports)
      expect(reasonsOf(report, `${SESSIONS}/${s.scope}/failover-backups`)).toEqual(["symlink"]);
  });

  it("a current copy, a .retiring-* and an .expired-* that are symlinks stay, and so does what they point at", async () => {
    const s = await closedSession(stack);
    const current = await plant(currentDir(stack, s.scope), COPY);
    const expired = `.expired-${randomUUID()}`;
    const leftover = await plant(path.join(sessionDir(stack, s.scope), "failover-backups", expired), COPY);
    const other = await closedSession(stack);
    await rm(currentDir(stack, other.scope), { recursive: true });
    const unconfirmed = `.retiring-${randomUUID()}`;
    const retiringCopy = await plant(
      path.join(sessionDir(stack, other.scope), "failover-backups", unconfirmed),
      COPY,
    );
    const reports = await sweeps(s);
    for (const outside of [current, leftover, retiringCopy]) expect(await outside.changes()).toEqual([]);
    for (const report of reports) {
      expect(reasonsOf(report, `${SESSIONS}/${s.scope}/failover-backups/current`)).toEqual(["symlink"]);
      expect(reasonsOf(report, `${SESSIONS}/${s.scope}/failover-backups/${expired}`)).toEqual(["symlink"]);
      expect(reasonsOf(report, `${SESSIONS}/${other.scope}/failover-backups/${unconfirmed}`)).toEqual([
        "symlink",
      ]);
    }
  });

  it("continuity-breaks that is a symlink: the archives in its target stay", async () => {
    const s = await closedSession(stack);
    const outside = await plant(path.join(sessionDir(stack, s.scope), "continuity-breaks"), {
      [`${archiveName()}/thread.jsonl`]: 4096,
      [`.expired-${randomUUID()}/thread.jsonl`]: 4096,
    });
    const reports = await sweeps(s);
    expect(await outside.changes()).toEqual([]);
    for (const report of reports)
      expect(reasonsOf(report, `${SESSIONS}/${s.scope}/continuity-breaks`)).toEqual(["symlink"]);
  });

  it("an archive and an archive leftover that are symlinks stay, and so does what they point at", async () => {
    const s = await closedSession(stack);
    await writeArchive(stack, s.scope, 30);
    const archives = path.join(sessionDir(stack, s.scope), "continuity-breaks");
    const [archive, expired] = [archiveName(), `.expired-${randomUUID()}`];
    const targets = [
      await plant(path.join(archives, archive), { "thread.jsonl": 4096 }),
      await plant(path.join(archives, expired), { "thread.jsonl": 4096 }),
    ];
    const reports = await sweeps(s);
    for (const outside of targets) expect(await outside.changes()).toEqual([]);
    for (const report of reports) {
      expect(reasonsOf(report, `${SESSIONS}/${s.scope}/continuity-breaks/${archive}`)).toEqual(["symlink"]);
      expect(reasonsOf(report, `${SESSIONS}/${s.scope}/continuity-breaks/${expired}`)).toEqual(["symlink"]);
    }
  });

  it("quarantine that is a symlink, and entries of a real quarantine that are: their targets stay", async () => {
    // The folder itself: a separate instance, so the real quarantine of the next case is not in the way.
    const own = await startStack();
    try {
      await reportLive(own);
      const scope = newScope();
      const outside = await plant(path.join(sessionsRoot(own), "quarantine"), {
        [`${quarantineName(scope)}/runner-state.json`]: 4096,
        [`.expired-${randomUUID()}/runner-state.json`]: 4096,
      });
      const reports = [await sweep(own, null), await sweep(own, null)];
      expect(await outside.changes()).toEqual([]);
      for (const report of reports) expect(reasonsOf(report, `${SESSIONS}/quarantine`)).toEqual(["symlink"]);
    } finally {
      await own.stop();
    }

    const s = await closedSession(stack);
    const quarantine = path.join(sessionsRoot(stack), "quarantine");
    const [entry, expired] = [quarantineName(s.scope), `.expired-${randomUUID()}`];
    const targets = [
      await plant(path.join(quarantine, entry), { "runner-state.json": 4096 }),
      await plant(path.join(quarantine, expired), { "runner-state.json": 4096 }),
    ];
    const reports = await sweeps(s);
    for (const outside of targets) expect(await outside.changes()).toEqual([]);
    for (const report of reports) {
      expect(reasonsOf(report, `${SESSIONS}/quarantine/${entry}`)).toEqual(["symlink"]);
      expect(reasonsOf(report, `${SESSIONS}/quarantine/${expired}`)).toEqual(["symlink"]);
    }
  });
});

describe("a level swapped for a link while its session is surveyed (one confirm after the reads)", () => {
  afterEach(() => jest.restoreAllMocks());

  it.each([
    ["the session directory", ""],
    ["failover-backups", "failover-backups"],
  ])(
    "%s, right after it was listed: the session is refused at it and nothing read through the link is used; sweeps leave the target as it was",
    async (_, level) => {
      const s = await closedSession(stack);
      const at = path.join(sessionDir(stack, s.scope), level);
      const copy = under("failover-backups/current", COPY);
      const outside = await outsideDir(
        level === ""
          ? {
              "control-plane.json": JSON.stringify({ companyId: s.companyId, sessionId: s.sessionId }),
              ...copy,
            }
          : under("current", COPY),
        OLD,
      );
      try {
        const readdirOf = fs.readdirSync;
        jest.spyOn(fs, "readdirSync").mockImplementation(((...args: Parameters<typeof readdirOf>) => {
          const listed = readdirOf(...args);
          // The level was proven and settled; it is swapped right after its listing.
          if (args[0] === at) {
            renameSync(at, `${at}-moved`);
            symlinkSync(outside.path, at);
          }
          return listed;
        }) as typeof readdirOf);
        const survey = await surveySession((await sessionsTop(stack.instanceRoot))!, s.scope);
        jest.restoreAllMocks();
        expect([survey.refused?.reason, survey.refused?.at]).toEqual(["symlink", at]);
        expect([survey.current, survey.state, survey.backups]).toEqual([null, { status: "missing" }, null]);
        const reports = await sweeps(s);
        const id = path.relative(stack.instanceRoot, at);
        for (const report of reports) expect(reasonsOf(report, id)).toEqual(["symlink"]);
        // The survey read through the link before its confirm refused it; nothing was written.
        expect((await outside.changes()).filter((change) => !change.endsWith(": read"))).toEqual([]);
      } finally {
        await outside.remove();
      }
    },
  );
});
