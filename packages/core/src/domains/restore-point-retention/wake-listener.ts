/**
 * Wakes the retention worker without polling: the issues and companies triggers
 * (migration 20261202000000_restore_points) send `pg_notify('reclaim_restore_points',
 * '{"companyId", "reason"}')` when they change a restore point, and PostgreSQL delivers it
 * when the changing transaction commits. The scheduler holds one dedicated connection
 * LISTENing on that channel and turns each notification into a deadline request
 * (events.ts `wakeRequest`: a settle window for issue changes, now for deletions).
 *
 * Notifications are not durable: one sent while no scheduler listens is lost. The ledger
 * rows themselves are, so after every (re)connection the listener runs the domain's
 * start-up discovery again, which requests whatever is due. A lost connection is retried
 * with backoff (1 s doubling to 30 s).
 */
import pg from "pg";
import type { Clock } from "../../clock";
import type { Db } from "../../db";
import { UUID_NAME } from "../../fs";
import type { DeadlineRequest } from "../../ledger";
import type { Logger } from "../../logging";
import type { RestorePointRetentionConfig } from "./config";
import { onStartup, wakeRequest, type WakeReason } from "./events";

export const WAKE_CHANNEL = "reclaim_restore_points";
const REASONS = new Set<WakeReason>(["issue_changed", "issue_deleted", "company_deleted"]);

export interface WakeListenerDeps {
  databaseUrl: string;
  db: Db;
  clock: Clock;
  log: Logger;
  config: RestorePointRetentionConfig;
  /** Records and schedules deadlines (DeadlineQueues.request). */
  request(requests: DeadlineRequest[]): Promise<void>;
}

export interface WakeListener {
  /** Resolves once the first LISTEN is in place (or the first attempt failed; it keeps trying). */
  ready: Promise<void>;
  stop(): Promise<void>;
}

/** Parses one notification payload; null for anything this build does not understand. */
export function parseWake(payload: string | undefined): { companyId: string; reason: WakeReason } | null {
  try {
    const value = JSON.parse(payload ?? "") as { companyId?: unknown; reason?: unknown };
    if (typeof value.companyId !== "string" || !UUID_NAME.test(value.companyId)) return null;
    if (typeof value.reason !== "string" || !REASONS.has(value.reason as WakeReason)) return null;
    return { companyId: value.companyId, reason: value.reason as WakeReason };
  } catch {
    return null;
  }
}

export function startWakeListener(deps: WakeListenerDeps): WakeListener {
  let stopped = false;
  /** The connection in use or being opened; events of an older one are ignored. */
  let current: pg.Client | null = null;
  let timer: NodeJS.Timeout | undefined;
  let markReady!: () => void;
  const ready = new Promise<void>((resolve) => (markReady = resolve));

  const onNotification = (message: pg.Notification) => {
    if (message.channel !== WAKE_CHANNEL) return;
    const wake = parseWake(message.payload);
    if (!wake) {
      deps.log.warn("ignored restore point notification", { payload: message.payload });
      return;
    }
    const request = wakeRequest(wake.companyId, wake.reason, deps.clock.now(), deps.config.settleMs);
    deps.request([request]).catch((error: unknown) =>
      // The row is marked in the ledger; start-up discovery or the next wake finds it.
      deps.log.warn("could not request a restore point review", { companyId: wake.companyId, error }),
    );
  };

  const connect = async (attempt: number): Promise<void> => {
    if (stopped) return;
    const c = new pg.Client({ connectionString: deps.databaseUrl });
    current = c;
    c.on("notification", onNotification);
    c.on("error", (error) => {
      if (c !== current) return;
      deps.log.warn("restore point listener lost its connection", { error });
      reconnect(c, 0);
    });
    try {
      await c.connect();
      await c.query(`LISTEN ${WAKE_CHANNEL}`);
      if (stopped) {
        await c.end().catch(() => undefined);
        return;
      }
      markReady();
      // Whatever was marked while nobody listened is due now (or at its own time).
      const requests = await onStartup({
        db: deps.db,
        clock: deps.clock,
        now: deps.clock.now(),
        config: deps.config,
        log: deps.log,
      });
      await deps.request(requests);
    } catch (error) {
      markReady();
      if (c !== current || stopped) return;
      deps.log.warn("restore point listener could not listen; retrying", { attempt, error });
      reconnect(c, attempt + 1);
    }
  };

  const reconnect = (failed: pg.Client, attempt: number) => {
    current = null;
    failed.removeAllListeners("notification");
    failed.end().catch(() => undefined);
    if (stopped || timer) return;
    timer = setTimeout(
      () => {
        timer = undefined;
        void connect(attempt);
      },
      Math.min(30_000, 1000 * 2 ** attempt),
    );
    timer.unref();
  };

  void connect(0);
  return {
    ready,
    async stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
      const c = current;
      current = null;
      if (c) await c.end().catch(() => undefined);
    },
  };
}
