/**
 * Whether a process a run recorded (pid, process group, start time) can still be that run's
 * own process on this host. A pid the operating system reused belongs to a process that
 * started later, so the start time tells them apart; where the start time cannot be read
 * (the group leader exited, /proc hidden), the process counts as the run's own: keep.
 */
import { readFileSync } from "node:fs";
import { errnoCode } from "@reclaim/shared";

export interface RecordedProcess {
  pid: number | null;
  processGroupId: number | null;
  startedAt: Date | null;
}

/** What the check needs of the host; the real one reads /proc and signals 0. */
export interface ProcessProbe {
  pidExists(pid: number): boolean;
  groupExists(pgid: number): boolean;
  /** `null` when it cannot be read. */
  startTime(pid: number): Date | null;
}

/** Kernel start times have 10 ms ticks and boot time whole seconds; reuse is far apart. */
export const START_TIME_TOLERANCE_MS = 3000;
/** USER_HZ, fixed at 100 on every Linux architecture Node supports. */
const CLOCK_TICKS_PER_SECOND = 100;

function signalZero(target: number): boolean {
  try {
    process.kill(target, 0);
    return true;
  } catch (error) {
    // EPERM: it exists, it is just not ours to signal.
    return errnoCode(error) === "EPERM";
  }
}

let bootTimeMs: number | null | undefined;
function bootTime(): number | null {
  if (bootTimeMs === undefined) {
    try {
      const line = readFileSync("/proc/stat", "utf8")
        .split("\n")
        .find((l) => l.startsWith("btime "));
      bootTimeMs = line ? Number(line.split(/\s+/)[1]) * 1000 : null;
    } catch {
      bootTimeMs = null;
    }
  }
  return bootTimeMs;
}

export const hostProcessProbe: ProcessProbe = {
  pidExists: (pid) => pid > 0 && signalZero(pid),
  groupExists: (pgid) => pgid > 1 && signalZero(-pgid),
  startTime(pid) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
      // Field 2 (comm) may hold spaces and parentheses: fields resume after the last ')'.
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      const ticks = Number(fields[19]); // field 22 overall: starttime
      const boot = bootTime();
      if (!Number.isFinite(ticks) || boot === null) return null;
      return new Date(boot + (ticks * 1000) / CLOCK_TICKS_PER_SECOND);
    } catch {
      return null;
    }
  },
};

function matchesRecordedStart(probe: ProcessProbe, pid: number, recorded: Date | null): boolean {
  const actual = probe.startTime(pid);
  if (actual === null || recorded === null) return true;
  return Math.abs(actual.getTime() - recorded.getTime()) <= START_TIME_TOLERANCE_MS;
}

export function recordedProcessIsLive(
  recorded: RecordedProcess,
  probe: ProcessProbe = hostProcessProbe,
): boolean {
  if (recorded.pid !== null && recorded.pid > 0 && probe.pidExists(recorded.pid)) {
    if (matchesRecordedStart(probe, recorded.pid, recorded.startedAt)) return true;
  }
  const pgid = recorded.processGroupId;
  if (pgid !== null && pgid > 1 && probe.groupExists(pgid)) {
    // The group's leader carries the group's start; once it exited the start is unreadable.
    if (!probe.pidExists(pgid)) return true;
    if (matchesRecordedStart(probe, pgid, recorded.startedAt)) return true;
  }
  return false;
}

/**
 * A process as a name written for it records it (a claimed retired tree, a scratch directory):
 * its pid and start time, ms since the epoch (`null` when it could not be read; written as 0).
 */
export interface NamedProcess {
  pid: number;
  startedAtMs: number | null;
}

/**
 * How a name records a process: `<pid>-<start ms>`, 0 for a start time that could not be read
 * (`processTag`); PROCESS_TAG matches it in a name's pattern, its two groups the pid and the
 * start, which `taggedProcess` reads back.
 */
export const PROCESS_TAG = "([1-9][0-9]*)-([0-9]+)";

export function processTag(named: NamedProcess): string {
  return `${named.pid}-${named.startedAtMs ?? 0}`;
}

/** The process PROCESS_TAG's two groups (`pid`, `startMs`) record. */
export function taggedProcess(pid: string, startMs: string): NamedProcess {
  const startedAtMs = Number(startMs);
  return { pid: Number(pid), startedAtMs: startedAtMs === 0 ? null : startedAtMs };
}

let self: NamedProcess | undefined;
/** This process as names record it: its pid and start time (as /proc tells every reader). */
export function ownProcess(): NamedProcess {
  self ??= { pid: process.pid, startedAtMs: hostProcessProbe.startTime(process.pid)?.getTime() ?? null };
  return self;
}

/** Whether the process a name records can still be running (recordedProcessIsLive: fail closed). */
export function namedProcessIsLive(named: NamedProcess, probe: ProcessProbe = hostProcessProbe): boolean {
  const startedAt = named.startedAtMs === null ? null : new Date(named.startedAtMs);
  return recordedProcessIsLive({ pid: named.pid, processGroupId: null, startedAt }, probe);
}
