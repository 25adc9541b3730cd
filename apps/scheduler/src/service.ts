/**
 * The scheduler process: the API, plus the start-up duties of the deadline ledger.
 *
 * On start it listens at once (so /readyz can say what is missing), then, retrying with
 * backoff until PostgreSQL and Redis answer:
 *  1. follows the queues' finished-job events and syncs each finished deadline job's key (a
 *     worker killed between finishing a job and queueing its next deadline loses nothing);
 *  2. rebuilds every BullMQ job the ledger asks for (a flushed or restarted Redis loses no
 *     deadline);
 *  3. requests each enabled domain's start-up deadlines ("runs at startup").
 * It repeats step 2 whenever Redis comes back after losing the connection. Nothing polls:
 * with an empty ledger and nothing due at start-up, nothing is scheduled.
 */
import {
  closeRedis,
  createDb,
  createLogger,
  createRedis,
  DeadlineQueues,
  domainRegistry,
  readDomainConfigs,
  onReconnect,
  readSchedulerConfig,
  readServiceConfig,
  ReopenQueue,
  startWakeListener,
  systemClock,
  type AnyDomain,
  type Clock,
  type DeadlineRequest,
  type DomainId,
  type Env,
  type Logger,
  type RestorePointRetentionConfig,
  type WakeListener,
} from "@reclaim/core";
import type { FastifyInstance } from "fastify";
import { buildApp } from "./app";
import type { ApiDeps } from "./deps";

export interface SchedulerOptions {
  env?: Env;
  clock?: Clock;
  log?: Logger;
  domains?: ReadonlyMap<DomainId, AnyDomain>;
}

export interface SchedulerService {
  app: FastifyInstance;
  deps: ApiDeps;
  /** Resolves once the ledger duties of start-up are done. */
  started: Promise<void>;
  listen(): Promise<string>;
  stop(): Promise<void>;
}

export async function createScheduler(options: SchedulerOptions = {}): Promise<SchedulerService> {
  const env = options.env ?? process.env;
  const service = readServiceConfig(env);
  const scheduler = readSchedulerConfig(env);
  const clock = options.clock ?? systemClock;
  const log = (options.log ?? createLogger(service.logLevel as "info")).child({
    service: "reclaim-scheduler",
    pid: process.pid,
  });
  const domains = options.domains ?? domainRegistry;
  const { configs, enabled } = readDomainConfigs(domains, env);

  const db = createDb(service.databaseUrl);
  const redis = createRedis(service.redisUrl);
  const queues = DeadlineQueues.forService(db, redis, clock, service, log);
  const reopens = new ReopenQueue(redis, service.queuePrefix);
  const deps: ApiDeps = {
    db,
    redis,
    queues,
    reopens,
    clock,
    log,
    domains,
    configs,
    queuePrefix: service.queuePrefix,
    env,
  };
  const app = await buildApp({ token: scheduler.apiToken, deps, timeouts: scheduler });

  let stopped = false;
  const startupDuties = async () => {
    await queues.followFinishedJobs(enabled, (error) =>
      log.warn("could not schedule a finished job's next deadline yet; retrying", { error }),
    );
    const rebuilt = await queues.reconcile(enabled);
    const now = clock.now();
    const requests: DeadlineRequest[] = [];
    for (const id of enabled) {
      const domain = domains.get(id)!;
      if (domain.onStartup)
        requests.push(...(await domain.onStartup({ db, clock, now, config: configs.get(id)!, log })));
    }
    await queues.request(requests);
    log.info("scheduler ready", {
      rebuiltKeys: rebuilt,
      startupDeadlines: requests.length,
      domains: enabled,
    });
  };
  // Restore points: the issues trigger's notifications wake the retention worker (no polling).
  const rpConfig = configs.get("restore-point-retention") as RestorePointRetentionConfig | undefined;
  const wake: WakeListener | null =
    rpConfig && enabled.includes("restore-point-retention")
      ? startWakeListener({
          databaseUrl: service.databaseUrl,
          db,
          clock,
          log,
          config: rpConfig,
          request: (requests) => queues.request(requests),
        })
      : null;
  const started = (async () => {
    await wake?.ready;
    for (let attempt = 0; !stopped; attempt++) {
      try {
        await startupDuties();
        return;
      } catch (error) {
        log.warn("start-up duties failed; retrying", { attempt, error });
        await new Promise((resolve) => setTimeout(resolve, Math.min(30_000, 500 * 2 ** attempt)).unref());
      }
    }
  })();
  onReconnect(redis, () => {
    queues.reconcile(enabled).then(
      (keys) => log.info("queues rebuilt from the ledger", { why: "redis reconnected", keys }),
      (error: unknown) => log.error("could not rebuild queues", { error }),
    );
  });

  return {
    app,
    deps,
    started,
    async listen() {
      return app.listen({ port: scheduler.port, host: scheduler.host });
    },
    async stop() {
      stopped = true;
      await wake?.stop();
      await app.close();
      await reopens.close();
      await queues.close();
      await closeRedis(redis);
      await db.$disconnect();
    },
  };
}
