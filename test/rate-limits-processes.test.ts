import { randomBytes } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { earlyInAMinute } from './support/http-client.js';
import { killLeftovers, removeTempDirs, startServer, tempDir } from './support/reference-server.js';
import { REDIS_URL, removeKeysAddedDuring, withDatabase, withoutRedis } from './support/redis.js';

/**
 * docs/rate-limits.md: N processes sharing one Redis admit exactly the limit, never more.
 * Two reference servers, one account, one burst split across both.
 */
describe.skipIf(withoutRedis('rate limits across processes'))('rate limits across two reference servers on one Redis', () => {
  // Database 10: the reference-server suite cleans up database 9 while it runs.
  const store = REDIS_URL === undefined ? '' : withDatabase(REDIS_URL, 10);
  removeKeysAddedDuring(store);
  afterEach(async () => {
    await killLeftovers();
    await removeTempDirs();
  });

  it('admits exactly the free tier (60) of 90 concurrent requests, whichever process answers', async () => {
    const secret = `burst-${randomBytes(12).toString('hex')}`;
    const account = `burst${randomBytes(4).toString('hex')}`;
    const env = { MCP_FLEET_STORE: store, MCP_FLEET_API_KEYS: `${account}:free:${secret}` };
    const [a, b] = await Promise.all([startServer({ cwd: await tempDir(), env }), startServer({ cwd: await tempDir(), env })]);
    // The burst must fall in one window.
    await earlyInAMinute();

    const urls = [a.url, b.url];
    const answers = await Promise.all(
      Array.from({ length: 90 }, (_, i) =>
        fetch(`${urls[i % 2]}/servers`, { headers: { authorization: `Bearer ${secret}` } }).then(async (res) => ({
          process: i % 2,
          status: res.status,
          scope: res.status === 429 ? ((await res.json()) as { error: { details: { scope: string } } }).error.details.scope : undefined,
          remaining: Number(res.headers.get('x-ratelimit-remaining')),
        })),
      ),
    );
    const admitted = answers.filter((r) => r.status === 200);
    expect(admitted).toHaveLength(60);
    expect(answers.filter((r) => r.status === 429 && r.scope === 'tier')).toHaveLength(30);
    // Each admitted request saw a distinct count: 59 down to 0 remaining, each once.
    expect(admitted.map((r) => r.remaining).sort((x, y) => x - y)).toEqual(Array.from({ length: 60 }, (_, i) => i));
    // Both processes admitted some, from one shared count: not two halves of a split limit.
    expect(admitted.filter((r) => r.process === 0).length).toBeGreaterThan(0);
    expect(admitted.filter((r) => r.process === 1).length).toBeGreaterThan(0);
    await Promise.all([a.stop('SIGTERM'), b.stop('SIGTERM')]);
  });
});
