import type {
  AnyDomain,
  Clock,
  Db,
  DeadlineQueues,
  DomainControls,
  DomainId,
  Env,
  Logger,
  ReopenQueue,
} from "@reclaim/core";
import type { Redis } from "ioredis";

/** What route handlers may use; nothing else leaks into them. */
export interface ApiDeps {
  db: Db;
  redis: Redis;
  queues: DeadlineQueues;
  /** The reopen queue (workspaces/reopen): the reopen route adds to it and may wait for a result. */
  reopens: ReopenQueue;
  clock: Clock;
  log: Logger;
  domains: ReadonlyMap<DomainId, AnyDomain>;
  configs: ReadonlyMap<DomainId, DomainControls>;
  queuePrefix: string;
  /** The environment the services read their options from (the domains route shows them). */
  env: Env;
}
