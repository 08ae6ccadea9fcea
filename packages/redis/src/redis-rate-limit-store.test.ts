import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { RateLimitStore } from '@mcp-fleet/core';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { rateLimitStoreContract } from '@mcp-fleet/core/testing';
import { deleteKeys, keysStartingWith, rawClient, REDIS_URL, uniquePrefix, withoutRedis } from '../../../test/support/redis.js';
import { createRedisStore, RedisRateLimitStore, type RedisStore } from './index.js';

const skip = withoutRedis('RedisRateLimitStore');
const url = REDIS_URL as string;
const PREFIX = uniquePrefix('ratelimit');

afterAll(async () => {
  if (!skip) await deleteKeys(PREFIX);
});

/** The counters of a storage of its own, whose close also closes the connection. */
async function openCounters(keyPrefix: string): Promise<RateLimitStore> {
  const redis = await createRedisStore({ url, keyPrefix });
  return { consume: (counters, expiresAt, cost) => redis.rateLimits.consume(counters, expiresAt, cost), close: redis.close };
}

describe.skipIf(skip)('RedisRateLimitStore on a real Redis', () => {
  // The contract's counter keys differ per case, so one prefix serves them all. Windows run on Redis's clock.
  rateLimitStoreContract('RedisRateLimitStore', () => openCounters(PREFIX));

  describe('beyond the contract', () => {
    const toClose: RedisStore[] = [];
    afterEach(async () => {
      for (const r of toClose.splice(0)) await r.close();
    });
    const open = async (keyPrefix = PREFIX) => {
      const r = await createRedisStore({ url, keyPrefix });
      toClose.push(r);
      return r;
    };

    it('keeps one string counter per key under {prefix}ratelimit:, expiring at expiresAt', async () => {
      const p = `${PREFIX}layout:`;
      const { rateLimits } = await open(p);
      const expiresAt = Date.now() + 30_000;
      await rateLimits.consume([{ key: 'acct:acme:op:servers.create', limit: 10 }], expiresAt, 3);
      const key = `${p}ratelimit:acct:acme:op:servers.create`;
      expect(await keysStartingWith(p)).toEqual([key]);
      const client = await rawClient();
      try {
        expect(await client.get(key)).toBe('3');
        expect(Number(await client.sendCommand(['PEXPIRETIME', key]))).toBe(expiresAt);
      } finally {
        await client.close();
      }
    });

    it('cost 0 creates no counter, and a refusal creates none of the counters it names', async () => {
      const p = `${PREFIX}create-nothing:`;
      const { rateLimits } = await open(p);
      const expiresAt = Date.now() + 30_000;
      expect(await rateLimits.consume([{ key: 'peek', limit: 5 }], expiresAt, 0)).toEqual({ allowed: true, counts: [0] });
      expect(await rateLimits.consume([{ key: 'fresh', limit: 5 }, { key: 'too-small', limit: 1 }], expiresAt, 2)).toEqual({ allowed: false, counts: [0, 0] });
      expect(await keysStartingWith(p)).toEqual([]);
    });

    it('a limit of Infinity never binds', async () => {
      const { rateLimits } = await open();
      expect(await rateLimits.consume([{ key: 'unbounded', limit: Infinity }], Date.now() + 30_000, 1_000_000)).toEqual({ allowed: true, counts: [1_000_000] });
    });

    it('refuses a cost that is not a non-negative integer, and writes nothing', async () => {
      const p = `${PREFIX}bad-cost:`;
      const { rateLimits } = await open(p);
      for (const cost of [-1, 1.5, Number.NaN]) {
        await expect(rateLimits.consume([{ key: 'k', limit: 5 }], Date.now() + 30_000, cost)).rejects.toThrow(TypeError);
      }
      expect(await keysStartingWith(p)).toEqual([]);
    });

    it('a closed store rejects its calls', async () => {
      const redis = await open();
      await redis.rateLimits.close();
      await redis.rateLimits.close();
      await expect(redis.rateLimits.consume([{ key: 'k', limit: 1 }], Date.now() + 30_000)).rejects.toThrow(/closed/);
    });

    it('can be built over any client that sends commands', async () => {
      const client = await rawClient();
      try {
        const store = new RedisRateLimitStore({ client, keyPrefix: `${PREFIX}own-client:` });
        expect(await store.consume([{ key: 'k', limit: 1 }], Date.now() + 30_000)).toEqual({ allowed: true, counts: [1] });
        expect(await store.consume([{ key: 'k', limit: 1 }], Date.now() + 30_000)).toEqual({ allowed: false, counts: [1] });
      } finally {
        await client.close();
      }
    });
  });

  it('3 processes racing for one counter admit exactly its limit, round after round', async () => {
    // Separate processes on separate connections, loading the build that the global setup makes: what three server
    // processes behind a load balancer would run.
    const built = fileURLToPath(new URL('../dist/index.js', import.meta.url));
    const keyPrefix = `${PREFIX}processes:`;
    const rounds = 20;
    const limit = 25;
    const perProcess = 30;
    const start = Date.now() + 1500;
    const script = `
      const { createRedisStore } = await import(process.argv[1]);
      const [url, keyPrefix, start, rounds, limit, perProcess] = process.argv.slice(2);
      const redis = await createRedisStore({ url, keyPrefix });
      while (Date.now() < Number(start)) {}
      const admitted = [];
      for (let round = 0; round < Number(rounds); round++) {
        const counters = [{ key: 'round-' + round, limit: Number(limit) }, { key: 'tier-' + round, limit: 1000 }];
        const decisions = await Promise.all(
          Array.from({ length: Number(perProcess) }, () => redis.rateLimits.consume(counters, Date.now() + 60000)),
        );
        admitted.push(decisions.filter((d) => d.allowed).length);
      }
      await redis.close();
      process.stdout.write(JSON.stringify(admitted));
    `;
    const run = () =>
      new Promise<number[]>((resolve, reject) => {
        execFile(
          process.execPath,
          ['--input-type=module', '-e', script, built, url, keyPrefix, String(start), String(rounds), String(limit), String(perProcess)],
          (error, stdout, stderr) => (error ? reject(new Error(`${error.message}\n${stderr}`)) : resolve(JSON.parse(stdout) as number[])),
        );
      });
    const admitted = await Promise.all([run(), run(), run()]);
    const client = await rawClient();
    try {
      for (let round = 0; round < rounds; round++) {
        const total = admitted.reduce((sum, perRound) => sum + (perRound[round] as number), 0);
        expect(total, `round ${round}: ${admitted.map((a) => a[round]).join(' + ')}`).toBe(limit);
        expect(await client.get(`${keyPrefix}ratelimit:round-${round}`)).toBe(String(limit));
        // The tier counter moved only with the admitted requests.
        expect(await client.get(`${keyPrefix}ratelimit:tier-${round}`)).toBe(String(limit));
      }
    } finally {
      await client.close();
    }
  });
});
