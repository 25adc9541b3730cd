import path from "node:path";
import { ConfigError } from "../errors";
import { createLocalDiskProvider, type LocalDiskOptions } from "./local-disk";
import type { StorageProvider } from "./provider";
import { createS3Provider, type S3Options } from "./s3";

export type StorageConfig =
  { provider: "local_disk"; localDisk: LocalDiskOptions } | { provider: "s3"; s3: S3Options };

export interface StorageEnvOptions {
  /**
   * Paperclip instance root (`~/.paperclip/instances/<id>`); local_disk defaults to
   * `<instanceRoot>/data/storage` as Paperclip does. Needed only when
   * PAPERCLIP_STORAGE_LOCAL_DIR is unset.
   */
  instanceRoot?: string;
}

/**
 * Storage settings from Paperclip's variables, validated here so a typo fails at start-up
 * with the variable's name instead of at the first upload:
 *
 * | variable | default | meaning |
 * | --- | --- | --- |
 * | PAPERCLIP_STORAGE_PROVIDER | `local_disk` | `local_disk` or `s3` |
 * | PAPERCLIP_STORAGE_LOCAL_DIR | `<instanceRoot>/data/storage` | local_disk base directory |
 * | PAPERCLIP_STORAGE_S3_BUCKET | `paperclip` | bucket (must exist) |
 * | PAPERCLIP_STORAGE_S3_REGION | `us-east-1` | signing region |
 * | PAPERCLIP_STORAGE_S3_ENDPOINT | AWS S3 | `http(s)://host[:port]` of an S3-compatible server |
 * | PAPERCLIP_STORAGE_S3_PREFIX | none | key prefix inside the bucket |
 * | PAPERCLIP_STORAGE_S3_FORCE_PATH_STYLE | `false` | `true`/`false`/`1`/`0`/`yes`/`no` |
 * | AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY | none | both or neither; AWS_SESSION_TOKEN optional |
 *
 * Paperclip reads S3 credentials through the AWS SDK's default chain; only its environment
 * variables are supported here (no profiles or instance metadata).
 */
export function readStorageConfig(env: NodeJS.ProcessEnv, options: StorageEnvOptions = {}): StorageConfig {
  const provider = value(env, "PAPERCLIP_STORAGE_PROVIDER") ?? "local_disk";
  if (provider === "local_disk") {
    const dir = value(env, "PAPERCLIP_STORAGE_LOCAL_DIR");
    if (!dir && !options.instanceRoot) {
      throw new ConfigError("PAPERCLIP_STORAGE_LOCAL_DIR", "must be set when no instance root is given");
    }
    return {
      provider,
      localDisk: { baseDir: path.resolve(dir ?? path.join(options.instanceRoot!, "data", "storage")) },
    };
  }
  if (provider !== "s3") {
    throw new ConfigError(
      "PAPERCLIP_STORAGE_PROVIDER",
      `must be "local_disk" or "s3" (got ${JSON.stringify(provider)})`,
    );
  }
  const endpoint = value(env, "PAPERCLIP_STORAGE_S3_ENDPOINT");
  if (endpoint !== undefined && !isHttpUrl(endpoint)) {
    throw new ConfigError(
      "PAPERCLIP_STORAGE_S3_ENDPOINT",
      `must be an http:// or https:// URL (got ${JSON.stringify(endpoint)})`,
    );
  }
  const accessKeyId = value(env, "AWS_ACCESS_KEY_ID");
  const secretAccessKey = value(env, "AWS_SECRET_ACCESS_KEY");
  if ((accessKeyId === undefined) !== (secretAccessKey === undefined)) {
    throw new ConfigError(
      accessKeyId === undefined ? "AWS_ACCESS_KEY_ID" : "AWS_SECRET_ACCESS_KEY",
      "must be set together with its pair (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY)",
    );
  }
  return {
    provider,
    s3: {
      bucket: value(env, "PAPERCLIP_STORAGE_S3_BUCKET") ?? "paperclip",
      region: value(env, "PAPERCLIP_STORAGE_S3_REGION") ?? "us-east-1",
      endpoint,
      prefix: value(env, "PAPERCLIP_STORAGE_S3_PREFIX") ?? "",
      forcePathStyle: booleanValue(env, "PAPERCLIP_STORAGE_S3_FORCE_PATH_STYLE") ?? false,
      accessKeyId,
      secretAccessKey,
      sessionToken: value(env, "AWS_SESSION_TOKEN"),
    },
  };
}

export function createStorageProvider(config: StorageConfig): StorageProvider {
  return config.provider === "s3" ? createS3Provider(config.s3) : createLocalDiskProvider(config.localDisk);
}

/** Blank counts as unset, as in Paperclip. */
function value(env: NodeJS.ProcessEnv, name: string): string | undefined {
  const raw = env[name]?.trim();
  return raw ? raw : undefined;
}

function booleanValue(env: NodeJS.ProcessEnv, name: string): boolean | undefined {
  const raw = value(env, name)?.toLowerCase();
  if (raw === undefined) return undefined;
  if (raw === "true" || raw === "1" || raw === "yes") return true;
  if (raw === "false" || raw === "0" || raw === "no") return false;
  throw new ConfigError(name, `must be true, false, 1, 0, yes or no (got ${JSON.stringify(raw)})`);
}

function isHttpUrl(raw: string): boolean {
  try {
    const url = new URL(raw);
    return (url.protocol === "http:" || url.protocol === "https:") && url.pathname === "/" && !url.search;
  } catch {
    return false;
  }
}
