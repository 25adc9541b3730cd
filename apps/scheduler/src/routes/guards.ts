/** Lookups shared by routes, each failing with the right code and the field named. */
import {
  echo,
  isDomainId,
  parseJobId,
  ReclaimError,
  type AnyDomain,
  type DomainControls,
  type DomainId,
} from "@reclaim/core";
import type { ApiDeps } from "../deps";

/** A domain id this service knows and implements, else 404 / 501. */
export function implementedDomain(deps: ApiDeps, id: string, field = "domain"): AnyDomain {
  if (!isDomainId(id)) {
    throw new ReclaimError("RECLAIM_ERR_UNKNOWN_DOMAIN", {
      message: `${field}: no retention domain ${echo(id)}`,
      field,
    });
  }
  const domain = deps.domains.get(id);
  if (!domain) {
    throw new ReclaimError("RECLAIM_ERR_DOMAIN_NOT_IMPLEMENTED", {
      message: `${field}: ${echo(id)} is not implemented yet`,
      field,
    });
  }
  return domain;
}

/** As above, and enabled by its env control, else 409. */
export function enabledDomain(
  deps: ApiDeps,
  id: string,
  field = "domain",
): { domain: AnyDomain; config: DomainControls } {
  const domain = implementedDomain(deps, id, field);
  const config = deps.configs.get(domain.id as DomainId)!;
  if (!config.enabled) {
    throw new ReclaimError("RECLAIM_ERR_DOMAIN_DISABLED", {
      message: `${field}: ${echo(id)} is disabled by its ENABLED control`,
      field,
    });
  }
  return { domain, config };
}

/** The domain a job id belongs to (`<domain>--<scope>` or `sweep--<domain>--<uuid>`). */
export function domainOfJobId(jobId: string): DomainId | null {
  const candidate = parseJobId(jobId)?.domain;
  return candidate && isDomainId(candidate) ? candidate : null;
}
