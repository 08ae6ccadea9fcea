import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll } from 'vitest';
import { fleetStoreSuite } from '@mcp-fleet/core/testing';
import { createSqliteStore } from './index.js';

const dir = mkdtempSync(join(tmpdir(), 'mcp-fleet-fleet-store-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

// Two stores on one file share records and the index (claims, quotas, the outbox, MCP sessions); rate-limit counters
// and leases are each process's own, so the case of limits exact across fleets is skipped.
fleetStoreSuite('createSqliteStore', ({ namespace, now }) => createSqliteStore({ path: join(dir, `${namespace}.sqlite`), now }), {
  sharedAcrossFleets: true,
  sharedCounters: false,
  cleanup: (namespace) => {
    for (const suffix of ['', '-wal', '-shm', '-journal']) rmSync(join(dir, `${namespace}.sqlite${suffix}`), { force: true });
  },
});
