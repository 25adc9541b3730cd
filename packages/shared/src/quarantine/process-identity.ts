/**
 * Who holds a lock file, precisely enough to tell a live holder from a dead one: a pid alone
 * is not enough, because pids are reused (after a crash, the pid in a record may belong to
 * an unrelated process, or to this very process after a restart), and a pid means something
 * only inside one PID namespace of one running kernel. A hostname identifies neither: two
 * containers of one pod share a hostname but not their pids, and two docker-compose workers
 * with `pid: host` share their pids but not their hostnames.
 *
 *   bootId    /proc/sys/kernel/random/boot_id: the running kernel (one boot of one machine)
 *   pidNs     readlink /proc/self/ns/pid, e.g. "pid:[4026531836]": the PID namespace the pid
 *             belongs to ("" when /proc is not this namespace's, see `currentProcess`)
 *   pid       the holding process
 *   pidStart  its start time in clock ticks since boot (/proc/<pid>/stat, field 22): a
 *             process with the same pid but another start time is a reused pid
 *   host      os.hostname(), for people reading a record; never used to judge it
 *
 * Judging a holder (`livenessOf`):
 *   same bootId, same pidNs   by pid and start time (this is the only case where a pid means
 *                             the same process on both sides)
 *   same bootId, other pidNs  "unknown": the caller judges by age (the holder's pids are not
 *                             visible, or are other processes, from here)
 *   other bootId              "dead" if the record was created before this kernel booted
 *                             (btime, /proc/stat): a process of an earlier boot of this machine
 *                             can no longer run; otherwise "unknown" (another machine sharing
 *                             the store through a network filesystem), judged by age
 *
 * Where /proc/<pid>/stat cannot be read (hidepid, EACCES, EPERM), the pid is judged by
 * `kill(pid, 0)` alone. Where /proc is unavailable (not Linux) bootId, pidNs and pidStart are empty: a holder of
 * the same hostname is then judged by `kill(pid, 0)`, which cannot see pid reuse (a reused
 * pid keeps a record alive: the safe side), and any other by age. A record written by an
 * earlier version (no pidNs) is judged by age.
 */
import { readFileSync, readlinkSync } from "node:fs";
import { readFile } from "node:fs/promises";
import os from "node:os";
import { errnoCode } from "../errors";

export interface ProcessIdentity {
  host: string;
  bootId: string;
  pidNs: string;
  pid: number;
  pidStart: string;
}

/** "unknown": the holder's process cannot be seen from here; the caller judges by age. */
type ProcessLiveness = "alive" | "dead" | "unknown";

/** How this module reads /proc/<pid>/stat (the publication fs, so tests can inject EACCES). */
type ReadText = (file: string) => Promise<string>;

let self: ProcessIdentity | undefined;
let bootStart: number | undefined;

/** This process (computed once: none of it changes while the process runs). */
export function currentProcess(): ProcessIdentity {
  self ??= {
    host: os.hostname(),
    bootId: readOptional("/proc/sys/kernel/random/boot_id"),
    pidNs: ownPidNamespace(),
    pid: process.pid,
    pidStart: startTimeOf(readOptional(`/proc/${process.pid}/stat`)) ?? "",
  };
  return self;
}

/** When the running kernel booted, ms since the epoch by this machine's clock; 0 if unknown. */
export function bootStartMs(): number {
  bootStart ??= Number(/^btime (\d+)$/m.exec(readOptional("/proc/stat"))?.[1] ?? 0) * 1000;
  return bootStart;
}

/** The identity a process of this namespace has now, or null when no such process runs (tests plant records with it). */
export async function identityOf(pid: number): Promise<ProcessIdentity | null> {
  const me = currentProcess();
  if (pid === me.pid) return me;
  const stat = await readFile(`/proc/${pid}/stat`, "utf8").catch(() => null);
  if (stat === null) return null;
  return { ...me, pid, pidStart: startTimeOf(stat) ?? "" };
}

/** Whether `holder` is this very process (the same kernel, PID namespace, pid and start time). */
export function isThisProcess(holder: ProcessIdentity): boolean {
  const me = currentProcess();
  if (holder.pid !== me.pid || holder.pidStart !== me.pidStart) return false;
  if (!me.bootId) return !holder.bootId && holder.host === me.host; // no /proc: see the header
  return holder.bootId === me.bootId && me.pidNs !== "" && holder.pidNs === me.pidNs;
}

/**
 * Whether the process `holder` names still runs (see the header for the rules). Does not
 * answer for this process itself: only the caller knows which of its own records it holds.
 */
export async function livenessOf(
  holder: ProcessIdentity & { createdAt: number },
  readText: ReadText,
): Promise<ProcessLiveness> {
  const me = currentProcess();
  if (!me.bootId || !holder.bootId) {
    // No kernel identity on one side (not Linux): the hostname is all there is.
    return !me.bootId && !holder.bootId && holder.host === me.host ? signalable(holder.pid) : "unknown";
  }
  if (holder.bootId !== me.bootId) {
    const booted = bootStartMs();
    return booted > 0 && holder.createdAt < booted ? "dead" : "unknown";
  }
  if (!me.pidNs || holder.pidNs !== me.pidNs) return "unknown";
  let stat: string;
  try {
    stat = await readText(`/proc/${holder.pid}/stat`);
  } catch {
    // Absent (ENOENT), or hidden or refused (hidepid=1/2 or a restricted /proc: ENOENT,
    // EACCES, EPERM): only kill(2) can tell then, and without the start time, so a reused
    // pid counts as alive (the safe side).
    return signalable(holder.pid);
  }
  if (stateOf(stat) === "Z" || stateOf(stat) === "X") return "dead"; // exited, not yet reaped
  return holder.pidStart !== "" && startTimeOf(stat) !== holder.pidStart ? "dead" : "alive";
}

/** kill(pid, 0): "dead" only when no such process exists (ESRCH). */
function signalable(pid: number): ProcessLiveness {
  try {
    process.kill(pid, 0);
    return "alive";
  } catch (error) {
    return errnoCode(error) === "ESRCH" ? "dead" : "alive";
  }
}

/**
 * This process's PID namespace, or "" when /proc is not this namespace's own (a /proc
 * mounted from another namespace would show other processes under the same pids).
 */
function ownPidNamespace(): string {
  try {
    if (readlinkSync("/proc/self") !== String(process.pid)) return "";
    return readlinkSync("/proc/self/ns/pid");
  } catch {
    return "";
  }
}

/** Fields after the command name, which may itself contain spaces and parentheses. */
function fieldsAfterCommand(stat: string): string[] {
  return stat.slice(stat.lastIndexOf(")") + 2).split(" ");
}

function stateOf(stat: string): string | undefined {
  return fieldsAfterCommand(stat)[0];
}

function startTimeOf(stat: string): string | undefined {
  // Field 22 of /proc/<pid>/stat; the fields after the command start at field 3.
  return stat ? fieldsAfterCommand(stat)[22 - 3] : undefined;
}

function readOptional(file: string): string {
  try {
    return readFileSync(file, "utf8").trim();
  } catch {
    return "";
  }
}
