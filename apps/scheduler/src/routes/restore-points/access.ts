/**
 * What every restore-point route needs: the guard that the domain is served here, its
 * configuration (the storage provider) and a way to schedule the deadlines a ledger change
 * makes due. The ledger API works even when retention is disabled (captures must still be
 * recorded); then nothing is scheduled.
 */
import {
  storageFor,
  type DeadlineRequest,
  type DomainId,
  type LedgerResult,
  type RestorePointRetentionConfig,
} from "@reclaim/core";
import type { StorageProvider } from "@reclaim/shared";
import type { ApiDeps } from "../../deps";
import { implementedDomain } from "../guards";
import { route } from "../route";
import { errorBody } from "../schemas";
import { restorePointBody, restorePointParams } from "./schemas";

const ID: DomainId = "restore-point-retention";

/** The guard of every restore-point route: the domain is known (else 404) and implemented by this service (else 501). */
export function restorePointsServed(deps: ApiDeps): void {
  implementedDomain(deps, ID);
}

export function restorePointConfig(deps: ApiDeps): RestorePointRetentionConfig {
  restorePointsServed(deps);
  return deps.configs.get(ID) as RestorePointRetentionConfig;
}

export function restorePointStorage(deps: ApiDeps): StorageProvider {
  return storageFor(restorePointConfig(deps).storage);
}

export async function schedule(deps: ApiDeps, deadlines: DeadlineRequest[]): Promise<void> {
  if (!restorePointConfig(deps).enabled) return;
  await deps.queues.request(deadlines);
}

/**
 * A route that moves one restore point to another status (supersede, request deletion):
 * the same params and answers, a different ledger operation.
 */
export function statusChangeRoute(definition: {
  url: string;
  operationId: string;
  summary: string;
  change: (db: ApiDeps["db"], companyId: string, id: string, now: Date) => Promise<LedgerResult>;
}) {
  return route({
    method: "POST",
    url: definition.url,
    operationId: definition.operationId,
    summary: definition.summary,
    params: restorePointParams,
    responses: { 200: restorePointBody, 400: errorBody, 404: errorBody, 409: errorBody },
    async handle({ params }, deps) {
      restorePointsServed(deps);
      const { restorePoint, deadlines } = await definition.change(
        deps.db,
        params.companyId,
        params.id,
        deps.clock.now(),
      );
      await schedule(deps, deadlines);
      return { status: 200, body: { restorePoint } };
    },
  });
}
