import path from "node:path";
import { ConfigError, createStorageProvider, readStorageConfig } from "../../src";

function refusedVariable(fn: () => unknown): string {
  try {
    fn();
  } catch (error) {
    if (error instanceof ConfigError) return error.variable;
    throw error;
  }
  throw new Error("expected a ConfigError");
}

describe("readStorageConfig", () => {
  it("defaults to local_disk under <instanceRoot>/data/storage, as Paperclip does", () => {
    const config = readStorageConfig({}, { instanceRoot: "/srv/pc/instances/default" });
    expect(config).toEqual({
      provider: "local_disk",
      localDisk: { baseDir: "/srv/pc/instances/default/data/storage" },
    });
    expect(createStorageProvider(config).kind).toBe("local_disk");
  });

  it("takes PAPERCLIP_STORAGE_LOCAL_DIR over the instance root", () => {
    const config = readStorageConfig({ PAPERCLIP_STORAGE_LOCAL_DIR: "rel/dir" });
    expect(config).toEqual({ provider: "local_disk", localDisk: { baseDir: path.resolve("rel/dir") } });
  });

  it("reads every s3 variable", () => {
    const config = readStorageConfig({
      PAPERCLIP_STORAGE_PROVIDER: "s3",
      PAPERCLIP_STORAGE_S3_BUCKET: "b",
      PAPERCLIP_STORAGE_S3_REGION: "eu-west-1",
      PAPERCLIP_STORAGE_S3_ENDPOINT: "http://127.0.0.1:7480",
      PAPERCLIP_STORAGE_S3_PREFIX: "pc",
      PAPERCLIP_STORAGE_S3_FORCE_PATH_STYLE: "yes",
      AWS_ACCESS_KEY_ID: "id",
      AWS_SECRET_ACCESS_KEY: "secret",
    });
    expect(config).toEqual({
      provider: "s3",
      s3: {
        bucket: "b",
        region: "eu-west-1",
        endpoint: "http://127.0.0.1:7480",
        prefix: "pc",
        forcePathStyle: true,
        accessKeyId: "id",
        secretAccessKey: "secret",
        sessionToken: undefined,
      },
    });
    expect(createStorageProvider(config).kind).toBe("s3");
  });

  it.each([
    [{ PAPERCLIP_STORAGE_PROVIDER: "ftp" }, "PAPERCLIP_STORAGE_PROVIDER"],
    [{}, "PAPERCLIP_STORAGE_LOCAL_DIR"],
    [
      { PAPERCLIP_STORAGE_PROVIDER: "s3", PAPERCLIP_STORAGE_S3_ENDPOINT: "127.0.0.1:7480" },
      "PAPERCLIP_STORAGE_S3_ENDPOINT",
    ],
    [
      { PAPERCLIP_STORAGE_PROVIDER: "s3", PAPERCLIP_STORAGE_S3_FORCE_PATH_STYLE: "maybe" },
      "PAPERCLIP_STORAGE_S3_FORCE_PATH_STYLE",
    ],
    [{ PAPERCLIP_STORAGE_PROVIDER: "s3", AWS_ACCESS_KEY_ID: "only-id" }, "AWS_SECRET_ACCESS_KEY"],
  ])("refuses %j naming %s", (env, variable) => {
    expect(refusedVariable(() => readStorageConfig(env))).toBe(variable);
  });
});
