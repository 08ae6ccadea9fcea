import { describe, expect, it } from 'vitest';
import { ADAPTERS } from '../support/adapters.js';
import { expectError, expectInvalid, expectSuccess, freshClient, ISO_MS, serveForSuite } from '../support/http-client.js';

const WEBHOOK_FIELDS = ['created_at', 'description', 'disabled_reason', 'enabled', 'events', 'id', 'updated_at', 'url'];
const WEBHOOK_ID = /^wh_[0-9A-Za-z]{24}$/;
const UNKNOWN_WEBHOOK_ID = 'wh_000000000000000000000000';
const URL_OK = 'https://hooks.example.com/mcp-fleet';
const body = (overrides: Record<string, unknown> = {}) => ({ url: URL_OK, events: ['server.created'], ...overrides });

describe.each(ADAPTERS)('webhooks over HTTP ($name)', (adapter) => {
  // No worker: these tests look at subscriptions and the log, not at sending (test/webhooks-delivery.test.ts does).
  const suite = serveForSuite(adapter, { webhooks: { worker: false } });
  const open = serveForSuite(adapter, { allowPrivateNetworks: true, webhooks: { worker: false } });

  it('POST /webhooks answers 201 with the webhook and its secret, shown only then', async () => {
    const client = await freshClient(suite.served);
    const created = expectSuccess(await client.post('/webhooks', body({ description: 'ops channel', events: ['server.created', 'server.deleted'] })), 201);
    expect(Object.keys(created).sort()).toEqual([...WEBHOOK_FIELDS, 'secret'].sort());
    expect(created).toMatchObject({ url: URL_OK, events: ['server.created', 'server.deleted'], description: 'ops channel', enabled: true, disabled_reason: null });
    expect(created.id).toMatch(WEBHOOK_ID);
    expect(created.secret).toMatch(/^whsec_.{32}$/);
    expect(created.created_at).toMatch(ISO_MS);
    const got = expectSuccess(await client.get(`/webhooks/${created.id}`), 200);
    expect(Object.keys(got).sort()).toEqual(WEBHOOK_FIELDS);
    const listed = await client.get('/webhooks');
    expect(listed.text).not.toContain(created.secret);
    expect(expectSuccess(listed, 200).map((w: { id: string }) => w.id)).toEqual([created.id]);
    expect(listed.body.pagination).toEqual({ page: 1, limit: 50, total: 1, pages: 1 });
  });

  it('validates the body: url scheme, events, unknown and read-only fields', async () => {
    const client = await freshClient(suite.served);
    expectInvalid(await client.post('/webhooks', body({ url: 'http://hooks.example.com/x' })), 'url');
    expectInvalid(await client.post('/webhooks', body({ url: 'not a url' })), 'url');
    expectInvalid(await client.post('/webhooks', body({ url: 'https://user:pw@hooks.example.com/' })), 'url');
    expectInvalid(await client.post('/webhooks', body({ url: 'https://127.0.0.1/x' })), 'url');
    expectInvalid(await client.post('/webhooks', body({ url: 'https://[::1]/x' })), 'url');
    expectInvalid(await client.post('/webhooks', body({ url: 'https://169.254.169.254/latest' })), 'url');
    expectInvalid(await client.post('/webhooks', body({ url: 'https://localhost/x' })), 'url');
    expectInvalid(await client.post('/webhooks', body({ events: [] })), 'events');
    expectInvalid(await client.post('/webhooks', body({ events: ['server.exploded'] })), 'events[0]');
    expectInvalid(await client.post('/webhooks', body({ events: ['server.created', 'server.created'] })), 'events');
    expectInvalid(await client.post('/webhooks', { events: ['server.created'] }), 'url');
    expectInvalid(await client.post('/webhooks', body({ secret: 'whsec_mine' })), 'secret');
    expectInvalid(await client.post('/webhooks', body({ colour: 'red' })), 'colour');
    expectInvalid(await client.post('/webhooks', [1]), 'body');
    expect(expectSuccess(await client.get('/webhooks'), 200)).toEqual([]);
  });

  it('allows http and private addresses only when the fleet allows private networks', async () => {
    const client = await freshClient(open.served);
    expectSuccess(await client.post('/webhooks', body({ url: 'http://127.0.0.1:9/hook' })), 201);
    expectSuccess(await client.post('/webhooks', body({ url: 'http://localhost:9/hook' })), 201);
  });

  it('PUT changes url, events, description and enabled; nothing else', async () => {
    const client = await freshClient(suite.served);
    const created = expectSuccess(await client.post('/webhooks', body({ description: 'x' })), 201);
    const updated = expectSuccess(
      await client.put(`/webhooks/${created.id}`, { url: 'https://other.example.com/h', events: ['tool_call.failed'], description: null, enabled: false }),
      200,
    );
    expect(updated).toMatchObject({ url: 'https://other.example.com/h', events: ['tool_call.failed'], description: null, enabled: false });
    expect(Date.parse(updated.updated_at)).toBeGreaterThan(Date.parse(created.updated_at));
    expect(updated.created_at).toBe(created.created_at);
    expect(Object.keys(updated).sort()).toEqual(WEBHOOK_FIELDS);
    expectInvalid(await client.put(`/webhooks/${created.id}`, { id: 'wh_x' }), 'id');
    expectInvalid(await client.put(`/webhooks/${created.id}`, {}), 'body');
    expectInvalid(await client.put(`/webhooks/${created.id}`, { url: 'ftp://x' }), 'url');
    expect(expectSuccess(await client.get(`/webhooks/${created.id}`), 200)).toEqual(updated);
  });

  it('DELETE removes it; unknown, wrong-form and other accounts\' ids are 404 NOT_FOUND with details.id', async () => {
    const client = await freshClient(suite.served);
    const other = await freshClient(suite.served);
    const created = expectSuccess(await client.post('/webhooks', body()), 201);
    for (const path of [`/webhooks/${created.id}`, `/webhooks/${created.id}/deliveries`]) {
      expectError(await other.get(path), 404, 'NOT_FOUND', { id: created.id });
    }
    expectError(await other.post(`/webhooks/${created.id}/test`), 404, 'NOT_FOUND', { id: created.id });
    expectError(await other.put(`/webhooks/${created.id}`, { enabled: false }), 404, 'NOT_FOUND', { id: created.id });
    expectError(await other.delete(`/webhooks/${created.id}`), 404, 'NOT_FOUND', { id: created.id });
    expectError(await client.get(`/webhooks/${UNKNOWN_WEBHOOK_ID}`), 404, 'NOT_FOUND', { id: UNKNOWN_WEBHOOK_ID });
    expectError(await client.get('/webhooks/nope'), 404, 'NOT_FOUND', { id: 'nope' });
    expect(expectSuccess(await client.delete(`/webhooks/${created.id}`), 200)).toEqual({ id: created.id, deleted: true });
    expectError(await client.get(`/webhooks/${created.id}`), 404, 'NOT_FOUND', { id: created.id });
    expect(expectSuccess(await client.get('/webhooks'), 200)).toEqual([]);
  });

  it('needs the webhooks:manage scope', async () => {
    const client = await freshClient(suite.served);
    const created = expectSuccess(await client.post('/webhooks', body()), 201);
    const reader = await freshClient(suite.served, ['servers:read', 'servers:write']);
    for (const [method, path] of [
      ['GET', '/webhooks'],
      ['POST', '/webhooks'],
      ['GET', `/webhooks/${created.id}`],
      ['PUT', `/webhooks/${created.id}`],
      ['DELETE', `/webhooks/${created.id}`],
      ['POST', `/webhooks/${created.id}/test`],
      ['GET', `/webhooks/${created.id}/deliveries`],
    ] as const) {
      expectError(await reader.request(method, path, method === 'POST' || method === 'PUT' ? { body: body() } : {}), 403, 'FORBIDDEN', {
        required_scope: 'webhooks:manage',
      });
    }
  });

  it('lists webhooks in pages, oldest first, and refuses bad page parameters', async () => {
    const client = await freshClient(suite.served);
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push(expectSuccess(await client.post('/webhooks', body()), 201).id);
    const page2 = await client.get('/webhooks?page=2&limit=2');
    expect(expectSuccess(page2, 200).map((w: { id: string }) => w.id)).toEqual([ids[2]]);
    expect(page2.body.pagination).toEqual({ page: 2, limit: 2, total: 3, pages: 2 });
    expectInvalid(await client.get('/webhooks?limit=0'), 'limit');
    expectInvalid(await client.get('/webhooks?sort=x'), 'sort');
  });

  it('records events for subscribers only, and lists deliveries newest first', async () => {
    const client = await freshClient(suite.served);
    const hook = expectSuccess(await client.post('/webhooks', body({ events: ['server.created', 'server.updated'] })), 201);
    const deaf = expectSuccess(await client.post('/webhooks', body({ events: ['server.deleted'] })), 201);
    const server = expectSuccess(await client.post('/servers', { name: 'w1', type: 'http', endpoint: 'https://mcp.example.com/mcp' }), 201);
    expectSuccess(await client.put(`/servers/${server.id}`, { timeout: 1000 }), 200);
    const pinged = expectSuccess(await client.post(`/webhooks/${hook.id}/test`), 202);
    const log = await client.get(`/webhooks/${hook.id}/deliveries`);
    const deliveries = expectSuccess(log, 200);
    expect(deliveries.map((d: { event_type: string }) => d.event_type)).toEqual(['webhook.test', 'server.updated', 'server.created']);
    expect(deliveries[0]).toMatchObject({ id: pinged.delivery_id, event_id: pinged.event_id, status: 'pending', attempts: [] });
    expect(log.body.pagination).toEqual({ page: 1, limit: 50, total: 3, pages: 1 });
    expect(expectSuccess(await client.get(`/webhooks/${deaf.id}/deliveries`), 200)).toEqual([]);
    expectInvalid(await client.get(`/webhooks/${hook.id}/deliveries?page=0`), 'page');
  });

  it('the embedder API matches: fleet.webhooks', async () => {
    const { fleet } = suite.served;
    const created = (await fleet.webhooks!.create('embedder-acct', { url: URL_OK, events: ['server.deleted'] }))._unsafeUnwrap();
    expect(created.secret).toMatch(/^whsec_/);
    const listed = (await fleet.webhooks!.list('embedder-acct', { page: 1, limit: 10 }))._unsafeUnwrap();
    expect(listed.data).toEqual([expect.objectContaining({ id: created.id })]);
    expect(JSON.stringify(listed)).not.toContain(created.secret);
    expect((await fleet.webhooks!.get('other-acct', created.id))._unsafeUnwrapErr().code).toBe('NOT_FOUND');
  });
});

describe.each(ADAPTERS)('webhooks turned off ($name)', (adapter) => {
  const suite = serveForSuite(adapter, { webhooks: false });
  it('has no routes and no API', async () => {
    const client = await freshClient(suite.served);
    expectError(await client.get('/webhooks'), 404, 'NOT_FOUND');
    expect(suite.served.fleet.webhooks).toBeUndefined();
  });
});
