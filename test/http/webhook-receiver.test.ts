import type { AddressInfo } from 'node:net';
import { createServer, type Server } from 'node:http';
import { serve } from '@hono/node-server';
import { newWebhookSecret, sign, type VerifiedDelivery, type WebhookPayload } from '@mcp-fleet/core/webhooks';
import { verifyWebhook as expressVerify } from '@mcp-fleet/express';
import { verifyWebhook as honoVerify } from '@mcp-fleet/hono';
import express from 'express';
import { Hono } from 'hono';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADAPTERS, serveFleet, type Served } from '../support/adapters.js';
import { expectSuccess, freshClient, uniqueName } from '../support/http-client.js';

/** What the handler behind the middleware saw. */
interface Seen {
  type: string;
  id: string;
  rawLength: number;
}

interface Receiver {
  name: string;
  url: string;
  seen: Seen[];
  close(): Promise<void>;
}

function listen(server: Server): Promise<string> {
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}`)));
}

async function honoReceiver(secret: string): Promise<Receiver> {
  const seen: Seen[] = [];
  const app = new Hono();
  app.post('/hooks', honoVerify({ secret, bodyLimit: 4096 }), (c) => {
    const delivery: VerifiedDelivery<WebhookPayload> = c.get('webhook');
    seen.push({ type: delivery.event.type, id: delivery.id, rawLength: delivery.rawBody.byteLength });
    return c.json({ ok: true });
  });
  const server = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1', createServer }) as Server;
  await new Promise<void>((resolve) => (server.listening ? resolve() : server.once('listening', () => resolve())));
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { name: 'hono', url: `${origin}/hooks`, seen, close: () => closeServer(server) };
}

async function expressReceiver(secret: string): Promise<Receiver> {
  const seen: Seen[] = [];
  const app = express();
  app.post('/hooks', expressVerify({ secret, bodyLimit: 4096 }), (req, res) => {
    seen.push({ type: (req.body as WebhookPayload).type, id: req.webhook!.id, rawLength: req.rawBody!.byteLength });
    res.json({ ok: true });
  });
  // After express.raw(): the middleware takes the buffered bytes.
  app.post('/raw-hooks', express.raw({ type: '*/*' }), expressVerify({ secret }), (req, res) => {
    seen.push({ type: (req.body as WebhookPayload).type, id: req.webhook!.id, rawLength: req.rawBody!.byteLength });
    res.json({ ok: true });
  });
  // After express.json(): the signed bytes are gone, which is a mounting mistake, not a bad delivery.
  app.post('/json-hooks', express.json(), expressVerify({ secret }), (_req, res) => {
    res.json({ ok: true });
  });
  const server = createServer(app);
  const origin = await listen(server);
  return { name: 'express', url: `${origin}/hooks`, seen, close: () => closeServer(server) };
}

function closeServer(server: Server): Promise<void> {
  return new Promise((resolve) => {
    server.close(() => resolve());
    server.closeAllConnections();
  });
}

const RECEIVERS = [
  { name: 'hono', start: honoReceiver },
  { name: 'express', start: expressReceiver },
];

const now = () => Math.floor(Date.now() / 1000);

async function post(url: string, body: string, headers: Record<string, string>) {
  const res = await fetch(url, { method: 'POST', body, headers: { 'content-type': 'application/json', ...headers } });
  const text = await res.text();
  return { status: res.status, body: text === '' ? undefined : JSON.parse(text) };
}

describe.each(RECEIVERS)('verifyWebhook ($name)', ({ start }) => {
  const secret = newWebhookSecret();
  let receiver: Receiver;
  beforeAll(async () => {
    receiver = await start(secret);
  });
  afterAll(async () => {
    await receiver.close();
  });

  const body = JSON.stringify({ id: 'evt_1', type: 'server.created', created_at: new Date().toISOString(), data: { server: { name: 'a' } } });

  it('passes a signed delivery to the handler with the parsed event and the raw bytes', async () => {
    const before = receiver.seen.length;
    const res = await post(receiver.url, body, sign(secret, body, { id: 'dlv_ok', timestamp: now() }));
    expect(res).toEqual({ status: 200, body: { ok: true } });
    expect(receiver.seen.slice(before)).toEqual([{ type: 'server.created', id: 'dlv_ok', rawLength: Buffer.byteLength(body) }]);
  });

  it('rejects a tampered body with 401 BAD_SIGNATURE in the API envelope; the handler never runs', async () => {
    const before = receiver.seen.length;
    const headers = sign(secret, body, { id: 'dlv_t', timestamp: now() });
    const res = await post(receiver.url, body.replace('server.created', 'server.deleted'), headers);
    expect(res.status).toBe(401);
    expect(res.body).toMatchObject({ success: false, error: { code: 'BAD_SIGNATURE' }, meta: { request_id: expect.stringMatching(/^req_[0-9A-Za-z]+$/) } });
    expect(JSON.stringify(res.body)).not.toContain(secret);
    expect(receiver.seen.length).toBe(before);
  });

  it("a refusal carries the API's headers: JSON, no-store, nosniff, and X-Request-Id = meta.request_id", async () => {
    const headers = { 'content-type': 'application/json', ...sign(newWebhookSecret(), body, { id: 'dlv_h', timestamp: now() }) };
    for (const requestId of [undefined, 'sender-id-1']) {
      const res = await fetch(receiver.url, { method: 'POST', body, headers: requestId === undefined ? headers : { ...headers, 'x-request-id': requestId } });
      const answer = (await res.json()) as { meta: { request_id: string } };
      expect(res.status).toBe(401);
      expect(res.headers.get('content-type')).toBe('application/json; charset=utf-8');
      expect(res.headers.get('cache-control')).toBe('no-store');
      expect(res.headers.get('x-content-type-options')).toBe('nosniff');
      expect(res.headers.get('x-request-id')).toBe(answer.meta.request_id);
      expect(answer.meta.request_id).toMatch(requestId ?? /^req_[0-9A-Za-z]{24}$/);
    }
  });

  it('rejects a signature made with another secret', async () => {
    const res = await post(receiver.url, body, sign(newWebhookSecret(), body, { id: 'dlv_w', timestamp: now() }));
    expect(res.status).toBe(401);
    expect(res.body.error.code).toBe('BAD_SIGNATURE');
  });

  it('rejects a timestamp 6 minutes old, even with a good signature', async () => {
    const res = await post(receiver.url, body, sign(secret, body, { id: 'dlv_old', timestamp: now() - 360 }));
    expect(res.status).toBe(401);
    expect(res.body.error.code).toBe('TIMESTAMP_OUT_OF_TOLERANCE');
  });

  it('answers 400 for missing headers and for a signed body that is not JSON, 413 past the body limit', async () => {
    const missing = await post(receiver.url, body, {});
    expect(missing.status).toBe(400);
    expect(missing.body.error).toMatchObject({ code: 'MISSING_HEADERS', details: { missing: ['webhook-id', 'webhook-timestamp', 'webhook-signature'] } });
    const notJson = 'not json';
    const bad = await post(receiver.url, notJson, sign(secret, notJson, { id: 'dlv_j', timestamp: now() }));
    expect(bad.status).toBe(400);
    expect(bad.body.error.code).toBe('INVALID_BODY');
    const big = JSON.stringify({ pad: 'x'.repeat(5000) });
    const large = await post(receiver.url, big, sign(secret, big, { id: 'dlv_big', timestamp: now() }));
    expect(large.status).toBe(413);
    expect(large.body.error.code).toBe('PAYLOAD_TOO_LARGE');
  });
});

describe('verifyWebhook (express) behind other body parsers', () => {
  const secret = newWebhookSecret();
  let receiver: Receiver;
  beforeAll(async () => {
    receiver = await expressReceiver(secret);
  });
  afterAll(async () => {
    await receiver.close();
  });
  const body = '{"id":"evt_2","type":"server.updated","created_at":"2026-01-01T00:00:00.000Z","data":{}}';

  it('verifies the Buffer that express.raw() left', async () => {
    const res = await post(receiver.url.replace('/hooks', '/raw-hooks'), body, sign(secret, body, { id: 'dlv_raw', timestamp: now() }));
    expect(res).toEqual({ status: 200, body: { ok: true } });
    expect(receiver.seen.at(-1)).toEqual({ type: 'server.updated', id: 'dlv_raw', rawLength: body.length });
  });

  it('fails loudly (500, not a 401 the sender would retry forever) when mounted after express.json()', async () => {
    const res = await fetch(receiver.url.replace('/hooks', '/json-hooks'), {
      method: 'POST',
      body,
      headers: { 'content-type': 'application/json', ...sign(secret, body, { id: 'dlv_json', timestamp: now() }) },
    });
    expect(res.status).toBe(500);
    await res.text();
  });
});

describe.each(RECEIVERS)('a real fleet delivering to the $name receiver middleware', ({ start }) => {
  let served: Served;
  beforeAll(async () => {
    served = await serveFleet(ADAPTERS[0]!, { allowPrivateNetworks: true, webhooks: { pollIntervalMs: 20 } });
  });
  afterAll(async () => {
    await served.close();
  });

  it('server.created passes verification with the secret POST /webhooks answered', async () => {
    const client = await freshClient(served);
    // The secret exists only once the webhook does; the receiver is started with it, then the webhook pointed at it.
    const hook = expectSuccess(await client.post('/webhooks', { url: 'http://127.0.0.1:9/placeholder', events: ['server.created'] }), 201);
    const receiver = await start(hook.secret);
    try {
      expectSuccess(await client.put(`/webhooks/${hook.id}`, { url: receiver.url }), 200);
      const server = expectSuccess(
        await client.post('/servers', { name: uniqueName('rx'), type: 'http', endpoint: 'https://mcp.example.com/mcp' }),
        201,
      );
      const deadline = Date.now() + 15_000;
      while (receiver.seen.length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 25));
      expect(receiver.seen).toEqual([{ type: 'server.created', id: expect.stringMatching(/^dlv_/), rawLength: expect.any(Number) }]);
      expect(server.id).toMatch(/^srv_/);
    } finally {
      await receiver.close();
    }
  });
});
