/**
 * Who holds a lock file, precisely enough to tell a live holder from a dead one on this
 * host: a pid alone is not enough, because pids are reused (after a crash, the pid in a
 * record may belong to an unrelated process, or to this very process after a restart).
 *
 *   host      os.hostname(): a holder on another host (a shared network store) can only be
 *             judged by age
 *   bootId    /proc/sys/kernel/random/boot_id: every process of an earlier boot is dead
 *   pid       the holding process
 *   pidStart  its start time in clock ticks since boot (/proc/<pid>/stat, field 22): a
 *             process with the same pid but another start time is a reused pid
 *
 * Where /proc is unavailable (not Linux), bootId and pidStart are empty and liveness falls
 * back to `kill(pid, 0)`, which cannot see pid reuse (a reused pid keeps a record alive: the
 * safe side; its age never breaks it, so such a pack waits until that process ends).
 */
import { readFileSync } from "node:fs";
import { readFile } from "node:fs/promises";
import os from "node:os";
import { errnoCode } from "../errors";

export interface ProcessIdentity {
  host: string;
  bootId: string;
  pid: number;
  pidStart: string;
}

export type ProcessLiveness = "alive" | "dead" | "foreign";

let self: ProcessIdentity | undefined;

/** This process (computed once: none of it changes while the process runs). */
export function currentProcess(): ProcessIdentity {
  self ??= {
    host: os.hostname(),
    bootId: readOptional("/proc/sys/kernel/random/boot_id"),
    pid: process.pid,
    pidStart: startTimeOf(readOptional(`/proc/${process.pid}/stat`)) ?? "",
  };
  return self;
}

/** The identity a process has now, or null when no such process runs (tests plant records with it). */
export async function identityOf(pid: number): Promise<ProcessIdentity | null> {
  const me = currentProcess();
  if (pid === me.pid) return me;
  const stat = await readFile(`/proc/${pid}/stat`, "utf8").catch(() => null);
  if (stat === null) return null;
  return { host: me.host, bootId: me.bootId, pid, pidStart: startTimeOf(stat) ?? "" };
}

/**
 * Whether the process `holder` names still runs: "foreign" when it ran on another host (the
 * caller judges it by age). Does not answer for this process itself: only the caller knows
 * which of its own records it holds.
 */
export async function livenessOf(holder: ProcessIdentity): Promise<ProcessLiveness> {
  const me = currentProcess();
  if (holder.host !== me.host) return "foreign";
  if (holder.bootId && me.bootId && holder.bootId !== me.bootId) return "dead";
  if (me.bootId) {
    const stat = await readFile(`/proc/${holder.pid}/stat`, "utf8").catch((error: unknown) => {
      if (errnoCode(error) === "ENOENT" || errnoCode(error) === "ESRCH") return null;
      throw error;
    });
    // Absent from /proc: gone, unless /proc hides other users' processes (hidepid), where
    // only kill(2) can tell, and then without the start time: counted alive.
    if (stat === null) return signalable(holder.pid);
    if (stateOf(stat) === "Z" || stateOf(stat) === "X") return "dead"; // exited, not yet reaped
    return holder.pidStart !== "" && startTimeOf(stat) !== holder.pidStart ? "dead" : "alive";
  }
  return signalable(holder.pid);
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
