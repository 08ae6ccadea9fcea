import { createHmac } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startV2ToolServer } from '../packages/core/src/mcp/fixtures/tool-servers.js';
import { startV1Server } from '../packages/core/src/mcp/fixtures/v1-server.js';
import { startReceiver } from '../packages/core/src/webhooks/fixtures/receiver.js';
import { ADAPTERS, serveFleet, type Served } from './support/adapters.js';
import { expectSuccess, freshClient, uniqueName } from './support/http-client.js';

async function eventually<T>(read: () => Promise<T>, ok: (value: T) => boolean, ms = 15_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const value = await read();
    if (ok(value) || Date.now() > end) return value;
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('webhook deliveries, end to end', () => {
  let served: Served;
  beforeAll(async () => {
    served = await serveFleet(ADAPTERS[0]!, {
      allowPrivateNetworks: true,
      webhooks: { retry: { baseMs: 50, factor: 2, jitter: 0 }, pollIntervalMs: 20 },
    });
  });
  afterAll(async () => {
    await served.close();
  });

  it('delivers server.created with a signature that an independent HMAC accepts, and the Standard Webhooks headers', async () => {
    const receiver = await startReceiver();
    try {
      const client = await freshClient(served);
      const hook = expectSuccess(await client.post('/webhooks', { url: receiver.url, events: ['server.created'] }), 201);
      expect(hook.secret).toMatch(/^whsec_[0-9A-Za-z+/=]{32}$/);
      const server = expectSuccess(
        await client.post('/servers', { name: uniqueName('wh'), type: 'http', endpoint: 'https://mcp.example.com/mcp', authentication: { type: 'bearer', token: 'tok-SECRET-123' } }),
        201,
      );
      const [request] = await receiver.waitFor(1);
      const body = request!.body;
      const expected = `sha256=${createHmac('sha256', hook.secret).update(body).digest('hex')}`;
      expect(request!.headers['x-service-signature']).toBe(expected);
      expect(request!.headers['content-type']).toBe('application/json');
      expect(request!.headers['x-service-event']).toBe('server.created');
      const deliveryId = request!.headers['x-service-delivery'];
      expect(deliveryId).toMatch(/^dlv_[0-9A-Za-z]{24}$/);
      expect(request!.headers['webhook-id']).toBe(deliveryId);
      expect(Math.abs(Number(request!.headers['webhook-timestamp']) - Date.now() / 1000)).toBeLessThan(60);
      const standard = createHmac('sha256', Buffer.from(hook.secret.slice('whsec_'.length), 'base64'))
        .update(`${deliveryId}.${request!.headers['webhook-timestamp']}.`)
        .update(body)
        .digest('base64');
      expect(request!.headers['webhook-signature']).toBe(`v1,${standard}`);
      const payload = JSON.parse(body.toString('utf8'));
      expect(Object.keys(payload).sort()).toEqual(['created_at', 'data', 'id', 'type']);
      expect(payload.id).toMatch(/^evt_[0-9A-Za-z]{24}$/);
      expect(payload.type).toBe('server.created');
      expect(payload.data.server.id).toBe(server.id);
      expect(payload.data.server.authentication).toEqual({ type: 'bearer' });
      expect(body.toString('utf8')).not.toContain('tok-SECRET-123');
      const log = await eventually(
        () => client.get(`/webhooks/${hook.id}/deliveries`),
        (res) => res.body.data?.[0]?.status === 'delivered',
      );
      const [delivery] = expectSuccess(log, 200);
      expect(delivery).toMatchObject({ id: deliveryId, webhook_id: hook.id, event_id: payload.id, event_type: 'server.created', status: 'delivered', next_attempt_at: null });
      expect(delivery.attempts).toHaveLength(1);
      expect(delivery.attempts[0]).toMatchObject({ attempt: 1, status_code: 200, error: null });
      expect(Number.isInteger(delivery.attempts[0].duration_ms)).toBe(true);
    } finally {
      await receiver.close();
    }
  });

  it('retries a receiver that answers 500 twice: three attempts, one delivery id, all in the log', async () => {
    const receiver = await startReceiver((_request, i) => (i < 2 ? { status: 500, body: 'receiver-internal-detail' } : { status: 204 }));
    try {
      const client = await freshClient(served);
      const hook = expectSuccess(await client.post('/webhooks', { url: receiver.url, events: ['server.created', 'server.deleted'] }), 201);
      expectSuccess(await client.post('/servers', { name: uniqueName('wh'), type: 'http', endpoint: 'https://mcp.example.com/mcp' }), 201);
      const requests = await receiver.waitFor(3);
      const ids = new Set(requests.map((r) => r.headers['x-service-delivery']));
      expect(ids.size).toBe(1);
      expect(new Set(requests.map((r) => r.headers['webhook-id']))).toEqual(ids);
      expect(new Set(requests.map((r) => r.body.toString('utf8'))).size).toBe(1);
      const log = await eventually(
        () => client.get(`/webhooks/${hook.id}/deliveries`),
        (res) => res.body.data?.[0]?.status === 'delivered',
      );
      const [delivery] = expectSuccess(log, 200);
      expect(delivery.attempts.map((a: { status_code: number }) => a.status_code)).toEqual([500, 500, 204]);
      expect(delivery.attempts[0].error.code).toBe('UNEXPECTED_STATUS');
      expect(log.text).not.toContain('receiver-internal-detail');
    } finally {
      await receiver.close();
    }
  });

  it('delivers server.health_changed when a probe moves the health', async () => {
    const receiver = await startReceiver();
    const mcp = await startV1Server();
    try {
      const client = await freshClient(served);
      expectSuccess(await client.post('/webhooks', { url: receiver.url, events: ['server.health_changed'] }), 201);
      const server = expectSuccess(await client.post('/servers', { name: uniqueName('wh'), type: 'http', endpoint: mcp.url }), 201);
      expectSuccess(await client.get(`/servers/${server.id}/health`), 200);
      const [request] = await receiver.waitFor(1);
      expect(request!.headers['x-service-event']).toBe('server.health_changed');
      const payload = JSON.parse(request!.body.toString('utf8'));
      expect(payload.data).toMatchObject({ previous: 'unknown', current: 'healthy', reason: 'probe_ok', error: null });
      expect(payload.data.server).toMatchObject({ id: server.id, health: 'healthy' });
    } finally {
      await receiver.close();
      await mcp.close();
    }
  });

  it('a 410 disables the webhook; later events are not sent', async () => {
    const receiver = await startReceiver(() => ({ status: 410 }));
    try {
      const client = await freshClient(served);
      const hook = expectSuccess(await client.post('/webhooks', { url: receiver.url, events: ['server.created'] }), 201);
      expectSuccess(await client.post('/servers', { name: uniqueName('wh'), type: 'http', endpoint: 'https://mcp.example.com/mcp' }), 201);
      await receiver.waitFor(1);
      const after = await eventually(() => client.get(`/webhooks/${hook.id}`), (res) => res.body.data?.enabled === false);
      expect(expectSuccess(after, 200)).toMatchObject({ enabled: false, disabled_reason: 'gone' });
      const [delivery] = expectSuccess(await client.get(`/webhooks/${hook.id}/deliveries`), 200);
      expect(delivery).toMatchObject({ status: 'failed' });
      expect(delivery.attempts).toHaveLength(1);
    } finally {
      await receiver.close();
    }
  });

  it('honours Retry-After on a 429', async () => {
    const receiver = await startReceiver((_r, i) => (i === 0 ? { status: 429, headers: { 'retry-after': '1' } } : { status: 200 }));
    try {
      const client = await freshClient(served);
      expectSuccess(await client.post('/webhooks', { url: receiver.url, events: ['server.created'] }), 201);
      expectSuccess(await client.post('/servers', { name: uniqueName('wh'), type: 'http', endpoint: 'https://mcp.example.com/mcp' }), 201);
      const requests = await receiver.waitFor(2);
      const first = Number(requests[0]!.headers['webhook-timestamp']);
      const second = Number(requests[1]!.headers['webhook-timestamp']);
      // baseMs is 50 here: only the receiver's Retry-After explains a second's wait.
      expect(second - first).toBeGreaterThanOrEqual(1);
    } finally {
      await receiver.close();
    }
  });

  it('POST /webhooks/{id}/test sends a webhook.test ping', async () => {
    const receiver = await startReceiver();
    try {
      const client = await freshClient(served);
      const hook = expectSuccess(await client.post('/webhooks', { url: receiver.url, events: ['tool_call.failed'] }), 201);
      const sent = expectSuccess(await client.post(`/webhooks/${hook.id}/test`), 202);
      expect(sent.event_id).toMatch(/^evt_/);
      expect(sent.delivery_id).toMatch(/^dlv_/);
      const [request] = await receiver.waitFor(1);
      expect(request!.headers['x-service-event']).toBe('webhook.test');
      expect(request!.headers['x-service-delivery']).toBe(sent.delivery_id);
      expect(JSON.parse(request!.body.toString('utf8'))).toMatchObject({ id: sent.event_id, type: 'webhook.test', data: { webhook_id: hook.id } });
    } finally {
      await receiver.close();
    }
  });

  it('delivers tool_call.failed for a failed call through the service (the record, never the arguments), and nothing for a success', async () => {
    const receiver = await startReceiver();
    const tools = await startV2ToolServer();
    try {
      const client = await freshClient(served);
      expectSuccess(await client.post('/webhooks', { url: receiver.url, events: ['tool_call.failed'] }), 201);
      const server = expectSuccess(await client.post('/servers', { name: uniqueName('tc'), type: 'http', endpoint: tools.url }), 201);
      const ok = expectSuccess(await client.post(`/servers/${server.id}/tools/call`, { name: 'echo', arguments: { text: 'fine' } }), 200);
      expect(ok.status).toBe('success');
      const failed = expectSuccess(await client.post(`/servers/${server.id}/tools/call`, { name: 'fail', arguments: { note: 'ARG-SECRET-1' } }), 200);
      expect(failed).toMatchObject({ status: 'error', error: { code: 'TOOL_ERROR' } });
      const [request] = await receiver.waitFor(1);
      expect(request!.headers['x-service-event']).toBe('tool_call.failed');
      const payload = JSON.parse(request!.body.toString('utf8'));
      expect(payload.type).toBe('tool_call.failed');
      const { result: _result, ...record } = failed;
      expect(payload.data).toEqual({ tool_call: record });
      expect(request!.body.toString('utf8')).not.toContain('ARG-SECRET-1');
      // Only the failed call: the success never became an event.
      await new Promise((r) => setTimeout(r, 200));
      expect(receiver.received).toHaveLength(1);
    } finally {
      await receiver.close();
      await tools.close();
    }
  });
});
