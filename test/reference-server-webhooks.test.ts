/**
 * Webhooks in the reference server (`npm start`): MCP_FLEET_WEBHOOK_RETRY_BASE_MS, and a SIGTERM that leaves a
 * pending delivery in the outbox for the next start.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { startReceiver } from '../packages/core/src/webhooks/fixtures/receiver.js';
import { api, killLeftovers, removeTempDirs, startServer, tempDir } from './support/reference-server.js';

afterEach(async () => {
  await killLeftovers();
  await removeTempDirs();
});

describe('reference server webhooks', () => {
  it('retries after MCP_FLEET_WEBHOOK_RETRY_BASE_MS; SIGTERM keeps the pending delivery, the next start sends it', async () => {
    let healthy = false;
    const receiver = await startReceiver(() => ({ status: healthy ? 200 : 500 }));
    try {
      const cwd = await tempDir();
      const secret = 'mcpf_webhooktest0000000000000000000000000000';
      const env = {
        MCP_FLEET_API_KEYS: `acme:pro:${secret}`,
        MCP_FLEET_ALLOW_PRIVATE_NETWORKS: '1',
        MCP_FLEET_WEBHOOK_RETRY_BASE_MS: '3000',
      };
      const first = await startServer({ cwd, env });
      const hook = await api(first.url, secret, 'POST', '/webhooks', { url: receiver.url, events: ['server.created'] });
      expect(hook.status).toBe(201);
      expect((await api(first.url, secret, 'POST', '/servers', { name: 'one', type: 'http', endpoint: 'https://mcp.example.com/mcp' })).status).toBe(201);
      const [failed] = await receiver.waitFor(1);
      const stopped = await first.stop('SIGTERM');
      expect(stopped.code).toBe(0);
      healthy = true;
      const second = await startServer({ cwd, env });
      const requests = await receiver.waitFor(2);
      expect(requests[1]!.headers['x-service-delivery']).toBe(failed!.headers['x-service-delivery']);
      const gap = Number(requests[1]!.headers['webhook-timestamp']) - Number(failed!.headers['webhook-timestamp']);
      // 3 s ± 20 %, in whole seconds.
      expect(gap).toBeGreaterThanOrEqual(2);
      let log = await api(second.url, secret, 'GET', `/webhooks/${hook.body.data.id}/deliveries`);
      for (let i = 0; i < 100 && log.body.data[0].status !== 'delivered'; i++) {
        await new Promise((r) => setTimeout(r, 50));
        log = await api(second.url, secret, 'GET', `/webhooks/${hook.body.data.id}/deliveries`);
      }
      await second.stop('SIGTERM');
      expect(log.body.data[0].attempts.map((a: { status_code: number }) => a.status_code)).toEqual([500, 200]);
    } finally {
      await receiver.close();
    }
  });
});
