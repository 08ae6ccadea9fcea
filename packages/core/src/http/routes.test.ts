import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { createFleet } from '../fleet.js';
import { RateLimiter } from '../ratelimit/limiter.js';
import { buildRoutes, operationLimits } from './routes.js';

const RATE_LIMITS_DOC = fileURLToPath(new URL('../../../../docs/rate-limits.md', import.meta.url));

/** The operations as the fleet builds them, without the fleet's other parts: the routes only read their functions. */
function routes(webhooks: boolean) {
  const fleet = createFleet({ rateLimit: false, webhooks: webhooks ? { worker: false } : false });
  return { routes: buildRoutes(fleet as never), close: () => fleet.close() };
}

describe('routes', () => {
  it('declare the contract’s default limits (docs/rate-limits.md), every operation name once', async () => {
    const { routes: all, close } = routes(true);
    expect(operationLimits(all)).toEqual({
      'servers.list': 100,
      'servers.create': 10,
      'servers.get': 100,
      'servers.update': 30,
      'servers.delete': 10,
      'servers.health': 60,
      'servers.health_history': 100,
      'tool_calls.list': 100,
      'webhooks.list': 100,
      'webhooks.create': 10,
      'webhooks.get': 100,
      'webhooks.update': 30,
      'webhooks.delete': 10,
      'webhooks.test': 10,
      'webhooks.deliveries': 100,
      'keys.list': 100,
      'keys.create': 10,
      'keys.get': 100,
      'keys.revoke': 10,
    });
    const names = all.flatMap((route) => Object.values(route.methods).map((operation) => operation.name));
    expect(new Set(names).size).toBe(names.length);
    const doc = readFileSync(RATE_LIMITS_DOC, 'utf8');
    expect(names.filter((name) => !doc.includes(`\`${name}\``)), 'operations missing from docs/rate-limits.md').toEqual([]);
    await close();
  });

  it('leave out the webhook routes when webhooks are off', async () => {
    const { routes: some, close } = routes(false);
    expect(some.some((route) => route.segments[0] === 'webhooks')).toBe(false);
    await close();
  });

  it('teach the limiter their limits: a route-declared limit binds without any option', async () => {
    const { routes: all, close } = routes(false);
    let now = 0;
    const limiter = new RateLimiter({}, () => now, operationLimits(all));
    const principal = { account: 'acct', tier: 'enterprise' as const, scopes: null };
    for (let i = 0; i < 10; i++) expect((await limiter.admit(principal, 'servers.create'))._unsafeUnwrap()?.allowed).toBe(true);
    expect((await limiter.admit(principal, 'servers.create'))._unsafeUnwrap()).toMatchObject({ allowed: false, scope: 'operation', limit: 10 });
    now += 60_000;
    expect((await limiter.admit(principal, 'servers.create'))._unsafeUnwrap()?.allowed).toBe(true);
    await limiter.close();
    await close();
  });
});
