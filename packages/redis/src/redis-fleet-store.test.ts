import { describe } from 'vitest';
import { fleetStoreSuite } from '@mcp-fleet/core/testing';
import { deleteKeys, REDIS_URL, uniquePrefix, withoutRedis } from '../../../test/support/redis.js';
import { createRedisStore } from './index.js';

const skip = withoutRedis('fleetStoreSuite on Redis');
/** One prefix for the file; each case's namespace under it, deleted after the case. */
const prefix = uniquePrefix('fleet-store');

describe.skipIf(skip)('the Redis store under whole fleets', () => {
  // Two stores on one prefix share everything, counters and leases included: every case runs across two fleets.
  fleetStoreSuite('createRedisStore', ({ namespace, now }) => createRedisStore({ url: REDIS_URL as string, keyPrefix: `${prefix}${namespace}:`, now }), {
    sharedAcrossFleets: true,
    cleanup: (namespace) => deleteKeys(`${prefix}${namespace}:`),
  });
});
