/**
 * @mcp-fleet/client against a real fleet through each adapter: every method of the facade, the pagination iterator,
 * errors (the fleet's, narrowed by code; no answer at all), retries on a real limiter's 429 and a real store's 503,
 * and cancellation. Every answer the fleet gives is also checked against its document (`serveFleet`).
 */
import { createMemoryStore, SCOPES, type Scope } from '@mcp-fleet/core';
import { createClient, type FleetClient, FleetApiError, FleetNetworkError, isFleetApiError } from '@mcp-fleet/client';
import Keyv from 'keyv';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { refusedPort } from '../../packages/core/src/mcp/fixtures/listen.js';
import { startV2ToolServer, type ToolServer } from '../../packages/core/src/mcp/fixtures/tool-servers.js';
import { ADAPTERS, type Served } from '../support/adapters.js';
import { freshClient, GENERATED_REQUEST_ID, serveForSuite, UNKNOWN_SERVER_ID, uniqueName } from '../support/http-client.js';

let upstream: ToolServer;
beforeAll(async () => {
  upstream = await startV2ToolServer();
});
afterAll(async () => {
  await upstream.close();
});

/** A client of `served` for an account of its own; `seen` lists each request it sent (`METHOD path?query`). */
async function clientOf(served: Served, options: Partial<Parameters<typeof createClient>[0]> = {}, scopes?: Scope[]): Promise<{ client: FleetClient; seen: string[] }> {
  const apiKey = (await freshClient(served, scopes)).key as string;
  const seen: string[] = [];
  const counting: typeof fetch = (input, init) => {
    const url = new URL(String(input));
    seen.push(`${init?.method ?? 'GET'} ${url.pathname.replace(/^\/v1/, '')}${url.search}`);
    return fetch(input, init);
  };
  return { client: createClient({ baseUrl: served.url, apiKey, fetch: counting, ...options }), seen };
}

/** The error a promise rejects with. */
async function rejection(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => {
      throw new Error('resolved, expected a rejection');
    },
    (error: unknown) => error,
  );
}

/** The moment of `ms`, two seconds before its minute ends (a fixed rate-limit window then resets in 2 s). */
const nearTheMinute = (ms: number) => Math.floor(ms / 60_000) * 60_000 + 58_000;

describe.each(ADAPTERS)('@mcp-fleet/client through $name', (adapter) => {
  const suite = serveForSuite(adapter, { allowPrivateNetworks: true, webhooks: { worker: false }, onError: () => {} });

  it('servers: create, get, update, list, health, healthHistory, delete', async () => {
    const { client } = await clientOf(suite.served);
    const name = uniqueName('client');
    const created = await client.servers.create({ name, type: 'http', endpoint: upstream.url });
    expect(created).toMatchObject({ name, type: 'http', endpoint: upstream.url, status: 'active' });
    const got = await client.servers.get(created.id);
    expect(got).toMatchObject({ id: created.id, name, timeout: expect.any(Number), env_keys: null });
    const updated = await client.servers.update(created.id, { timeout: 5000 });
    expect(updated).toMatchObject({ id: created.id, timeout: 5000 });
    const listed = await client.servers.list({ type: 'http', limit: 10 });
    expect(listed.data.map((s) => s.id)).toEqual([created.id]);
    expect(listed.pagination).toEqual({ page: 1, limit: 10, total: 1, pages: 1 });
    const health = await client.servers.health(created.id);
    expect(Object.keys(health)).toEqual(expect.arrayContaining(['status', 'last_check', 'error_rate']));
    const history = await client.servers.healthHistory(created.id);
    expect(history).toBeDefined();
    expect(await client.servers.delete(created.id)).toEqual({ id: created.id, deleted: true });
    const gone = await rejection(client.servers.get(created.id));
    expect(gone).toBeInstanceOf(FleetApiError);
    expect(gone).toMatchObject({ status: 404, code: 'SERVER_NOT_FOUND', details: { server_id: created.id } });
    expect((gone as FleetApiError).requestId).toMatch(GENERATED_REQUEST_ID);
  });

  it('tools: list and call; toolCalls: list and get', async () => {
    const { client } = await clientOf(suite.served);
    const server = await client.servers.create({ name: uniqueName('tools'), type: 'http', endpoint: upstream.url });
    const tools = await client.tools.list(server.id);
    expect(tools.map((t) => t.name)).toEqual(expect.arrayContaining(['echo', 'fail', 'slow']));
    const call = await client.tools.call(server.id, { name: 'echo', arguments: { text: 'from the client' } });
    expect(call).toMatchObject({ server_id: server.id, tool: 'echo', status: 'success', via: 'http' });
    expect(JSON.stringify(call.result)).toContain('from the client');
    const calls = await client.toolCalls.list({ server_id: server.id, status: 'success' });
    expect(calls.data.map((c) => c.id)).toEqual([call.id]);
    expect(await client.toolCalls.get(call.id)).toMatchObject({ id: call.id, tool: 'echo' });
  });

  it('webhooks: create, get, update, list, test, deliveries, delete', async () => {
    const { client } = await clientOf(suite.served);
    const hook = await client.webhooks.create({ url: 'https://hooks.example.com/fleet', events: ['server.created'] });
    expect(hook.secret).toMatch(/^whsec_/);
    expect(await client.webhooks.get(hook.id)).toMatchObject({ id: hook.id, enabled: true });
    expect(await client.webhooks.update(hook.id, { description: 'ops' })).toMatchObject({ id: hook.id, description: 'ops' });
    expect((await client.webhooks.list()).data.map((w) => w.id)).toEqual([hook.id]);
    const ping = await client.webhooks.test(hook.id);
    const deliveries = await client.webhooks.deliveries(hook.id, { limit: 5 });
    expect(deliveries.data.map((d) => d.id)).toEqual([ping.delivery_id]);
    expect(await client.webhooks.delete(hook.id)).toEqual({ id: hook.id, deleted: true });
    expect(await rejection(client.webhooks.get(hook.id))).toMatchObject({ status: 404, code: 'NOT_FOUND' });
  });

  it('keys: create, get, list, revoke; servers.import: a dry run, then the import', async () => {
    const { client } = await clientOf(suite.served, {}, [...SCOPES]);
    const made = await client.keys.create({ scopes: ['servers:read'], description: 'reader' });
    expect(made.secret).toEqual(expect.any(String));
    expect(made).toMatchObject({ scopes: ['servers:read'], description: 'reader' });
    const got = await client.keys.get(made.id);
    expect(got).toMatchObject({ id: made.id, scopes: ['servers:read'] });
    expect(got).not.toHaveProperty('secret');
    expect((await client.keys.list()).data.map((k) => k.id)).toContain(made.id);
    const reader = createClient({ baseUrl: suite.served.url, apiKey: made.secret, retries: 0 });
    expect((await reader.servers.list()).data).toEqual([]);
    expect(await rejection(reader.servers.create({ name: uniqueName('denied'), type: 'http', endpoint: upstream.url }))).toMatchObject({ status: 403, code: 'FORBIDDEN' });
    expect(await client.keys.revoke(made.id)).toEqual({ id: made.id, revoked: true });
    expect(await rejection(reader.servers.list())).toMatchObject({ status: 401, code: 'UNAUTHORIZED' });

    const name = uniqueName('imported');
    const document = { mcpServers: { [name]: { url: upstream.url } } };
    const plan = await client.servers.import({ document, dry_run: true });
    expect(plan.created.map((s) => [s.entry, s.server.name])).toEqual([[name, name]]);
    expect((await client.servers.list()).data).toEqual([]);
    const imported = await client.servers.import({ document });
    expect((await client.servers.list()).data.map((s) => s.name)).toEqual(imported.created.map((s) => s.server.name));
  });

  it('paginate walks every page of a listing, one request a page, from the page asked for', async () => {
    const { client, seen } = await clientOf(suite.served);
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push((await client.servers.create({ name: uniqueName('page'), type: 'http', endpoint: 'https://mcp.example.com/mcp' })).id);
    seen.length = 0;
    const walked: string[] = [];
    for await (const server of client.paginate(client.servers.list, { limit: 2 })) walked.push(server.id);
    expect(walked.sort()).toEqual([...ids].sort());
    expect(seen).toEqual(['GET /servers?limit=2&page=1', 'GET /servers?limit=2&page=2', 'GET /servers?limit=2&page=3']);
    const fromTwo: string[] = [];
    for await (const server of client.paginate(client.servers.list, { limit: 2, page: 2 })) fromTwo.push(server.id);
    expect(fromTwo).toHaveLength(3);
    // A listing below an id: the webhook's deliveries.
    const hook = await client.webhooks.create({ url: 'https://hooks.example.com/p', events: ['server.created'] });
    for (let i = 0; i < 3; i++) await client.webhooks.test(hook.id);
    const deliveries = [];
    for await (const delivery of client.paginate(client.webhooks.deliveries, hook.id, { limit: 1 })) deliveries.push(delivery.event_type);
    expect(deliveries).toEqual(['webhook.test', 'webhook.test', 'webhook.test']);
    // Breaking out of the loop stops asking.
    seen.length = 0;
    for await (const _ of client.paginate(client.servers.list, { limit: 1 })) break;
    expect(seen).toHaveLength(1);
    const untyped = client.paginate as (listing: unknown) => AsyncIterableIterator<unknown>;
    await expect(untyped(client.servers.get).next()).rejects.toThrow(/pass a listing of this client/);
  });

  it('an invalid body is a FleetApiError INVALID_REQUEST naming the field; never retried', async () => {
    const { client, seen } = await clientOf(suite.served);
    const error = await rejection(client.servers.create({ name: uniqueName('bad'), type: 'http', endpoint: 'not a url' }));
    if (!isFleetApiError(error)) throw error;
    expect(error.status).toBe(400);
    if (error.code !== 'INVALID_REQUEST') throw error;
    // Narrowed: `details` is the document's `{ field, issue }` (or `{}`).
    expect('field' in error.details && error.details.field).toBe('endpoint');
    expect(error.message).toMatch(/endpoint/);
    expect(seen).toHaveLength(1);
  });

  it('no key: UNAUTHORIZED; no answer: FleetNetworkError network, timeout or invalid_response', async () => {
    const anonymous = createClient({ baseUrl: suite.served.url });
    expect(await rejection(anonymous.servers.list())).toMatchObject({ status: 401, code: 'UNAUTHORIZED' });
    const port = await refusedPort();
    const refused = await rejection(createClient({ baseUrl: `http://127.0.0.1:${port}/v1`, apiKey: 'mcpf_x' }).servers.list());
    expect(refused).toBeInstanceOf(FleetNetworkError);
    expect(refused).toMatchObject({ reason: 'network', message: expect.stringContaining(`is the fleet running at http://127.0.0.1:${port}/v1?`) });
    // The API without its prefix: the host app's 404 page, not the fleet's envelope.
    const { client: wrongBase } = await clientOf(suite.served, { baseUrl: suite.served.origin });
    expect(await rejection(wrongBase.servers.list())).toMatchObject({ name: 'FleetNetworkError', reason: 'invalid_response', status: 404, message: expect.stringContaining('(…/v1)') });
    const { client } = await clientOf(suite.served, { timeout: 300 });
    const server = await client.servers.create({ name: uniqueName('slow'), type: 'http', endpoint: upstream.url });
    const slow = await rejection(client.tools.call(server.id, { name: 'slow', arguments: { ms: 5000 } }));
    expect(slow).toMatchObject({ name: 'FleetNetworkError', reason: 'timeout', message: expect.stringContaining('no answer within 300 ms') });
    expect(() => createClient({ baseUrl: 'fleet.example.com' })).toThrow(/baseUrl must be an http\(s\) URL/);
    expect(() => createClient({ baseUrl: 'https://fleet.example.com/v1', retries: -1 })).toThrow(/retries must be/);
  });

  it('an AbortSignal cancels a call in flight (the upstream call too) with the signal’s reason', async () => {
    const { client } = await clientOf(suite.served);
    const server = await client.servers.create({ name: uniqueName('abort'), type: 'http', endpoint: upstream.url });
    const runs = upstream.slowRuns();
    const controller = new AbortController();
    const pending = rejection(client.tools.call(server.id, { name: 'slow', arguments: { ms: 20_000 } }, { signal: controller.signal }));
    await expect.poll(() => upstream.slowRuns(), { timeout: 5000 }).toBe(runs + 1);
    controller.abort(new Error('changed my mind'));
    expect(await pending).toMatchObject({ message: 'changed my mind' });
    // Aborted before it starts: nothing is sent.
    const { client: idle, seen } = await clientOf(suite.served);
    expect(await rejection(idle.servers.list({}, { signal: AbortSignal.abort() }))).toMatchObject({ name: 'AbortError' });
    expect(seen).toEqual([]);
  });
});

describe.each(ADAPTERS)('retries through $name', (adapter) => {
  // The fleet's clock runs from two seconds before a minute ends, restarted by each test: a window then ends in 2 s.
  let start = Date.now();
  const at = nearTheMinute(Date.now());
  const limited = serveForSuite(adapter, { now: () => at + (Date.now() - start), rateLimit: { operations: { 'servers.list': 1, 'servers.create': 1 } } });

  it('a 429 is retried after its Retry-After, a POST too (a refused request changed nothing); lastRateLimit follows', async () => {
    start = Date.now();
    const { client, seen } = await clientOf(limited.served);
    expect(client.lastRateLimit).toBeUndefined();
    await client.servers.list();
    expect(client.lastRateLimit).toEqual({ limit: 1, remaining: 0, reset: Math.floor(at / 1000) + 2 });
    await client.servers.create({ name: uniqueName('r'), type: 'http', endpoint: 'https://mcp.example.com/mcp' });
    const began = Date.now();
    const [listed, created] = await Promise.all([
      client.servers.list(),
      client.servers.create({ name: uniqueName('r'), type: 'http', endpoint: 'https://mcp.example.com/mcp' }),
    ]);
    expect(Date.now() - began).toBeGreaterThanOrEqual(1900);
    expect(listed.pagination.total).toBe(1);
    expect(created.status).toBe('active');
    expect(seen.filter((line) => line === 'GET /servers')).toHaveLength(3);
    expect(seen.filter((line) => line === 'POST /servers')).toHaveLength(3);
    expect(client.lastRateLimit).toMatchObject({ limit: 1, reset: Math.floor(at / 1000) + 62 });
  });

  it('retries: 0, or a Retry-After past maxRetryDelay, throws the 429 at once with retryAfter', async () => {
    start = Date.now();
    for (const options of [{ retries: 0 }, { maxRetryDelay: 1500 }]) {
      const { client, seen } = await clientOf(limited.served, options);
      await client.servers.list();
      const began = Date.now();
      const error = await rejection(client.servers.list());
      expect(Date.now() - began).toBeLessThan(1000);
      expect(error).toMatchObject({ status: 429, code: 'RATE_LIMITED', retryAfter: 2, rateLimit: { limit: 1, remaining: 0 } });
      expect(seen).toHaveLength(2);
    }
  });

  it('aborting while it waits to retry rejects at once', async () => {
    start = Date.now();
    const { client } = await clientOf(limited.served);
    await client.servers.list();
    const controller = new AbortController();
    const began = Date.now();
    const pending = rejection(client.servers.list({}, { signal: controller.signal }));
    setTimeout(() => controller.abort(), 100);
    expect(await pending).toMatchObject({ name: 'AbortError' });
    expect(Date.now() - began).toBeLessThan(1500);
  });

  // Records that fail their next reads: the fleet answers 503 STORAGE_UNAVAILABLE (nothing changed).
  const failures = { left: 0 };
  const map = new Map<string, unknown>();
  const flaky = {
    get(key: string) {
      if (failures.left > 0) {
        failures.left -= 1;
        throw new Error('records down');
      }
      return map.get(key);
    },
    set: (key: string, value: unknown) => map.set(key, value),
    delete: (key: string) => map.delete(key),
    clear: () => map.clear(),
    has: (key: string) => map.has(key),
  };
  const broken = serveForSuite(adapter, { store: createMemoryStore({ records: new Keyv({ store: flaky, throwOnErrors: true }) }), onError: () => {} });

  it('a 503 is retried for a GET, PUT or DELETE, never for a POST', async () => {
    const { client, seen } = await clientOf(broken.served);
    const server = await client.servers.create({ name: uniqueName('flaky'), type: 'http', endpoint: 'https://mcp.example.com/mcp' });
    seen.length = 0;
    failures.left = 1;
    expect((await client.servers.get(server.id)).id).toBe(server.id);
    expect(seen).toEqual([`GET /servers/${server.id}`, `GET /servers/${server.id}`]);
    seen.length = 0;
    failures.left = 1;
    const refused = await rejection(client.servers.create({ name: uniqueName('flaky'), type: 'http', endpoint: 'https://mcp.example.com/mcp' }));
    expect(refused).toMatchObject({ status: 503, code: 'STORAGE_UNAVAILABLE' });
    expect(seen).toEqual(['POST /servers']);
    failures.left = 0;
  });
});

describe('answers are read up to maxResponseBytes', () => {
  /** A hostile "fleet": answers with an endless chunked body, or declares a huge one; counts the bytes it got out. */
  let hostile: Server;
  let base = '';
  let sent = 0;
  beforeAll(async () => {
    hostile = createServer((request, response) => {
      if (request.url?.endsWith('/declared')) {
        response.writeHead(200, { 'content-type': 'application/json', 'content-length': String(2 ** 40) });
        response.write('{"success":true,"data":"');
        return;
      }
      response.writeHead(200, { 'content-type': 'application/json' });
      response.write('{"success":true,"data":"');
      const chunk = 'x'.repeat(64 * 1024);
      const pump = () => {
        while (!response.destroyed && sent < 1024 ** 3) {
          sent += chunk.length;
          if (!response.write(chunk)) return void response.once('drain', pump);
        }
      };
      pump();
    });
    await new Promise<void>((resolve) => hostile.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(hostile.address() as AddressInfo).port}/v1`;
  });
  afterAll(async () => {
    hostile.closeAllConnections();
    await new Promise((resolve) => hostile.close(resolve));
  });

  it('an endless answer is cut off past the bound and thrown as too_large, naming the option', async () => {
    const client = createClient({ baseUrl: base, apiKey: 'mcpf_x', maxResponseBytes: 1024 * 1024, retries: 0 });
    const error = await rejection(client.servers.list());
    expect(error).toBeInstanceOf(FleetNetworkError);
    expect(error).toMatchObject({ reason: 'too_large', message: expect.stringContaining('maxResponseBytes') });
    // It stopped reading: the server got out at most a few socket buffers beyond the bound, not the gigabyte it offered.
    expect(sent).toBeLessThan(32 * 1024 * 1024);
  });

  it('a declared Content-Length over the bound is refused before reading; a bad bound is refused at creation', async () => {
    const client = createClient({ baseUrl: base, apiKey: 'mcpf_x', retries: 0 });
    expect(await rejection(client.servers.get('declared'))).toMatchObject({ name: 'FleetNetworkError', reason: 'too_large' });
    expect(() => createClient({ baseUrl: base, maxResponseBytes: 0 })).toThrow(/maxResponseBytes must be a whole number/);
  });
});
