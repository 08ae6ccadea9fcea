import { randomBytes } from 'node:crypto';
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { FleetOptions } from '@mcp-fleet/core';
import { ConfigError, type ServerConfig } from './config.js';

/**
 * The key an SQLite store (the embedded default, or `sqlite://PATH`) generates beside its file when
 * MCP_FLEET_ENCRYPTION_KEY is not set: the secrets in the file are encrypted under it. Lose it and they cannot be
 * read again.
 */
export const GENERATED_KEY_FILE = 'encryption.key';

const BASE64_KEY = /^[A-Za-z0-9+/]{43}=$/;

/** The generated key of an SQLite store: read if it exists, else written once (mode 0600) and read back. */
function generatedKey(storePath: string): string {
  const path = join(dirname(storePath), GENERATED_KEY_FILE);
  let text: string;
  try {
    text = readFileSync(path, 'utf8').trim();
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw new ConfigError(`cannot read the encryption key ${path}: ${(error as Error).message}`);
    mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
    try {
      // `wx`: a server and the key CLI starting together cannot both write one; the loser reads the winner's.
      writeFileSync(path, `${randomBytes(32).toString('base64')}\n`, { mode: 0o600, flag: 'wx' });
    } catch (raced) {
      if ((raced as NodeJS.ErrnoException).code !== 'EEXIST') throw new ConfigError(`cannot write the encryption key ${path}: ${(raced as Error).message}`);
    }
    // The mode is asked for at creation, but a umask cannot widen it; this makes sure nothing did.
    chmodSync(path, 0o600);
    text = readFileSync(path, 'utf8').trim();
  }
  if (!BASE64_KEY.test(text)) throw new ConfigError(`${path} is not a base64 key of 32 bytes; restore it from a backup (the store's secrets need it)`);
  return text;
}

/** `encryptionKey` and `previousKeys` from MCP_FLEET_ENCRYPTION_KEY and MCP_FLEET_PREVIOUS_ENCRYPTION_KEYS, or an SQLite store's generated key. */
export function encryptionOptions(config: ServerConfig): Pick<FleetOptions, 'encryptionKey' | 'previousKeys'> {
  const previousKeys = config.previousEncryptionKeys;
  if (config.encryptionKey !== undefined) return { encryptionKey: config.encryptionKey, previousKeys };
  // A store in a file keeps its key beside it, as the embedded default always did: the file alone opens nothing.
  if (config.store.kind === 'sqlite' && config.store.path !== ':memory:') return { encryptionKey: generatedKey(config.store.path), previousKeys };
  // Nothing of memory:// (or an SQLite :memory:) outlives the process, nor does a key of its own: encrypted all the
  // same, and no warning.
  if (config.store.kind === 'memory' || config.store.kind === 'sqlite') return { encryptionKey: randomBytes(32), previousKeys };
  // Redis: nowhere of its own to keep a key; the fleet warns at start that secrets are stored in plaintext.
  return { previousKeys };
}
