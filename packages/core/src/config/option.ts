/**
 * Environment options. Each option names its variable, unit, default and effect, and parses
 * its raw value at the boundary with an exact message, so a typo fails at start-up with the
 * variable named instead of surfacing as odd behaviour later. The README's configuration
 * table is checked against these definitions by a test.
 */
import { ConfigError } from "../errors";

export type Env = Record<string, string | undefined>;

export interface Option<T> {
  readonly env: string;
  readonly description: string;
  readonly unit?: string;
  /** Shown in docs; `undefined` means required. */
  readonly defaultText: string | undefined;
  /** Never shown by the API (tokens, keys): reported as set or unset only. */
  readonly secret?: boolean;
  /** The values it accepts, for docs ("minimum 1", "1 to 64"). */
  readonly range?: string;
  read(env: Env): T;
}

/** The same option, marked secret. */
export function secretOption<T>(option: Option<T>): Option<T> {
  return { ...option, secret: true };
}

/** What the API may show of an option's current value: null when unset (never an absent field). */
export function shownValue(option: Option<unknown>, env: Env): unknown {
  const value = option.read(env);
  if (!option.secret) return value ?? null;
  return value === undefined || value === "" ? null : "(set)";
}

function define<T>(
  env: string,
  description: string,
  fallback: T | undefined,
  parse: (raw: string) => T,
  show: (value: T) => string,
  unit?: string,
): Option<T> {
  return {
    env,
    description,
    unit,
    defaultText: fallback === undefined ? undefined : show(fallback),
    read(source: Env): T {
      const raw = source[env];
      if (raw === undefined || raw.trim() === "") {
        if (fallback === undefined) throw new ConfigError(env, "is required");
        return fallback;
      }
      return parse(raw.trim());
    },
  };
}

export function booleanOption(env: string, fallback: boolean, description: string): Option<boolean> {
  return define(
    env,
    description,
    fallback,
    (raw) => {
      const value = raw.toLowerCase();
      if (["true", "1", "yes", "on"].includes(value)) return true;
      if (["false", "0", "no", "off"].includes(value)) return false;
      throw new ConfigError(env, `must be true or false (got "${raw}")`);
    },
    String,
  );
}

export interface IntegerBounds {
  min?: number;
  max?: number;
  unit?: string;
}

export function integerOption(
  env: string,
  fallback: number | undefined,
  description: string,
  bounds: IntegerBounds = {},
): Option<number> {
  const { min = Number.MIN_SAFE_INTEGER, max = Number.MAX_SAFE_INTEGER, unit } = bounds;
  const range =
    bounds.min !== undefined && bounds.max !== undefined
      ? `${bounds.min} to ${bounds.max}`
      : bounds.min !== undefined
        ? `minimum ${bounds.min}`
        : bounds.max !== undefined
          ? `maximum ${bounds.max}`
          : undefined;
  const option = define(
    env,
    description,
    fallback,
    (raw) => {
      const value = Number(raw);
      if (!/^-?\d+$/.test(raw) || !Number.isSafeInteger(value)) {
        throw new ConfigError(env, `must be an integer (got "${raw}")`);
      }
      if (value < min) throw new ConfigError(env, `must be at least ${min} (got ${value})`);
      if (value > max) throw new ConfigError(env, `must be at most ${max} (got ${value})`);
      return value;
    },
    String,
    unit,
  );
  return range === undefined ? option : { ...option, range };
}

export function stringOption(
  env: string,
  fallback: string | undefined,
  description: string,
  validate?: (value: string) => string | undefined,
  /** How docs show the default, when it depends on the machine (a home directory). */
  shownDefault?: string,
): Option<string> {
  return define(
    env,
    description,
    fallback,
    (raw) => {
      const problem = validate?.(raw);
      if (problem) throw new ConfigError(env, problem);
      return raw;
    },
    (value) => shownDefault ?? value,
  );
}

/** An option that may stay unset (`undefined`) without being an error. */
export function optionalStringOption(
  env: string,
  description: string,
  validate?: (value: string) => string | undefined,
): Option<string | undefined> {
  return {
    env,
    description,
    defaultText: "(unset)",
    read(source: Env) {
      const raw = source[env]?.trim();
      if (!raw) return undefined;
      const problem = validate?.(raw);
      if (problem) throw new ConfigError(env, problem);
      return raw;
    },
  };
}

export function urlValidator(protocols: string[]): (value: string) => string | undefined {
  return (value) => {
    try {
      const url = new URL(value);
      if (!protocols.includes(url.protocol))
        return `must be a ${protocols.join(" or ")} URL (got "${value}")`;
      return undefined;
    } catch {
      return `must be a URL (got "${value}")`;
    }
  };
}

export type OptionValues<T extends Record<string, Option<unknown>>> = {
  [K in keyof T]: T[K] extends Option<infer V> ? V : never;
};

/** Reads a group of options at once; the first bad variable throws a ConfigError. */
export function readOptions<T extends Record<string, Option<unknown>>>(
  options: T,
  env: Env,
): OptionValues<T> {
  const values: Record<string, unknown> = {};
  for (const [key, option] of Object.entries(options)) values[key] = option.read(env);
  return values as OptionValues<T>;
}
