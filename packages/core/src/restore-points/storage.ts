/** The storage provider this process uses for restore points: one per configuration (a process reads its configuration once). */
import { createStorageProvider, type StorageConfig, type StorageProvider } from "@reclaim/shared";

const providers = new WeakMap<StorageConfig, StorageProvider>();

export function storageFor(config: StorageConfig): StorageProvider {
  let provider = providers.get(config);
  if (!provider) {
    provider = createStorageProvider(config);
    providers.set(config, provider);
  }
  return provider;
}
