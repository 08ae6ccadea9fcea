import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createMcpHandler, McpServer } from '@modelcontextprotocol/server';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createFleet, type Fleet } from '../fleet.js';
import { toWebRequest } from '../node/request.js';
import { writeWebResponse } from '../node/response.js';
import type { FleetOptions } from '../options.js';
import type { Prober } from '../health/health-service.js';
import type { FleetStore } from '../store.js';

/** What the suite hands `open`. */
export interface OpenFleetStoreContext {
  /**
   * Where the case's data lives (a key prefix, a file name, a schema): unique to the case. Opened twice with the same
   * namespace, a store must reach the same data, as another process on the same database would.
   */
  namespace: string;
  /** The clock the store must use wherever it keeps time (claims, counters); the fleets use the same. */
  now: () => number;
}

export interface FleetStoreSuiteOptions {
  /**
   * Two stores opened with the same namespace share records and the index (servers, keys, claims, quotas, the webhook
   * outbox, MCP session records), as processes sharing one file or one Redis do: the suite then runs those cases
   * across two fleets, each over a store of its own. `false` (a store in this process's memory) skips them, saying so.
   * @default false
   */
  sharedAcrossFleets?: boolean;
  /**
   * Two stores opened with the same namespace also share rate-limit counters and leases, so limits are exact across
   * fleets. `false` (counters in this process, as the SQLite store keeps them) skips that case, saying so.
   * @default sharedAcrossFleets
   */
  sharedCounters?: boolean;
  /** Removes what a case wrote, after its fleets and stores are closed. @default nothing */
  cleanup?: (namespace: string) => Promise<void> | void;
  /** Each case's time limit, in ms. @default 30000 */
  timeout?: number;
}

const ORIGIN = 'http://fleet.test';
/** 32 bytes: secrets are stored encrypted, as they should be, and no plaintext warning is printed. */
const ENCRYPTION_KEY = new Uint8Array(32).fill(7);
const wait = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

interface Answer {
  status: number;
  // biome-ignore lint/suspicious/noExplicitAny: the envelope of any route
  body: any;
  headers: Headers;
}

async function call(fleet: Fleet, key: string, method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<Answer> {
  const init: RequestInit = { method, headers: { authorization: `Bearer ${key}`, ...headers } };
  if (body !== undefined) {
    init.body = JSON.stringify(body);
    (init.headers as Record<string, string>)['content-type'] = 'application/json';
  }
  const response = await fleet.handle(new Request(`${ORIGIN}${fleet.prefix}${path}`, init));
  const text = await response.text();
  return { status: response.status, body: text === '' ? undefined : JSON.parse(text), headers: response.headers };
}

/** One JSON-RPC exchange at `/mcp`: its answer whether JSON or an event stream. */
async function rpc(fleet: Fleet, key: string, message: Record<string, unknown>, session?: string): Promise<{ status: number; session: string | null; message: any }> {
  const response = await fleet.handle(
    new Request(`${ORIGIN}${fleet.prefix}/mcp`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${key}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-protocol-version': '2025-06-18',
        ...(session !== undefined && { 'mcp-session-id': session }),
      },
      body: JSON.stringify(message),
    }),
  );
  const text = await response.text();
  const json = (response.headers.get('content-type') ?? '').includes('text/event-stream')
    ? text
        .split('\n')
        .filter((line) => line.startsWith('data:'))
        .map((line) => line.slice(5).trim())
        .find((line) => line !== '')
    : text;
  return { status: response.status, session: response.headers.get('mcp-session-id'), message: json === undefined || json === '' ? undefined : JSON.parse(json) };
}

async function listen(handler: (req: IncomingMessage, res: import('node:http').ServerResponse) => void): Promise<{ url: string; server: Server }> {
  const server = createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server };
}

async function shut(server: Server): Promise<void> {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
}

/** An MCP server with one tool, `echo` ({ text }), over Streamable HTTP at `/mcp`. */
async function startUpstream(): Promise<{ url: string; server: Server }> {
  const handler = createMcpHandler(() => {
    const server = new McpServer({ name: 'fleet-store-suite', version: '1.0.0' });
    server.registerTool('echo', { description: 'Echoes text', inputSchema: z.object({ text: z.string() }) }, async ({ text }) => ({ content: [{ type: 'text' as const, text }] }));
    return server;
  });
  const { url, server } = await listen((req, res) => {
    void handler.fetch(toWebRequest(req, res)).then((response) => writeWebResponse(res, response));
  });
  return { url: `${url}/mcp`, server };
}

/**
 * Whole fleets over the store under test (better-auth's `createTestSuite` for database adapters in spirit): every
 * case calls `createFleet({ store })` and speaks to it as users do, through `fleet.handle` with real HTTP requests,
 * real MCP messages and a real webhook receiver. Call it at the top level of a vitest file:
 *
 *   fleetStoreSuite('my store', ({ namespace, now }) => createMyStore({ prefix: namespace, now }), { sharedAcrossFleets: true });
 *
 * `open` gives a new store over the case's namespace; the suite closes every store it opened (after the fleets over
 * it), then calls `cleanup`.
 */
export function fleetStoreSuite(name: string, open: (context: OpenFleetStoreContext) => FleetStore | Promise<FleetStore>, options: FleetStoreSuiteOptions = {}): void {
  const shared = options.sharedAcrossFleets ?? false;
  const sharedCounters = options.sharedCounters ?? shared;
  const timeout = options.timeout ?? 30_000;
  const twoFleets = (reason: string | undefined) => (title: string, fn: () => Promise<void>) =>
    reason === undefined ? it(title, fn, timeout) : it.skip(`${title} (skipped: ${reason})`, fn);
  const acrossFleets = twoFleets(shared ? undefined : 'two stores opened on one namespace do not share data (sharedAcrossFleets: false)');
  const acrossCounters = twoFleets(sharedCounters ? undefined : 'rate-limit counters are kept in each process (sharedCounters: false)');

  describe(`fleetStoreSuite: ${name}`, () => {
    let upstream: { url: string; server: Server };
    let cases = 0;
    /** What the current case opened, closed after it in this order. */
    let fleets: Fleet[] = [];
    let stores: FleetStore[] = [];
    let namespaces: string[] = [];
    let offset = 0;
    const now = () => Date.now() + offset;

    beforeAll(async () => {
      upstream = await startUpstream();
    });
    afterAll(async () => {
      await shut(upstream.server);
    });
    afterEach(async () => {
      for (const fleet of fleets.splice(0)) await fleet.close();
      for (const store of stores.splice(0)) await store.close();
      for (const namespace of namespaces.splice(0)) await options.cleanup?.(namespace);
      offset = 0;
    });

    /** `count` fleets, each over a store of its own opened on one new namespace. */
    async function fleetsOn(count: number, fleetOptions: FleetOptions = {}): Promise<Fleet[]> {
      const namespace = `fss${process.pid}x${++cases}x${Math.random().toString(36).slice(2, 8)}`;
      namespaces.push(namespace);
      const made: Fleet[] = [];
      for (let i = 0; i < count; i++) {
        const store = await open({ namespace, now });
        stores.push(store);
        const fleet = createFleet({ store, now, allowPrivateNetworks: true, encryptionKey: ENCRYPTION_KEY, onError: () => {}, ...fleetOptions });
        fleets.push(fleet);
        made.push(fleet);
      }
      return made;
    }

    const keyOf = async (fleet: Fleet, account: string, extra: { expires_at?: string } = {}) =>
      (await fleet.keys.create({ account, tier: 'pro', ...extra }))._unsafeUnwrap().secret;
    const server = (serverName: string, endpoint = 'https://mcp.example.com/mcp') => ({ name: serverName, type: 'http', endpoint });

    it(
      'creates, reads, updates, lists page by page and deletes servers',
      async () => {
        const [fleet] = (await fleetsOn(1, { webhooks: false })) as [Fleet];
        const key = await keyOf(fleet, 'crud');
        const ids: string[] = [];
        for (let i = 0; i < 7; i++) {
          const created = await call(fleet, key, 'POST', '/servers', server(`s${i}`));
          expect(created.status).toBe(201);
          ids.push(created.body.data.id);
        }
        const seen: string[] = [];
        for (let page = 1; page <= 3; page++) {
          const listed = await call(fleet, key, 'GET', `/servers?page=${page}&limit=3`);
          expect(listed.status).toBe(200);
          expect(listed.body.pagination).toMatchObject({ page, limit: 3, total: 7 });
          seen.push(...listed.body.data.map((s: { id: string }) => s.id));
        }
        expect([...seen].sort()).toEqual([...ids].sort());
        expect(new Set(seen).size).toBe(7);

        const patched = await call(fleet, key, 'PUT', `/servers/${ids[0]}`, { name: 'renamed' });
        expect(patched.status).toBe(200);
        expect((await call(fleet, key, 'GET', `/servers/${ids[0]}`)).body.data.name).toBe('renamed');
        // The old name is free again, the new one is taken.
        expect((await call(fleet, key, 'POST', '/servers', server('s0'))).status).toBe(201);
        expect((await call(fleet, key, 'POST', '/servers', server('renamed'))).status).toBe(409);

        expect((await call(fleet, key, 'DELETE', `/servers/${ids[1]}`)).status).toBe(200);
        expect((await call(fleet, key, 'GET', `/servers/${ids[1]}`)).status).toBe(404);
        expect((await call(fleet, key, 'GET', '/servers?limit=100')).body.pagination.total).toBe(7);
        // Another account sees none of it.
        expect((await call(fleet, await keyOf(fleet, 'other'), 'GET', `/servers/${ids[0]}`)).status).toBe(404);
      },
      timeout,
    );

    /** Concurrent creates of one name, and of more servers than the quota, spread over `fleets`. */
    async function raceClaimsAndQuota(racing: Fleet[]): Promise<void> {
      const first = racing[0] as Fleet;
      const key = await keyOf(first, 'race');
      const at = (i: number) => racing[i % racing.length] as Fleet;
      const same = await Promise.all(Array.from({ length: 8 }, (_, i) => call(at(i), key, 'POST', '/servers', server('same'))));
      expect(same.filter((a) => a.status === 201)).toHaveLength(1);
      for (const refused of same.filter((a) => a.status !== 201)) expect(refused.body.error.code).toBe('SERVER_NAME_EXISTS');

      const many = await Promise.all(Array.from({ length: 12 }, (_, i) => call(at(i), key, 'POST', '/servers', server(`q${i}`))));
      // The quota is 5 and `same` holds one place.
      expect(many.filter((a) => a.status === 201)).toHaveLength(4);
      for (const refused of many.filter((a) => a.status !== 201)) {
        expect(refused.status).toBe(409);
        expect(refused.body.error).toMatchObject({ code: 'QUOTA_EXCEEDED', details: { resource: 'servers', limit: 5 } });
      }
      for (const fleet of racing) expect((await call(fleet, key, 'GET', '/servers')).body.pagination.total).toBe(5);
    }

    it(
      'name claims and the server quota hold under concurrent creates in one fleet',
      async () => {
        await raceClaimsAndQuota(await fleetsOn(1, { webhooks: false, rateLimit: false, quotas: { serversPerAccount: 5 } }));
      },
      timeout,
    );

    acrossFleets('name claims and the server quota hold under concurrent creates split across two fleets', async () => {
      await raceClaimsAndQuota(await fleetsOn(2, { webhooks: false, rateLimit: false, quotas: { serversPerAccount: 5 } }));
    });

    /** 16 concurrent reads against an operation limit of 10, spread over `fleets`: exactly 10 pass. */
    async function exactLimit(counted: Fleet[]): Promise<void> {
      const key = await keyOf(counted[0] as Fleet, 'limited');
      const answers = await Promise.all(Array.from({ length: 16 }, (_, i) => call(counted[i % counted.length] as Fleet, key, 'GET', '/servers')));
      expect(answers.filter((a) => a.status === 200)).toHaveLength(10);
      for (const refused of answers.filter((a) => a.status !== 200)) {
        expect(refused.status).toBe(429);
        expect(refused.body.error.code).toBe('RATE_LIMITED');
      }
    }
    // The clock a few seconds into the next real minute, so that no window ends during the case: on the fleet's clock,
    // and on a store's own (a database ends a window at its absolute end by its clock, so that end must lie ahead of the
    // real time too; a clock set back to mid-minute put it as little as a moment ahead, and a burst then crossed it).
    const earlyInNextMinute = () => {
      offset = 60_000 - (Date.now() % 60_000) + 5_000;
    };

    it(
      'a rate limit is exact under concurrent requests in one fleet',
      async () => {
        earlyInNextMinute();
        await exactLimit(await fleetsOn(1, { webhooks: false, rateLimit: { operations: { 'servers.list': 10 } } }));
      },
      timeout,
    );

    acrossCounters('a rate limit is exact across two fleets sharing the store', async () => {
      earlyInNextMinute();
      await exactLimit(await fleetsOn(2, { webhooks: false, rateLimit: { operations: { 'servers.list': 10 } } }));
    });

    acrossFleets('a key revoked through one fleet is refused by the other on its next request', async () => {
      const [a, b] = (await fleetsOn(2, { webhooks: false })) as [Fleet, Fleet];
      const created = (await a.keys.create({ account: 'revoked', tier: 'pro' }))._unsafeUnwrap();
      for (let i = 0; i < 3; i++) expect((await call(b, created.secret, 'GET', '/servers')).status).toBe(200);
      (await a.keys.revoke(created.key.id))._unsafeUnwrap();
      expect((await call(b, created.secret, 'GET', '/servers')).status).toBe(401);
      expect((await call(a, created.secret, 'GET', '/servers')).status).toBe(401);
    });

    acrossFleets('webhook deliveries are sent exactly once by two workers, one of them stopped mid-delivery', async () => {
      const answered = new Map<string, number>();
      let held: string | undefined;
      const receiver = await listen((req, res) => {
        const id = String(req.headers['webhook-id']);
        req.resume();
        // The first delivery is held: its sender is stopped while it waits.
        if (held === undefined) {
          held = id;
          return;
        }
        answered.set(id, (answered.get(id) ?? 0) + 1);
        res.writeHead(200).end();
      });
      try {
        // A lease outlives an attempt (timeoutMs): the held delivery is taken over only once its sender is gone.
        const workers = { webhooks: { pollIntervalMs: 20, timeoutMs: 4000, leaseMs: 5000, retry: { baseMs: 50 } } };
        const [a] = (await fleetsOn(1, { ...workers, rateLimit: false })) as [Fleet];
        const key = await keyOf(a, 'hooks');
        const hook = await call(a, key, 'POST', '/webhooks', { url: `${receiver.url}/hook`, events: ['server.created'] });
        expect(hook.status).toBe(201);
        expect((await call(a, key, 'POST', '/servers', server('first'))).status).toBe(201);
        await until(() => held !== undefined);
        // A second fleet on the same data, its worker running beside the first one's.
        const namespace = namespaces[0] as string;
        const store = await open({ namespace, now });
        stores.push(store);
        const b = createFleet({ store, now, allowPrivateNetworks: true, encryptionKey: ENCRYPTION_KEY, onError: () => {}, rateLimit: false, ...workers });
        fleets.push(b);
        const created = await Promise.all(Array.from({ length: 6 }, (_, i) => call(i % 2 === 0 ? a : b, key, 'POST', '/servers', server(`more${i}`))));
        for (const answer of created) expect(answer.status).toBe(201);
        // The first worker stops with the held delivery in flight; the other takes it over once its lease lapses.
        await a.close();
        await until(() => answered.size === 7, 20_000);
        await wait(300);
        expect([...answered.values()]).toEqual(Array(7).fill(1));
        expect(answered.has(held as string)).toBe(true);
        const deliveries = (await b.webhooks?.deliveries('hooks', hook.body.data.id, { limit: 100 }))?._unsafeUnwrap();
        expect(deliveries?.data.map((d) => d.status)).toEqual(Array(7).fill('delivered'));
      } finally {
        await shut(receiver.server);
      }
    });

    acrossFleets('an MCP session opened on one fleet is served by the other', async () => {
      const [a, b] = (await fleetsOn(2, { webhooks: false, mcp: { sessionCheckMs: 0 } })) as [Fleet, Fleet];
      const key = await keyOf(a, 'mcp');
      expect((await call(a, key, 'POST', '/servers', server('up', upstream.url))).status).toBe(201);
      const init = await rpc(a, key, {
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'fleet-store-suite', version: '1.0.0' } },
      });
      expect(init.status).toBe(200);
      expect(init.message.result.protocolVersion).toBe('2025-06-18');
      const session = init.session as string;
      expect(session).toEqual(expect.any(String));
      expect((await rpc(a, key, { jsonrpc: '2.0', method: 'notifications/initialized' }, session)).status).toBe(202);

      const listed = await rpc(b, key, { jsonrpc: '2.0', id: 2, method: 'tools/list' }, session);
      expect(listed.status).toBe(200);
      expect(listed.message.result.tools.map((t: { name: string }) => t.name)).toContain('up__echo');
      const called = await rpc(b, key, { jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'up__echo', arguments: { text: 'from b' } } }, session);
      expect(called.message.result.content).toEqual([{ type: 'text', text: 'from b' }]);
      // Another account presenting the id finds no session, on either fleet.
      const intruder = await keyOf(b, 'intruder');
      for (const fleet of [a, b]) expect((await rpc(fleet, intruder, { jsonrpc: '2.0', id: 4, method: 'tools/list' }, session)).status).toBe(404);
    });

    acrossFleets("a server's circuit breaker opened through one fleet makes the other fail fast; a recovery one sees reaches the other", async () => {
      let down = true;
      // The probes (of either fleet) fail while `down`: two of them open the breaker; the calls go to the real upstream.
      const prober: Prober = async () =>
        down ? { ok: false, era: undefined, responseTimeMs: 1, error: { code: 'UPSTREAM_UNREACHABLE', message: 'down (fleetStoreSuite)' } } : { ok: true, era: '2026-07-28', responseTimeMs: 1, error: null };
      const [a, b] = (await fleetsOn(2, { webhooks: false, rateLimit: false, prober, health: { announceAfter: 1, breaker: { failures: 2, backoffMs: 60_000 } } })) as [Fleet, Fleet];
      const key = await keyOf(a, 'breaker');
      const id = (await call(a, key, 'POST', '/servers', server('up', upstream.url))).body.data.id;
      for (let i = 0; i < 2; i++) expect((await call(a, key, 'GET', `/servers/${id}/health`)).body.data.breaker.state === 'open').toBe(i === 1);
      const refused = await call(b, key, 'POST', `/servers/${id}/tools/call`, { name: 'echo', arguments: { text: 'b' } });
      expect(refused.status).toBe(503);
      expect(refused.body.error).toMatchObject({ code: 'UPSTREAM_UNAVAILABLE', details: { server_id: id } });
      down = false;
      expect((await call(a, key, 'GET', `/servers/${id}/health`)).body.data.breaker.state).toBe('closed');
      const called = await call(b, key, 'POST', `/servers/${id}/tools/call`, { name: 'echo', arguments: { text: 'b' } });
      expect(called.status).toBe(200);
      expect(called.body.data.status).toBe('success');
    });

    it(
      'tool-call records expire after their retention with their listing entries, and keys at their expiry',
      async () => {
        const [fleet] = (await fleetsOn(1, { webhooks: false, toolCalls: { retentionDays: 1, expirySweepMs: 50 } })) as [Fleet];
        const key = await keyOf(fleet, 'expiry');
        const expiring = await keyOf(fleet, 'expiry', { expires_at: new Date(now() + 3_600_000).toISOString() });
        const id = (await call(fleet, key, 'POST', '/servers', server('up', upstream.url))).body.data.id;
        const calls: string[] = [];
        for (let i = 0; i < 3; i++) {
          const answer = await call(fleet, key, 'POST', `/servers/${id}/tools/call`, { name: 'echo', arguments: { text: `t${i}` } });
          expect(answer.status).toBe(200);
          calls.push(answer.body.data.id);
        }
        expect((await call(fleet, key, 'GET', '/tool-calls')).body.pagination.total).toBe(3);
        expect((await call(fleet, expiring, 'GET', '/servers')).status).toBe(200);

        offset += 2 * 86_400_000;
        // The sweep removes the listing entries first, then the records.
        await until(async () => (await call(fleet, key, 'GET', `/tool-calls/${calls[2]}`)).status === 404, 10_000);
        expect((await call(fleet, key, 'GET', '/tool-calls')).body.pagination.total).toBe(0);
        for (const callId of calls) expect((await call(fleet, key, 'GET', `/tool-calls/${callId}`)).status).toBe(404);
        expect((await call(fleet, expiring, 'GET', '/servers')).status).toBe(401);
        expect((await call(fleet, key, 'GET', '/servers')).status).toBe(200);
      },
      timeout,
    );
  });
}

/** Polls `check` until it holds, or fails after `ms`. */
async function until(check: () => boolean | Promise<boolean>, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`condition not met within ${ms} ms`);
    await wait(20);
  }
}
