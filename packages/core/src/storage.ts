/**
 * Paperclip's storage (PAPERCLIP_STORAGE_*), as the platform and the domains that read it
 * share it: restore points live there, and so do durable skill packages.
 */
import {
  createStorageProvider,
  readStorageConfig,
  type LoadInstanceKeyOptions,
  type StorageConfig,
  type StorageProvider,
} from "@reclaim/shared";
import { serviceOptions } from "./config/service";
import type { Env } from "./config";

/** Paperclip's storage settings, as @reclaim/shared reads them (a bad one is a ConfigError). */
export function readPaperclipStorage(env: Env): StorageConfig {
  return readStorageConfig(env, { instanceRoot: serviceOptions.instanceRoot.read(env) });
}

const providers = new WeakMap<StorageConfig, StorageProvider>();

/** One provider per configuration (a process reads its configuration once). */
export function storageFor(config: StorageConfig): StorageProvider {
  let provider = providers.get(config);
  if (!provider) {
    provider = createStorageProvider(config);
    providers.set(config, provider);
  }
  return provider;
}

/**
 * Where the instance secrets key comes from, as Paperclip reads it: only the two variables
 * that name it, and the instance root its default key file lives under.
 */
export function instanceKeyOptions(env: Env): LoadInstanceKeyOptions {
  const keyEnv: NodeJS.ProcessEnv = {};
  for (const name of ["PAPERCLIP_SECRETS_MASTER_KEY", "PAPERCLIP_SECRETS_MASTER_KEY_FILE"]) {
    if (env[name] !== undefined) keyEnv[name] = env[name];
  }
  return { env: keyEnv, instanceRoot: serviceOptions.instanceRoot.read(env) };
}
