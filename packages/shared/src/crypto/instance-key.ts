import { createHash, randomBytes, randomUUID } from "node:crypto";
import { chmod, link, open, readFile, stat, unlink } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { fsyncDir, mkdirDurable, type FsyncObserver } from "../durable-dirs";
import { ConfigError, errnoCode, SealError } from "../errors";

/** Where the instance key came from: restore points on s3 need "env" (see assertRestorePointsAllowed). */
export type InstanceKeySource = "env" | "file";

export interface InstanceKey {
  /** The 32-byte AES-256 key that wraps every restore point's data key. */
  key: Buffer;
  /**
   * SHA-256 of the key, lowercase hex. Stored beside each wrapped data key and in the ledger
   * so a restore can tell "wrong key" from "corrupt object"; its first 12 characters are the
   * fingerprint Paperclip prints when its own secrets fail to decrypt.
   */
  fingerprint: string;
  source: InstanceKeySource;
  /** The key file, when `source` is "file". */
  keyFilePath?: string;
}

export interface LoadInstanceKeyOptions {
  /** Environment to read. Default `process.env`. */
  env?: NodeJS.ProcessEnv;
  /**
   * Paperclip instance root (`~/.paperclip/instances/<id>`); the key file defaults to
   * `<instanceRoot>/secrets/master.key`. Needed only when neither PAPERCLIP_SECRETS_MASTER_KEY
   * nor PAPERCLIP_SECRETS_MASTER_KEY_FILE is set.
   */
  instanceRoot?: string;
  /** Test hook, never set in production: sees every file and directory fsynced. */
  testHooks?: { onFsync?: FsyncObserver };
}

const KEY_BYTES = 32;
const ENV_KEY = "PAPERCLIP_SECRETS_MASTER_KEY";
const ENV_FILE = "PAPERCLIP_SECRETS_MASTER_KEY_FILE";

/**
 * The instance secrets key, by Paperclip's rules: PAPERCLIP_SECRETS_MASTER_KEY when set
 * (32 bytes as base64, 64 hex characters, or 32 raw characters), else the key file
 * PAPERCLIP_SECRETS_MASTER_KEY_FILE (default `<instanceRoot>/secrets/master.key`). A missing
 * key file is created with a random key, base64 as Paperclip writes it, mode 0600 in a 0700
 * directory. Creation is race-free: the key is written to a private temporary file, fsynced
 * and linked into place, so two processes starting together end up with the same key, never
 * with one each or a half-written file. The directory is fsynced after the link (and every
 * directory created on the way into its parent), so the key survives a power loss: a key
 * lost after restore points were sealed with it would make them unreadable.
 *
 * @throws SealError RECLAIM_ERR_INSTANCE_KEY_INVALID when the variable or file holds no valid
 *   key (the message names the variable or file, never the value);
 *   RECLAIM_ERR_INSTANCE_KEY_IO when the file cannot be read or created.
 */
export async function loadInstanceKey(options: LoadInstanceKeyOptions = {}): Promise<InstanceKey> {
  const env = options.env ?? process.env;
  const inline = env[ENV_KEY]?.trim();
  if (inline) {
    const key = decodeInstanceKey(inline);
    if (!key) {
      throw new SealError(
        "RECLAIM_ERR_INSTANCE_KEY_INVALID",
        `${ENV_KEY} must be 32 bytes as base64, 64 hex characters, or 32 raw characters`,
      );
    }
    return { key, fingerprint: fingerprintOf(key), source: "env" };
  }
  const keyFilePath = resolveKeyFile(env, options.instanceRoot);
  const key =
    (await readKeyFile(keyFilePath)) ?? (await createKeyFile(keyFilePath, options.testHooks?.onFsync));
  return { key, fingerprint: fingerprintOf(key), source: "file", keyFilePath };
}

/**
 * Paperclip's accepted encodings, tried in its order and with its (lenient) base64 decoder:
 * hex, base64, raw 32 characters. Any other rule could turn the same configured value into
 * different key bytes here than in Paperclip.
 */
export function decodeInstanceKey(raw: string): Buffer | null {
  const trimmed = raw.trim();
  if (!trimmed) return null;
  if (/^[A-Fa-f0-9]{64}$/.test(trimmed)) return Buffer.from(trimmed, "hex");
  const decoded = Buffer.from(trimmed, "base64");
  if (decoded.length === KEY_BYTES) return decoded;
  if (Buffer.byteLength(trimmed, "utf8") === KEY_BYTES) return Buffer.from(trimmed, "utf8");
  return null;
}

export function fingerprintOf(key: Buffer): string {
  return createHash("sha256").update(key).digest("hex");
}

function resolveKeyFile(env: NodeJS.ProcessEnv, instanceRoot: string | undefined): string {
  const configured = env[ENV_FILE]?.trim();
  if (configured) {
    const expanded =
      configured === "~" || configured.startsWith("~/")
        ? path.join(os.homedir(), configured.slice(1))
        : configured;
    return path.resolve(expanded);
  }
  if (!instanceRoot)
    throw new ConfigError(ENV_FILE, `must be set when ${ENV_KEY} is unset and no instance root is given`);
  return path.resolve(instanceRoot, "secrets", "master.key");
}

async function readKeyFile(file: string): Promise<Buffer | null> {
  let raw: string;
  try {
    raw = await readFile(file, "utf8");
  } catch (error) {
    if (errnoCode(error) === "ENOENT") return null;
    throw new SealError("RECLAIM_ERR_INSTANCE_KEY_IO", `reading ${file}: ${errnoCode(error) ?? error}`, {
      cause: error,
    });
  }
  const key = decodeInstanceKey(raw);
  if (!key) throw new SealError("RECLAIM_ERR_INSTANCE_KEY_INVALID", `${file} holds no valid 32-byte key`);
  // Paperclip tightens a readable key file the same way, best effort.
  const mode = await stat(file).then(
    (s) => s.mode & 0o777,
    () => 0o600,
  );
  if ((mode & 0o077) !== 0) await chmod(file, 0o600).catch(() => undefined);
  return key;
}

async function createKeyFile(file: string, onFsync: FsyncObserver | undefined): Promise<Buffer> {
  const dir = path.dirname(file);
  const temp = path.join(dir, `.master.key.${randomUUID()}.tmp`);
  try {
    await mkdirDurable(dir, 0o700, onFsync);
    const handle = await open(temp, "wx", 0o600);
    try {
      await handle.writeFile(randomBytes(KEY_BYTES).toString("base64"), "utf8");
      await handle.sync();
    } finally {
      await handle.close();
    }
    onFsync?.(temp);
    await link(temp, file).catch((error: unknown) => {
      // Another process created the key first: theirs is the key.
      if (errnoCode(error) !== "EEXIST") throw error;
    });
    await unlink(temp);
    await fsyncDir(dir, onFsync); // the link (and the temporary's removal) made durable
  } catch (error) {
    throw new SealError("RECLAIM_ERR_INSTANCE_KEY_IO", `creating ${file}: ${errnoCode(error) ?? error}`, {
      cause: error,
    });
  } finally {
    await unlink(temp).catch(() => undefined);
  }
  const key = await readKeyFile(file);
  if (!key) throw new SealError("RECLAIM_ERR_INSTANCE_KEY_IO", `${file} vanished right after creation`);
  return key;
}
