/**
 * Paperclip's storage (PAPERCLIP_STORAGE_*), as the domains that read it share it: restore
 * points live there, and so do durable skill packages.
 */
import {
  ConfigError as SharedConfigError,
  createStorageProvider,
  readStorageConfig,
  type StorageConfig,
  type StorageProvider,
} from "@reclaim/shared";
import { serviceOptions } from "../config/service";
import type { Env } from "../config";
import { ConfigError } from "../errors";

/** Paperclip's storage settings, as @reclaim/shared reads them, failing as Reclaim's ConfigError. */
export function readPaperclipStorage(env: Env): StorageConfig {
  try {
    return readStorageConfig(env, { instanceRoot: serviceOptions.instanceRoot.read(env) });
  } catch (error) {
    if (error instanceof SharedConfigError) throw new ConfigError(error.variable, error.message);
    throw error;
  }
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
