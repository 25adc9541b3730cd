/**
 * Values from the JSON Schemas of the OpenAPI document (the subset zod's converter emits:
 * type, properties, required, additionalProperties, enum, const, anyOf, oneOf, items,
 * min/maxItems, min/maxLength, pattern, format, minimum, maximum), and requests that are
 * such a value with one part replaced by something hostile: valid values carry the hostile
 * one past the outer checks, to every field at every depth.
 */
import fc from "fast-check";
import { bodyBytes, hostileKey, hostileLike, hostileValue } from "./hostile";

export interface JsonSchema {
  type?: string | string[];
  properties?: Record<string, JsonSchema>;
  required?: string[];
  additionalProperties?: boolean | JsonSchema;
  enum?: unknown[];
  const?: unknown;
  anyOf?: JsonSchema[];
  oneOf?: JsonSchema[];
  items?: JsonSchema;
  minItems?: number;
  maxItems?: number;
  minLength?: number;
  maxLength?: number;
  pattern?: string;
  format?: string;
  minimum?: number;
  maximum?: number;
}

/**
 * Values worth reaching the handlers with: ids of rows that exist, domain ids, job ids, a
 * real cursor. `byName` holds those of a field or parameter name (`companyId`, `cursor`),
 * tried first for a field of that name, so that a request's valid parts agree with each other.
 */
export interface KnownValues {
  uuids: string[];
  strings: string[];
  byName: Record<string, unknown[]>;
}

const STORABLE_PATTERN = "^[^\\u0000\\uD800-\\uDFFF]*$";

const matchingCache = new Map<string, fc.Arbitrary<string>>();
/** Strings matching `pattern` (built once per pattern: fc.stringMatching compiles it). */
function matching(pattern: string): fc.Arbitrary<string> {
  let arbitrary = matchingCache.get(pattern);
  if (!arbitrary) matchingCache.set(pattern, (arbitrary = fc.stringMatching(new RegExp(pattern))));
  return arbitrary;
}

function stringValue(schema: JsonSchema, known: KnownValues): fc.Arbitrary<unknown> {
  if (schema.format === "uuid") return fc.oneof(fc.constantFrom(...known.uuids), fc.uuid());
  if (schema.format === "date-time") {
    return fc
      .date({ min: new Date("2000-01-01"), max: new Date("2100-01-01"), noInvalidDate: true })
      .map((d) => d.toISOString());
  }
  const minLength = schema.minLength ?? 0;
  const maxLength = Math.min(schema.maxLength ?? 40, 40);
  if (schema.pattern && schema.pattern !== STORABLE_PATTERN) return matching(schema.pattern);
  const fitting = known.strings.filter((s) => s.length >= minLength && s.length <= (schema.maxLength ?? 1e9));
  const random = fc.string({ minLength, maxLength: Math.max(minLength, maxLength) });
  return fitting.length ? fc.oneof(fc.constantFrom(...fitting), random) : random;
}

/** A value `schema` accepts (mostly a known one for a field called `name`). */
export function validValue(schema: JsonSchema, known: KnownValues, name?: string): fc.Arbitrary<unknown> {
  const named = name === undefined ? undefined : known.byName[name];
  if (named?.length) {
    return fc.oneof(
      { weight: 9, arbitrary: fc.constantFrom(...named) },
      { weight: 1, arbitrary: validValue(schema, known) },
    );
  }
  if ("const" in schema) return fc.constant(schema.const);
  if (schema.enum) return fc.constantFrom(...schema.enum);
  const union = schema.anyOf ?? schema.oneOf;
  if (union) return fc.oneof(...union.map((s) => validValue(s, known)));
  const types = [schema.type ?? []].flat();
  if (types.length > 1) return fc.oneof(...types.map((type) => validValue({ ...schema, type }, known)));
  switch (types[0]) {
    case "string":
      return stringValue(schema, known);
    case "integer":
      return fc.integer({
        min: Math.max(schema.minimum ?? -1e6, Number.MIN_SAFE_INTEGER),
        max: Math.min(schema.maximum ?? 1e6, Number.MAX_SAFE_INTEGER),
      });
    case "number":
      return fc.double({
        min: schema.minimum ?? -1e6,
        max: schema.maximum ?? 1e6,
        noNaN: true,
        noDefaultInfinity: true,
      });
    case "boolean":
      return fc.boolean();
    case "null":
      return fc.constant(null);
    case "array":
      return fc.array(validValue(schema.items ?? {}, known), {
        minLength: schema.minItems ?? 0,
        maxLength: Math.max(schema.minItems ?? 0, Math.min(schema.maxItems ?? 3, 3)),
      });
    case "object":
      return objectValue(schema, known);
    default:
      return fc.jsonValue({ maxDepth: 2 });
  }
}

function objectValue(schema: JsonSchema, known: KnownValues): fc.Arbitrary<unknown> {
  const properties = schema.properties ?? {};
  const declared = fc.record(
    Object.fromEntries(Object.entries(properties).map(([name, s]) => [name, validValue(s, known, name)])),
    { requiredKeys: (schema.required ?? []).filter((name) => name in properties) },
  );
  const extra = schema.additionalProperties;
  if (!extra || Object.keys(properties).length > 0) return declared;
  // A free-form object (metadata): a few keys of any JSON.
  return fc.dictionary(fc.string({ maxLength: 8 }), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 4 });
}

type Path = (string | number)[];

/** Every place in `value` a part can be replaced at: the root, each property, each item. */
function places(value: unknown, path: Path = [], out: Path[] = []): Path[] {
  out.push(path);
  if (Array.isArray(value)) value.forEach((item, i) => places(item, [...path, i], out));
  else if (value && typeof value === "object") {
    for (const [key, item] of Object.entries(value)) places(item, [...path, key], out);
  }
  return out;
}

function valueAt(root: unknown, path: Path): unknown {
  return path.reduce<unknown>((node, key) => (node as Record<string | number, unknown>)[key], root);
}

function clone(value: unknown): unknown {
  return value === undefined ? undefined : structuredClone(value);
}

function parentOf(root: unknown, path: Path): Record<string | number, unknown> {
  let node = root as Record<string | number, unknown>;
  for (const key of path.slice(0, -1)) node = node[key] as Record<string | number, unknown>;
  return node;
}

function replaced(value: unknown, path: Path, part: unknown): unknown {
  if (path.length === 0) return part;
  const copy = clone(value);
  parentOf(copy, path)[path.at(-1)!] = part;
  return copy;
}

function removed(value: unknown, path: Path): unknown {
  const copy = clone(value);
  const parent = parentOf(copy, path);
  if (Array.isArray(parent)) parent.splice(Number(path.at(-1)), 1);
  else delete parent[path.at(-1)!];
  return copy;
}

function added(value: unknown, path: Path, key: string, part: unknown): unknown {
  const copy = clone(value);
  const node = valueAt(copy, path);
  if (node && typeof node === "object" && !Array.isArray(node)) {
    Object.defineProperty(node, key, { value: part, enumerable: true, writable: true, configurable: true });
  }
  return copy;
}

/**
 * Hostile values for a field called `name`: any hostile value, and when the field has known
 * opaque tokens (base64url JSON, like cursors), forgeries of them: the decoded JSON with one
 * part made hostile, encoded again, so that the decoder's checks are what is tested.
 */
export function hostileFor(
  name: string | number | undefined,
  known: KnownValues,
  original?: unknown,
): fc.Arbitrary<unknown> {
  const decoded = (typeof name === "string" ? (known.byName[name] ?? []) : []).flatMap((token) => {
    if (typeof token !== "string") return [];
    try {
      const value: unknown = JSON.parse(Buffer.from(token, "base64url").toString("utf8"));
      return value !== null && typeof value === "object" ? [value] : [];
    } catch {
      return [];
    }
  });
  const hostile = original === undefined ? hostileValue : hostileLike(original);
  if (!decoded.length) return hostile;
  const forged = fc
    .constantFrom(...decoded)
    .chain((value) => mutations(value, known, { root: false }))
    .map((value) => bodyBytes(value).toString("base64url"));
  return fc.oneof({ weight: 1, arbitrary: hostile }, { weight: 2, arbitrary: forged });
}

/**
 * A value of `schema` as sent: sometimes valid as it is, mostly with one part replaced by a
 * hostile value, removed, or joined by a hostile property.
 */
export function hostileInstance(schema: JsonSchema, known: KnownValues): fc.Arbitrary<unknown> {
  return validValue(schema, known).chain((valid) => mutations(valid, known));
}

/**
 * `valid` as it is, or with one part replaced by a hostile value, removed, or joined by a
 * hostile property (`root: false`: never replaced as a whole).
 */
function mutations(valid: unknown, known: KnownValues, { root = true } = {}): fc.Arbitrary<unknown> {
  const spots = places(valid).filter((p) => root || p.length > 0);
  const inner = spots.filter((p) => p.length > 0);
  const objects = spots.filter((p) => {
    const node = valueAt(valid, p);
    return node !== null && typeof node === "object" && !Array.isArray(node);
  });
  const choices = [
    { weight: 1, arbitrary: fc.constant(valid) },
    {
      weight: 8,
      arbitrary: fc
        .constantFrom(...spots)
        .chain((p) => hostileFor(p.at(-1), known, valueAt(valid, p)).map((h) => replaced(valid, p, h))),
    },
  ];
  if (inner.length) {
    choices.push({ weight: 1, arbitrary: fc.constantFrom(...inner).map((p) => removed(valid, p)) });
  }
  if (objects.length) {
    choices.push({
      weight: 1,
      arbitrary: fc
        .tuple(fc.constantFrom(...objects), hostileKey, hostileValue)
        .map(([p, k, h]) => added(valid, p, k, h)),
    });
  }
  return fc.oneof(...choices);
}
