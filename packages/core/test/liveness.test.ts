/**
 * A recorded process blocks removal only while it can still be the run's own: the pid or
 * the process group exists on this host with the recorded start time, or with a start time
 * that cannot be read. Real processes, real /proc.
 */
import { spawn } from "node:child_process";
import { hostProcessProbe, recordedProcessIsLive } from "@reclaim/core";
import { waitFor } from "@reclaim/testkit";

function sleeper(args: string[] = ["300"]) {
  const child = spawn("sleep", args, { detached: true, stdio: "ignore" });
  child.unref();
  return child;
}

it("a live pid with its recorded start time is live; the same pid with another start time is reuse", () => {
  const child = sleeper();
  try {
    const startedAt = hostProcessProbe.startTime(child.pid!);
    expect(startedAt).not.toBeNull();
    expect(Math.abs(startedAt!.getTime() - Date.now())).toBeLessThan(10_000);
    expect(recordedProcessIsLive({ pid: child.pid!, processGroupId: null, startedAt })).toBe(true);
    expect(
      recordedProcessIsLive({
        pid: child.pid!,
        processGroupId: null,
        startedAt: new Date(Date.now() - 3600_000),
      }),
    ).toBe(false);
    expect(recordedProcessIsLive({ pid: child.pid!, processGroupId: null, startedAt: null })).toBe(true);
  } finally {
    child.kill("SIGKILL");
  }
});

it("a pid that exited is not live", async () => {
  const child = sleeper(["0"]);
  await new Promise((resolve) => child.on("exit", resolve));
  await waitFor(() => !hostProcessProbe.pidExists(child.pid!), { what: "the pid to be reaped" });
  expect(recordedProcessIsLive({ pid: child.pid!, processGroupId: null, startedAt: new Date() })).toBe(false);
});

it("a process group whose leader exited but whose members live is live (its start cannot be read)", async () => {
  // The shell leads a new group, starts a member in the background and exits.
  const leader = spawn("sh", ["-c", "sleep 300 & exit 0"], { detached: true, stdio: "ignore" });
  leader.unref();
  const pgid = leader.pid!;
  await new Promise((resolve) => leader.on("exit", resolve));
  try {
    await waitFor(() => !hostProcessProbe.pidExists(pgid), { what: "the leader to be reaped" });
    expect(hostProcessProbe.groupExists(pgid)).toBe(true);
    expect(
      recordedProcessIsLive({
        pid: pgid,
        processGroupId: pgid,
        startedAt: new Date(Date.now() - 86_400_000),
      }),
    ).toBe(true);
  } finally {
    process.kill(-pgid, "SIGKILL");
  }
  await waitFor(() => !hostProcessProbe.groupExists(pgid), { what: "the group to be gone" });
  expect(recordedProcessIsLive({ pid: pgid, processGroupId: pgid, startedAt: null })).toBe(false);
});
