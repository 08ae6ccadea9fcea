/**
 * For the suites that talk to a real Redis (`REDIS_URL`). Without `REDIS_URL` they skip, and say so once; with it
 * they run, and an unreachable server fails them. Every suite writes under a key prefix of its own, so parallel
 * runs never meet, and deletes exactly those keys afterwards: never FLUSHDB.
 */
import { randomBytes } from 'node:crypto';
import { createClient } from '@redis/client';
import { afterAll, beforeAll } from 'vitest';

export const REDIS_URL: string | undefined = process.env.REDIS_URL || undefined;

/** True when the Redis suites must skip; prints why, once per test file. */
export function withoutRedis(suite: string): boolean {
  if (REDIS_URL !== undefined) return false;
  console.warn(`${suite}: skipped, REDIS_URL is not set (e.g. REDIS_URL=redis://127.0.0.1:6379 npx vitest run)`);
  return true;
}

/** A key prefix no other run uses. */
export function uniquePrefix(label: string): string {
  return `mcp-fleet-test:${label}:${randomBytes(6).toString('hex')}:`;
}

/** `url` with another logical database (`/9`), keeping host, port and credentials. */
export function withDatabase(url: string, database: number): string {
  const parsed = new URL(url);
  parsed.pathname = `/${database}`;
  return parsed.toString();
}

/** A plain connection of the test's own, to look at what the stores wrote. Close it with `close()`. */
export async function rawClient(url = REDIS_URL as string) {
  // No retries: an unreachable REDIS_URL fails the suite at once instead of hanging it.
  const client = createClient({ url, socket: { reconnectStrategy: false, connectTimeout: 2000 } });
  client.on('error', () => {});
  await client.connect();
  return client;
}

/** SCAN's MATCH pattern of the keys that start with `prefix`. */
function startingWith(prefix: string): string {
  return `${prefix.replace(/[*?[\]\\]/g, '\\$&')}*`;
}

/** Every key that starts with `prefix`. */
export async function keysStartingWith(prefix: string, url = REDIS_URL as string): Promise<string[]> {
  const client = await rawClient(url);
  try {
    const found: string[] = [];
    for await (const keys of client.scanIterator({ MATCH: startingWith(prefix), COUNT: 1000 })) found.push(...keys);
    return found.sort();
  } finally {
    await client.close();
  }
}

/** Deletes every key that starts with `prefix`, and only those. */
export async function deleteKeys(prefix: string, url = REDIS_URL as string): Promise<void> {
  const keys = await keysStartingWith(prefix, url);
  if (keys.length === 0) return;
  const client = await rawClient(url);
  try {
    for (let i = 0; i < keys.length; i += 500) await client.unlink(keys.slice(i, i + 500));
  } finally {
    await client.close();
  }
}

/**
 * For a suite whose servers write under the default prefix into a database of `url`: remembers the keys there
 * before the suite and, after it, deletes only the keys that appeared meanwhile. Call inside the describe block.
 */
export function removeKeysAddedDuring(url: string, prefix = 'mcp-fleet:'): void {
  let before = new Set<string>();
  beforeAll(async () => {
    before = new Set(await keysStartingWith(prefix, url));
  });
  afterAll(async () => {
    const added = (await keysStartingWith(prefix, url)).filter((key) => !before.has(key));
    if (added.length === 0) return;
    const client = await rawClient(url);
    try {
      await client.unlink(added);
    } finally {
      await client.close();
    }
  });
}
