/**
 * Hostile values for the OpenAPI fuzz test (openapi-fuzz.test.ts): what a careless or
 * malicious client can put into any field of a body, a query or a path. Each is either a
 * JSON value or `Raw` JSON text that JSON.stringify cannot produce (nesting deeper than its
 * recursion limit, a number literal no double holds, bytes that are not UTF-8).
 */
import fc from "fast-check";

/**
 * JSON text spliced into a body as it is, or the bytes sent for a path or query value.
 * (No toJSON: JSON.stringify would call it before jsonText's replacer sees the value.)
 */
export class Raw {
  constructor(
    readonly text: string,
    readonly label: string,
  ) {}
}

const nested = (depth: number, open: string, close: string, leaf: string) =>
  new Raw(open.repeat(depth) + leaf + close.repeat(depth), `nested ${depth}`);

const TRAVERSAL = [
  "..",
  ".",
  "../../etc/passwd",
  "..\\..\\windows\\win.ini",
  "/etc/passwd",
  "..%2f..%2fetc%2fpasswd",
  "%2e%2e/%2e%2e/etc",
  "....//....//etc",
  "a/../../../b",
  "native-workspace-sync/../../etc",
  "~root/.ssh/id_rsa",
  "file:///etc/passwd",
];

const STRANGE_STRINGS = [
  "",
  " ",
  "\t\n\r",
  "null",
  "undefined",
  "true",
  "0",
  "-1",
  "NaN",
  "Infinity",
  "1e400",
  "0x10",
  "__proto__",
  "constructor",
  "prototype",
  "' OR 1=1 --",
  '"; DROP TABLE reclaim_deadlines; --',
  "%s%n%x",
  "${process.env}",
  "<script>alert(1)</script>",
  "\u202eevil",
  "\ufeffbom",
  "ok \ud83d\ude00",
  "instance",
  "sweep--native-workspace-sync--instance",
  "native-workspace-sync--instance",
  "a:b",
  "a--b--c--d",
];

/** Strings PostgreSQL cannot store or UTF-8 cannot carry. */
const UNSTORABLE = fc.oneof(
  fc.constantFrom("\u0000", "a\u0000b", "\ud800", "\udfff", "x\udc00y", "\udc00\ud800", "\ud83d"),
  fc
    .tuple(fc.string({ maxLength: 20 }), fc.constantFrom("\u0000", "\ud800", "\udbff", "\udc00"))
    .map(([s, bad]) => s + bad + s),
);

const EXTREME_DATES = fc.oneof(
  fc.constantFrom(
    "0000-01-01T00:00:00Z",
    "0001-01-01T00:00:00Z",
    "0001-01-01T00:30:00+01:00",
    "9999-12-31T23:59:59Z",
    "9999-12-31T23:59:59.999Z",
    "9999-12-31T23:00:00-01:00",
    "+275760-09-13T00:00:00.000Z",
    "-271821-04-20T00:00:00.000Z",
    "-000001-01-01T00:00:00Z",
    "2020-02-30T00:00:00Z",
    "2020-01-01T24:00:00Z",
    "2020-01-01T00:00:60Z",
    "2020-01-01T00:00:00.123456789Z",
    "2020-01-01T00:00:00+14:00",
    "2020-01-01",
    "1970-01-01T00:00:00Z",
  ),
  fc
    .date({ min: new Date(-8.64e15), max: new Date(8.64e15), noInvalidDate: true })
    .map((d) => d.toISOString()),
);

const EXTREME_NUMBERS = fc.oneof(
  fc.constantFrom(
    0,
    -0,
    -1,
    0.5,
    1e308,
    -1e308,
    2 ** 31 - 1,
    2 ** 31,
    -(2 ** 31) - 1,
    2 ** 53,
    2 ** 53 + 2,
    -(2 ** 53) - 2,
    Number.MIN_VALUE,
    1e21,
  ),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.integer(),
  fc.constantFrom(
    new Raw("1e400", "1e400"),
    new Raw("-1e400", "-1e400"),
    new Raw("123456789012345678901234567890", "30 digits"),
    new Raw("1.0", "1.0"),
    new Raw("-0.0", "-0.0"),
  ),
);

const DEEP = fc.oneof(
  fc.constantFrom(31, 32, 33, 64, 123, 124, 600).map((depth) => nested(depth, '{"d":', "}", "1")),
  fc.constantFrom(33, 500, 20_000).map((depth) => nested(depth, "[", "]", "0")),
  fc.constant(nested(20_000, '{"d":', "}", "null")),
);

const LONG = fc.oneof(
  fc.constantFrom(101, 201, 301, 501, 4097, 70 * 1024).map((n) => "x".repeat(n)),
  fc.constantFrom(300, 5000).map((n) => "é".repeat(n)),
  fc.constantFrom(100, 1000).map((n) => "../".repeat(n)),
  // Over the 1 MiB body limit (a 413 for a body, a too-long URL for a path or query).
  fc.constant("y".repeat(1024 * 1024 + 10)),
);

const WRONG_TYPES = fc.constantFrom<unknown>(
  null,
  true,
  false,
  [],
  {},
  [null],
  { a: 1 },
  [1, "a", null],
  { __proto__: { polluted: true } },
  JSON.parse('{"__proto__": {"polluted": true}}'),
  { constructor: { prototype: { polluted: true } } },
);

/** Not UTF-8 at all (a lone surrogate as CESU-8 bytes, an overlong NUL, a stray continuation byte). */
const NOT_UTF8 = fc.constantFrom(
  new Raw('"\xed\xa0\x80"', "CESU-8 surrogate"),
  new Raw('"\xc0\x80"', "overlong NUL"),
  new Raw('"\x80"', "stray continuation byte"),
);

/** Any hostile value, for any field. */
export const hostileValue: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 3, arbitrary: UNSTORABLE },
  { weight: 3, arbitrary: EXTREME_DATES },
  { weight: 3, arbitrary: EXTREME_NUMBERS },
  { weight: 2, arbitrary: DEEP },
  { weight: 2, arbitrary: LONG },
  { weight: 2, arbitrary: fc.constantFrom(...TRAVERSAL) },
  { weight: 2, arbitrary: fc.constantFrom(...STRANGE_STRINGS) },
  { weight: 2, arbitrary: WRONG_TYPES },
  { weight: 1, arbitrary: NOT_UTF8 },
  { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 3 }) },
);

/**
 * A hostile value in place of `original`: mostly of the same JSON type (a string for a
 * string), which passes the type check and tests what the content checks let through.
 */
export function hostileLike(original: unknown): fc.Arbitrary<unknown> {
  if (typeof original === "string") {
    const strings = fc.oneof(
      UNSTORABLE,
      EXTREME_DATES,
      LONG,
      fc.constantFrom(...TRAVERSAL, ...STRANGE_STRINGS),
    );
    return fc.oneof({ weight: 3, arbitrary: strings }, { weight: 1, arbitrary: hostileValue });
  }
  if (typeof original === "number") {
    return fc.oneof({ weight: 3, arbitrary: EXTREME_NUMBERS }, { weight: 1, arbitrary: hostileValue });
  }
  return hostileValue;
}

/** A hostile object key (an extra or renamed property). */
export const hostileKey: fc.Arbitrary<string> = fc.oneof(
  UNSTORABLE,
  fc.constantFrom("__proto__", "constructor", "prototype", "", "x".repeat(5000), ...TRAVERSAL),
  fc.string({ maxLength: 10 }),
);

/**
 * `value` as JSON text with its `Raw` parts spliced in, as a latin1 string when a part
 * carries bytes that are not UTF-8 (`bodyBytes` turns it into the bytes to send).
 */
export function jsonText(value: unknown): string {
  const raws: Raw[] = [];
  const marker = (i: number) => `@@raw-${i}-c0ffee@@`;
  const text = JSON.stringify(value, (_key, v: unknown) => {
    if (v instanceof Raw) {
      raws.push(v);
      return marker(raws.length - 1);
    }
    return v;
  });
  if (text === undefined) return "null";
  return raws.reduce((t, raw, i) => t.replace(JSON.stringify(marker(i)), () => raw.text), text);
}

/** The bytes of a body: UTF-8, except `\x80`-`\xff` characters that a Raw put there on purpose. */
export function bodyBytes(value: unknown): Buffer {
  const text = jsonText(value);
  const raw = containsRawBytes(value);
  return raw ? Buffer.from(text, "latin1") : Buffer.from(text, "utf8");
}

function containsRawBytes(value: unknown): boolean {
  if (value instanceof Raw) return /[\x80-\xff]/.test(value.text);
  if (Array.isArray(value)) return value.some(containsRawBytes);
  if (value && typeof value === "object") return Object.values(value).some(containsRawBytes);
  return false;
}

/** A path or query value as the client would send it: percent-encoded, like `percentEncode`. */
export function paramText(value: unknown): string {
  if (typeof value === "string") return percentEncode(value);
  if (value instanceof Raw) return percentEncode(value.text, /[\x80-\xff]/.test(value.text));
  return percentEncode(jsonText(value));
}

/**
 * Percent-encodes every byte but the unreserved ones. Lone surrogates become their
 * (invalid) three-byte encodings, as a client that does not check would send them; with
 * `latin1`, characters up to U+00FF are single bytes (for Raw values that are not UTF-8).
 */
export function percentEncode(text: string, latin1 = false): string {
  const hex = (bytes: number[]) =>
    bytes.map((b) => `%${b.toString(16).toUpperCase().padStart(2, "0")}`).join("");
  let out = "";
  for (const char of text) {
    // for..of yields a paired surrogate as one string and a lone one on its own.
    const unit = char.charCodeAt(0);
    if (/^[A-Za-z0-9\-._~]$/.test(char)) out += char;
    else if (char.length === 1 && unit >= 0xd800 && unit <= 0xdfff)
      out += hex([0xe0 | (unit >> 12), 0x80 | ((unit >> 6) & 0x3f), 0x80 | (unit & 0x3f)]);
    else if (latin1 && unit <= 0xff) out += hex([unit]);
    else out += hex([...Buffer.from(char, "utf8")]);
  }
  return out;
}
