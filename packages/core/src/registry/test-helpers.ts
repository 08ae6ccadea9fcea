import type { ServerRecord } from './views.js';

/**
 * A stored server record for tests that need one without a registry: `srv_a` of account `acct`, an http server named
 * `a`, healthy, with `over` laid on top.
 */
export const serverRecord = (over: Partial<ServerRecord> = {}): ServerRecord =>
  ({
    id: 'srv_a',
    account: 'acct',
    config: { name: 'a', type: 'http', endpoint: 'http://a.example/mcp', timeout: 30_000 },
    status: 'active',
    health: 'healthy',
    created_at: '2026-11-22T10:00:00.000Z',
    updated_at: '2026-11-22T10:00:00.000Z',
    ...over,
  }) as ServerRecord;
