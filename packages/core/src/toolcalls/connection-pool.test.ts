import { describe, expect, it } from 'vitest';
import { closedAfterEach } from '../mcp/fixtures/listen.js';
import { startHostileUpstream } from '../mcp/fixtures/hostile-upstream.js';
import { serverRecord } from '../registry/test-helpers.js';
import type { ServerRecord } from '../registry/views.js';
import { ConnectionPool } from './connection-pool.js';

const started = closedAfterEach();

const serverAt = (endpoint: string): ServerRecord =>
  serverRecord({ id: 'srv_flood', account: 'acct_e', config: { name: 'flood', type: 'http', endpoint, timeout: 10_000 } });

describe('ConnectionPool: list_changed notifications', () => {
  it("are told with the server's account, at most maxListChangedPerMinute times a minute per connection; one more closes the connection", async () => {
    const hostile = await started(startHostileUpstream());
    const pool = new ConnectionPool({}, { maxListChangedPerMinute: 5 });
    const heard: [string, string, string][] = [];
    pool.onListChanged((serverId, list, account) => heard.push([serverId, list, account]));
    const lease = await pool.acquire(serverAt(hostile.url), 10_000);
    await lease.client.request({ method: 'tools/list', params: {} });
    lease.release();
    // Let the connection's GET stream open before the flood.
    await new Promise((resolve) => setTimeout(resolve, 300));
    await hostile.flood(200);
    await expect.poll(() => heard.length).toBe(5);
    // The rest of the flood has had time to arrive, and was not heard.
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(heard).toHaveLength(5);
    expect(heard[0]).toEqual(['srv_flood', 'tools', 'acct_e']);
    // The flooding connection is gone; the next acquire opens a new one, heard again.
    await expect.poll(() => pool.size).toBe(0);
    const again = await pool.acquire(serverAt(hostile.url), 10_000);
    again.release();
    await new Promise((resolve) => setTimeout(resolve, 300));
    await hostile.flood(1);
    await expect.poll(() => heard.length).toBe(6);
    await pool.close();
  });
});
