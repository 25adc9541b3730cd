import { randomUUID } from "node:crypto";
import { StorageError, StorageKey } from "../../src";

const company = randomUUID();

function refusal(fn: () => unknown): StorageError {
  try {
    fn();
  } catch (error) {
    if (error instanceof StorageError) return error;
    throw error;
  }
  throw new Error("expected a refusal");
}

describe("StorageKey", () => {
  it("scopes every key under companies/<companyId>/", () => {
    const key = StorageKey.of(company, "git-restore-points/ws-1/3/bundle");
    expect(key.path).toBe(`companies/${company}/git-restore-points/ws-1/3/bundle`);
    expect(StorageKey.parse(key.path)).toEqual(key);
  });

  it.each([
    "../other",
    "a/../../b",
    "./a",
    "/etc/passwd",
    "a\\b",
    "a//b",
    "a/",
    "",
    ".hidden/x",
    "a/.reclaim-tmp-1",
    "a b",
    "ä",
  ])("refuses the relative key %j", (relative) => {
    const error = refusal(() => StorageKey.of(company, relative));
    expect(error.code).toBe("RECLAIM_ERR_STORAGE_KEY_INVALID");
    expect(error.permanent).toBe(true);
  });

  it.each(["not-a-uuid", company.toUpperCase(), `${company}/x`, "", "../" + company])(
    "refuses the company id %j",
    (id) => {
      expect(refusal(() => StorageKey.of(id, "x")).code).toBe("RECLAIM_ERR_STORAGE_KEY_INVALID");
    },
  );

  it("cannot be parsed into another company's namespace from a crafted path", () => {
    const other = randomUUID();
    expect(refusal(() => StorageKey.parse(`companies/${company}/../${other}/x`)).code).toBe(
      "RECLAIM_ERR_STORAGE_KEY_INVALID",
    );
  });

  it("keeps a suffixed key in the same company", () => {
    const key = StorageKey.of(company, "rp/payload").withSuffix(".seal-header");
    expect(key.path).toBe(`companies/${company}/rp/payload.seal-header`);
  });
});
