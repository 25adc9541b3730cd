/**
 * When native session backup expiration is due: two minutes after the scheduler is ready
 * (the first hourly sweep, which also runs the evidence check once), then every hour from
 * the sweep itself. Evidence is checked again only when something comes due: the oldest
 * retained entry's due time (recorded by the check), or `native_sessions.evidence_written`
 * plus the evidence window for an entry written since.
 *
 * `native_sessions.live` replaces the stored liveness report; it schedules nothing.
 */
import { INSTANCE_SCOPE, type DeadlineRequest } from "../../ledger";
import type { EventContext, EventHandlers } from "../types";
import { FIRST_SWEEP_DELAY_MS, type NativeSessionBackupsConfig } from "./config";
import { storeLiveness } from "./queries";

const DOMAIN = "native-session-backups";

export function onStartup(ctx: EventContext<NativeSessionBackupsConfig>): DeadlineRequest[] {
  return [
    {
      domain: DOMAIN,
      scope: INSTANCE_SCOPE,
      reason: "startup",
      dueAt: new Date(ctx.now.getTime() + FIRST_SWEEP_DELAY_MS),
    },
  ];
}

export const events: EventHandlers<NativeSessionBackupsConfig> = {
  // A report replaces an older one only (store-liveness.sql): of the request's, only the
  // newest can be stored (clamped to now as there; the later one of equals, as in order).
  "native_sessions.live": async (events, ctx) => {
    const clamped = (e: (typeof events)[number]) => Math.min(Date.parse(e.reportedAt), ctx.now.getTime());
    const newest = events.reduce((best, e) => (clamped(e) >= clamped(best) ? e : best));
    await storeLiveness(ctx.db, newest.sessions, new Date(newest.reportedAt), ctx.now);
    return [];
  },
  "native_sessions.evidence_written": (events, ctx) =>
    events.map((event) => ({
      domain: DOMAIN,
      scope: INSTANCE_SCOPE,
      reason: "evidence",
      dueAt: new Date(new Date(event.writtenAt).getTime() + ctx.config.evidenceWindowMs),
    })),
};
