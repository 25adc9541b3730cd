/**
 * A scope is what one deadline-keyed job covers: a company (its uuid) or the whole instance
 * (work that belongs to no company, such as leftovers and orphans). The API shows the
 * instance scope as `companyId: null`.
 */
export const INSTANCE_SCOPE = "instance";
export type Scope = string;

export function scopeOf(companyId: string | null | undefined): Scope {
  return companyId ?? INSTANCE_SCOPE;
}

export function companyIdOf(scope: Scope): string | null {
  return scope === INSTANCE_SCOPE ? null : scope;
}
