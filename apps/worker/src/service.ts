/**
 * The worker process: one BullMQ Worker per enabled domain, all running `runJob`.
 *
 * - Start: rebuild missing jobs from the ledger (a Redis that lost its data, a worker that
 *   died between finishing a job and scheduling the next), and again whenever Redis comes
 *   back after a restart; remove the scratch directories of workers that were killed.
 * - After every deadline job: sync that key, so the next deadline is queued (schedulers do
 *   it as well from BullMQ's event stream, in case this process dies first).
 * - SIGTERM (`stop`): take no new jobs, let active ones finish; halfway through the shutdown
 *   timeout, ask them to stop between entries (they save their cursor and request a
 *   continuation); at the timeout, exit anyway (a stalled job is retried by another worker).
 *   A sync under way finishes before the queues close.
 */
import { setMaxListeners } from "node:events";
import { Worker, type Job } from "bullmq";
import {
  closeRedis,
  createDb,
  createLogger,
  DAY_MS,
  createRedis,
  FINISHED_GATHER_MS,
  DeadlineQueues,
  domainRegistry,
  readDomainConfigs,
  FaultPoints,
  onReconnect,
  queueName,
  readServiceConfig,
  readWorkerConfig,
  settlesWithin,
  sweepScratch,
  ReportCallbacks,
  reopenWorker,
  runJob,
  systemClock,
  type AnyDomain,
  type BatchReport,
  type Clock,
  type DomainId,
  type Env,
  type Logger,
  type ReclaimJobData,
} from "@reclaim/core";
import { cancelChannel, CancellationListener } from "./cancellation";

export interface WorkerServiceOptions {
  env?: Env;
  clock?: Clock;
  log?: Logger;
  faults?: FaultPoints;
  domains?: ReadonlyMap<DomainId, AnyDomain>;
}

export interface WorkerService {
  readonly domains: DomainId[];
  start(): Promise<void>;
  stop(): Promise<void>;
}

export function createWorkerService(options: WorkerServiceOptions = {}): WorkerService {
  const env = options.env ?? process.env;
  const service = readServiceConfig(env);
  const workerConfig = readWorkerConfig(env);
  const clock = options.clock ?? systemClock;
  const log = (options.log ?? createLogger(service.logLevel as "info")).child({
    service: "reclaim-worker",
    pid: process.pid,
  });
  const faults = options.faults ?? FaultPoints.fromEnv(env);
  const registry = options.domains ?? domainRegistry;

  const { configs, enabled } = readDomainConfigs(registry, env);

  const db = createDb(service.databaseUrl, {
    max: workerConfig.concurrency * Math.max(1, enabled.length) + 4,
  });
  const redis = createRedis(service.redisUrl);
  const queues = DeadlineQueues.forService(db, redis, clock, service, log);
  const callbacks = service.callbackUrl ? new ReportCallbacks(redis, service.queuePrefix) : null;
  // Every connection this service opens, so stop() closes them all (BullMQ leaves a
  // connection it was handed open).
  const connections = [redis];
  const connection = () => {
    const c = redis.duplicate();
    connections.push(c);
    return c;
  };
  const cancellation = new CancellationListener(connection(), cancelChannel(service.queuePrefix));
  const shutdown = new AbortController();
  // Every active job listens for the shutdown (cancellation.ts): one listener per job slot.
  setMaxListeners(workerConfig.concurrency * Math.max(1, enabled.length) + 10, shutdown.signal);
  const workers: Worker[] = [];

  // The earliest deadline each settled job recorded for its own key (runJob's onSettled), until
  // BullMQ finishes it.
  const settledDue = new Map<string, Date | null>();
  const deps = {
    db,
    queues,
    clock,
    instanceRoot: service.instanceRoot,
    log,
    faults,
    configs,
    domains: registry,
    reportRetentionMs: workerConfig.reportRetentionDays * DAY_MS,
    onReport: callbacks ? (report: BatchReport) => callbacks.enqueue(report) : undefined,
    onSettled: (jobId: string, keyDue: Date | null) => settledDue.set(jobId, keyDue),
  };

  const afterJob = async (job: Job<ReclaimJobData> | undefined, completed: boolean) => {
    if (!job) return;
    const keyDue = settledDue.get(job.id!);
    settledDue.delete(job.id!);
    if (job.data.kind !== "deadline") return;
    // A crash here leaves the next deadline in the ledger only: schedulers sync it too.
    await faults.hit("worker.before-next-deadline");
    const key = { domain: job.data.domain, scope: job.data.scope };
    const onError = (error: unknown) =>
      log.warn("could not schedule next deadline yet; retrying", { domain: job.data.domain, error });
    // A completed job that left nothing due soon: its key is gathered with others and synced
    // only if the ledger has rows for it (rows others wrote while it ran, such as a claim touched
    // again, included). Work it left due now (a continuation) is synced at once; a failed
    // attempt may be retried (the job is still there), so it gets the full sync too.
    const dueSoon = keyDue && keyDue.getTime() <= clock.now().getTime() + FINISHED_GATHER_MS;
    if (completed && !dueSoon) queues.syncFinishedSoon(key, onError);
    else queues.syncSoon(key, onError);
  };

  const reconcile = (why: string) =>
    queues.reconcile(enabled).then(
      (keys) => log.info("queues rebuilt from the ledger", { why, keys }),
      (error: unknown) => log.error("could not rebuild queues from the ledger", { why, error }),
    );

  return {
    domains: enabled,
    async start() {
      await cancellation.start();
      for (const id of enabled) {
        const worker = new Worker<ReclaimJobData>(
          queueName(id),
          async (job) => {
            const tracked = cancellation.track(job.id!, shutdown.signal);
            try {
              const stored = await runJob(deps, {
                id: job.id!,
                data: job.data,
                attemptsMade: job.attemptsMade,
                attempts: job.opts.attempts ?? 1,
                signal: tracked.signal,
              });
              // The report row is the record (GET /v1/jobs/:jobId reads it): the job's return
              // value, which BullMQ writes into the job and into the event stream every
              // scheduler reads, only names it.
              return { reportId: stored.id };
            } finally {
              tracked.release();
            }
          },
          {
            connection: connection(),
            prefix: service.queuePrefix,
            concurrency: workerConfig.concurrency,
            lockDuration: service.jobLockMs,
            stalledInterval: service.stalledIntervalMs,
            maxStalledCount: 1,
          },
        );
        worker.on("completed", (job) => void afterJob(job, true));
        worker.on("failed", (job) => void afterJob(job, false));
        worker.on("error", (error) => log.error("worker error", { domain: id, error }));
        workers.push(worker);
      }
      // Reopens run here, on the host that holds the instance directory, whether or not the
      // reopening domain's retention is enabled.
      workers.push(
        reopenWorker(
          { ...deps, request: (deadlines) => queues.request(deadlines) },
          {
            connection: connection(),
            prefix: service.queuePrefix,
            lockMs: service.jobLockMs,
            stalledIntervalMs: service.stalledIntervalMs,
            log,
          },
        ),
      );
      if (callbacks && service.callbackUrl) {
        const target = {
          url: service.callbackUrl,
          // readServiceConfig refused a callback URL without its own secret.
          secret: service.callbackSecret!,
        };
        workers.push(callbacks.deliverer(target, connection(), log));
      }
      onReconnect(redis, () => void reconcile("redis reconnected"));
      // What a worker killed mid-capture left in its scratch directory (process/scratch.ts).
      await sweepScratch().then(
        (removed) =>
          removed.length > 0 && log.info("scratch directories of ended workers removed", { removed }),
        (error: unknown) => log.warn("could not sweep scratch directories", { error }),
      );
      await reconcile("start");
      await Promise.all(workers.map((w) => w.waitUntilReady()));
      log.info("worker ready", { domains: enabled, concurrency: workerConfig.concurrency });
    },
    async stop() {
      log.info("worker stopping: finishing active jobs");
      const soft = setTimeout(
        () => shutdown.abort(new Error("shutting down")),
        workerConfig.shutdownTimeoutMs / 2,
      );
      await settlesWithin(Promise.all(workers.map((w) => w.close())), workerConfig.shutdownTimeoutMs);
      clearTimeout(soft);
      await queues.close();
      await callbacks?.close();
      await cancellation.stop();
      await Promise.all(connections.map(closeRedis));
      await db.$disconnect();
      log.info("worker stopped");
    },
  };
}
