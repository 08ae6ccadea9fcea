import { Client as V2Client, StreamableHTTPClientTransport as V2Transport } from '@modelcontextprotocol/client';
import type { Principal } from '@mcp-fleet/core';
import { Client as V1Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as V1Transport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type HostileUpstream, startHostileUpstream } from '../../packages/core/src/mcp/fixtures/hostile-upstream.js';
import { startV2ToolServer, type ToolServer } from '../../packages/core/src/mcp/fixtures/tool-servers.js';
import { ADAPTERS } from '../support/adapters.js';
import { api, createServer, expectError, expectSuccess, serveForSuite } from '../support/http-client.js';

/** `Bearer {account}`: every scope, every tool. */
function authenticate(request: Request): Principal | null {
  const account = /^Bearer (.+)$/.exec(request.headers.get('authorization') ?? '')?.[1];
  return account === undefined ? null : { account, tier: 'pro', scopes: null, tools: null };
}

let seq = 0;
const account = () => `lst-${++seq}-${Math.random().toString(36).slice(2, 7)}`;

async function v1Session(url: string, token: string, onChanged: () => void): Promise<{ client: V1Client; transport: V1Transport }> {
  const client = new V1Client({ name: 'listings-v1', version: '1.0.0' });
  client.setNotificationHandler(ToolListChangedNotificationSchema, onChanged);
  const transport = new V1Transport(new URL(url), { requestInit: { headers: { authorization: `Bearer ${token}` } } });
  await client.connect(transport);
  return { client, transport };
}

let beta: ToolServer;
beforeAll(async () => {
  beta = await startV2ToolServer();
});
afterAll(async () => {
  await beta.close();
});

const MIB = 1024 * 1024;

describe.each(ADAPTERS)('a listing is bounded whole, across its pages ($name)', (adapter) => {
  const suite = serveForSuite(adapter, { authenticate, allowPrivateNetworks: true, onError: () => {}, listings: { maxBytes: MIB, maxItems: 100 } });

  it('past listings.maxBytes: GET /servers/{id}/tools is 502 UPSTREAM_RESPONSE_TOO_LARGE, /mcp leaves the server out, and no page past the bound is read', async () => {
    // 20 pages of 200 KB: 4 MB in all, four times the bound.
    const hostile = await startHostileUpstream({ pages: 20, perPage: 10, descriptionBytes: 20_000 });
    try {
      const name = account();
      const rest = api(suite.served, name);
      const big = await createServer(rest, { name: 'big', type: 'http', endpoint: hostile.url });
      await createServer(rest, { name: 'beta', type: 'http', endpoint: beta.url });
      expectError(await rest.get(`/servers/${big.id}/tools`), 502, 'UPSTREAM_RESPONSE_TOO_LARGE', { limit_bytes: MIB, option: 'listings.maxBytes' });
      // The sixth page passes 1 MiB: the listing stops there, it does not read the other fourteen.
      expect(hostile.pagesServed()).toBeLessThanOrEqual(6);

      const client = new V2Client({ name: 'listings', version: '1.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
      await client.connect(new V2Transport(new URL(`${suite.served.url}/mcp`), { requestInit: { headers: { authorization: `Bearer ${name}` } } }));
      const { tools } = await client.listTools();
      expect(tools.map((tool) => tool.name).sort()).toEqual(['beta__echo', 'beta__fail', 'beta__slow']);
      await client.close();
    } finally {
      await hostile.close();
    }
  });

  it('past listings.maxItems: refused the same way, after the page that passed it', async () => {
    const hostile = await startHostileUpstream({ pages: 5, perPage: 40 });
    try {
      const rest = api(suite.served, account());
      const many = await createServer(rest, { name: 'many', type: 'http', endpoint: hostile.url });
      expectError(await rest.get(`/servers/${many.id}/tools`), 502, 'UPSTREAM_RESPONSE_TOO_LARGE', { limit_items: 100, option: 'listings.maxItems' });
      expect(hostile.pagesServed()).toBe(3);
      // Within the bound, a listing of several pages is answered whole.
      const small = await startHostileUpstream({ pages: 2, perPage: 40 });
      try {
        const fits = await createServer(rest, { name: 'fits', type: 'http', endpoint: small.url });
        expect(expectSuccess(await rest.get(`/servers/${fits.id}/tools`), 200)).toHaveLength(80);
      } finally {
        await small.close();
      }
    } finally {
      await hostile.close();
    }
  });
});

describe.each(ADAPTERS)('an aggregated answer is bounded by listings.cacheBytesPerAccount ($name)', (adapter) => {
  const suite = serveForSuite(adapter, { authenticate, allowPrivateNetworks: true, onError: () => {}, listings: { maxBytes: 300_000, cacheBytesPerAccount: 400_000 } });

  it('/mcp tools/list takes servers in order while they fit and leaves out the rest; /servers/{id}/mcp serves the one left out', async () => {
    // Two servers of ~200 KB of tools each: one fits in 400 KB, two do not.
    const first = await startHostileUpstream({ pages: 1, perPage: 10, descriptionBytes: 20_000 });
    const second = await startHostileUpstream({ pages: 1, perPage: 10, descriptionBytes: 20_000 });
    try {
      const name = account();
      const rest = api(suite.served, name);
      await createServer(rest, { name: 'first', type: 'http', endpoint: first.url });
      const other = await createServer(rest, { name: 'second', type: 'http', endpoint: second.url });
      const connect = async (url: string) => {
        const client = new V2Client({ name: 'listings', version: '1.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
        await client.connect(new V2Transport(new URL(url), { requestInit: { headers: { authorization: `Bearer ${name}` } } }));
        return client;
      };
      const all = await connect(`${suite.served.url}/mcp`);
      const names = (await all.listTools()).tools.map((tool) => tool.name);
      expect(names).toHaveLength(10);
      expect(names.every((tool) => tool.startsWith('first__'))).toBe(true);
      const one = await connect(`${suite.served.url}/servers/${other.id}/mcp`);
      expect((await one.listTools()).tools).toHaveLength(10);
      await Promise.all([all.close(), one.close()]);
    } finally {
      await Promise.all([first.close(), second.close()]);
    }
  });
});

describe.each(ADAPTERS)("an upstream's notifications/tools/list_changed stays in its account, coalesced ($name)", (adapter) => {
  // One re-list per server a minute at most: within the test only the first notification of a flood may re-list.
  const suite = serveForSuite(adapter, { authenticate, allowPrivateNetworks: true, onError: () => {}, listings: { relistIntervalMs: 60_000 } });
  const mcpUrl = () => `${suite.served.url}/mcp`;

  it("a flood of 300 from tenant E's upstream: no session of tenant D hears anything, E's sessions hear it, the upstream is re-listed at most once", async () => {
    const hostile: HostileUpstream = await startHostileUpstream();
    const sessions: { client: V1Client; transport: V1Transport }[] = [];
    try {
      const tenantE = account();
      const tenantD = account();
      await createServer(api(suite.served, tenantE), { name: 'noisy', type: 'http', endpoint: hostile.url });
      await createServer(api(suite.served, tenantD), { name: 'beta', type: 'http', endpoint: beta.url });
      let heardByE = 0;
      let heardByD = 0;
      const e = await v1Session(mcpUrl(), tenantE, () => (heardByE += 1));
      sessions.push(e);
      expect((await e.client.listTools()).tools.map((tool) => tool.name)).toEqual(['noisy__t0_0', 'noisy__t0_1', 'noisy__t0_2']);
      // D's sessions never listed: before the fix any change anywhere told them (a session not checked before is told).
      for (let i = 0; i < 5; i++) sessions.push(await v1Session(mcpUrl(), tenantD, () => (heardByD += 1)));
      // Let the GET streams open (the fleet's to the upstream, the clients' to the fleet) before anything changes.
      await new Promise((resolve) => setTimeout(resolve, 300));
      const listingsBefore = hostile.listings();

      await hostile.flood(300);
      await expect.poll(() => heardByE, { timeout: 5000 }).toBeGreaterThanOrEqual(1);
      // What else the flood would cause has had time to arrive.
      await new Promise((resolve) => setTimeout(resolve, 500));
      expect(heardByD).toBe(0);
      expect(hostile.listings() - listingsBefore).toBeLessThanOrEqual(1);
      // E's view is right: the session re-listed once and sees the upstream's tools.
      expect((await e.client.listTools()).tools).toHaveLength(3);
    } finally {
      await Promise.all(sessions.map(({ transport, client }) => transport.terminateSession().then(() => client.close()).catch(() => {})));
      await hostile.close();
    }
  });
});
