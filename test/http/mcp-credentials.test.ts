/**
 * Streams on `/mcp` end with their credential: a 2025 session's GET stream and a 2026-07-28 `subscriptions/listen`,
 * opened with an API key, end when the key is revoked (at once in the fleet that revoked it, within
 * `mcp.credentialCheckMs` in another fleet sharing the store) or expires; another key's streams stay open. Real
 * keys, real HTTP through both adapters, the official v2 SDK client for the listen stream.
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { Client as V2Client, StreamableHTTPClientTransport as V2Transport } from '@modelcontextprotocol/client';
import { createMemoryStore, type Fleet } from '@mcp-fleet/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADAPTERS, type Served, serveFleet } from '../support/adapters.js';

const CHECK_MS = 200;

/**
 * Full garbage collections, as a busy process has them while streams stay open: what links a stream to what ends it
 * must not hang on weak references (a CI run lost a listen stream's link this way).
 */
async function collectGarbage(): Promise<void> {
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as () => void;
  for (let i = 0; i < 3; i++) {
    gc();
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
const HEADERS = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
let accounts = 0;
const account = () => `cred${++accounts}${Math.random().toString(36).slice(2, 7)}`;

async function keyOf(fleet: Fleet, account: string, expiresAt?: string): Promise<{ id: string; secret: string }> {
  const created = (await fleet.keys.create({ account, tier: 'pro', ...(expiresAt !== undefined && { expires_at: expiresAt }) }))._unsafeUnwrap();
  return { id: created.key.id, secret: created.secret };
}

/** Resolves `true` once `body` ends, `false` if it is still open after `ms`. */
function endsWithin(body: ReadableStream<Uint8Array>, ms: number): { ended: () => Promise<boolean>; cancel: () => Promise<void> } {
  const reader = body.getReader();
  const done = (async () => {
    for (;;) if ((await reader.read()).done) return true;
  })().catch(() => true);
  return {
    ended: () => Promise.race([done, new Promise<boolean>((resolve) => setTimeout(() => resolve(false), ms))]),
    cancel: () => reader.cancel().catch(() => {}),
  };
}

/** A 2025 session opened with `secret`, and its GET stream. */
async function sessionStream(url: string, secret: string) {
  const auth = { authorization: `Bearer ${secret}` };
  const init = await fetch(url, {
    method: 'POST',
    headers: { ...HEADERS, ...auth },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'watch', version: '1' } } }),
  });
  expect(init.status).toBe(200);
  await init.text();
  const session = init.headers.get('mcp-session-id') as string;
  const headers = { ...auth, 'mcp-session-id': session, 'mcp-protocol-version': '2025-06-18' };
  const ack = await fetch(url, { method: 'POST', headers: { ...HEADERS, ...headers }, body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }) });
  expect(ack.status).toBe(202);
  const get = await fetch(url, { method: 'GET', headers: { ...headers, accept: 'text/event-stream' } });
  expect(get.status).toBe(200);
  return endsWithin(get.body as ReadableStream<Uint8Array>, 3000);
}

/** A 2026-07-28 client of the official SDK listening for changes; resolves with its listen stream once it is open. */
async function listenStream(url: string, secret: string) {
  let opened!: (stream: ReturnType<typeof endsWithin>) => void;
  const listening = new Promise<ReturnType<typeof endsWithin>>((resolve) => (opened = resolve));
  // The SDK opens `subscriptions/listen` itself (listChanged); this fetch hands the test that one response's body.
  const watched: typeof fetch = async (input, init) => {
    const response = await fetch(input, init);
    if (typeof init?.body !== 'string' || !init.body.includes('"subscriptions/listen"') || response.body === null) return response;
    const [mine, theirs] = response.body.tee();
    opened(endsWithin(mine, 3000));
    return new Response(theirs, response);
  };
  const client = new V2Client(
    { name: 'watch', version: '1' },
    { versionNegotiation: { mode: { pin: '2026-07-28' } }, listChanged: { tools: { onChanged: () => {} } } },
  );
  await client.connect(new V2Transport(new URL(url), { fetch: watched, requestInit: { headers: { authorization: `Bearer ${secret}` } } }));
  return { stream: await listening, client };
}

describe.each(ADAPTERS)('streams end with their credential ($name)', (adapter) => {
  const store = createMemoryStore();
  let one: Served;
  let other: Served;
  beforeAll(async () => {
    // Two fleets on one store, as two processes: keys revoked through one are seen by the other.
    one = await serveFleet(adapter, { store, webhooks: false, mcp: { credentialCheckMs: CHECK_MS } });
    other = await serveFleet(adapter, { store, webhooks: false, mcp: { credentialCheckMs: CHECK_MS } });
  });
  afterAll(async () => {
    await one?.close();
    await other?.close();
  });

  it('a 2025 GET stream ends when its key is revoked in this fleet; another key of the account keeps its stream', async () => {
    const name = account();
    const [revoked, kept] = [await keyOf(one.fleet, name), await keyOf(one.fleet, name)];
    const gone = await sessionStream(`${one.url}/mcp`, revoked.secret);
    const stays = await sessionStream(`${one.url}/mcp`, kept.secret);
    expect((await one.fleet.keys.revoke(revoked.id)).isOk()).toBe(true);
    expect(await gone.ended()).toBe(true);
    expect(await stays.ended()).toBe(false);
    await stays.cancel();
  });

  it('a 2025 GET stream ends when its key is revoked through another fleet sharing the store', async () => {
    const name = account();
    const key = await keyOf(one.fleet, name);
    const held = await sessionStream(`${other.url}/mcp`, key.secret);
    await collectGarbage();
    expect((await one.fleet.keys.revoke(key.id)).isOk()).toBe(true);
    expect(await held.ended()).toBe(true);
  });

  it('a 2025 GET stream ends when its key expires', async () => {
    const key = await keyOf(one.fleet, account(), new Date(Date.now() + 1500).toISOString());
    const held = await sessionStream(`${one.url}/mcp`, key.secret);
    expect(await endsIn(held, 1000)).toBe(false);
    expect(await held.ended()).toBe(true);
  });

  it('a 2026-07-28 listen stream ends when its key is revoked, here or in another fleet; another key keeps listening', async () => {
    const name = account();
    const [here, there, kept] = [await keyOf(one.fleet, name), await keyOf(one.fleet, name), await keyOf(one.fleet, name)];
    const a = await listenStream(`${one.url}/mcp`, here.secret);
    const b = await listenStream(`${other.url}/mcp`, there.secret);
    const c = await listenStream(`${one.url}/mcp`, kept.secret);
    await collectGarbage();
    expect((await one.fleet.keys.revoke(here.id)).isOk()).toBe(true);
    expect((await one.fleet.keys.revoke(there.id)).isOk()).toBe(true);
    expect(await a.stream.ended()).toBe(true);
    expect(await b.stream.ended()).toBe(true);
    expect(await c.stream.ended()).toBe(false);
    await Promise.all([a.client.close(), b.client.close(), c.client.close()].map((closing) => closing.catch(() => {})));
  });
});

/** Whether the stream ended within `ms` (it is still watched afterwards). */
async function endsIn(stream: ReturnType<typeof endsWithin>, ms: number): Promise<boolean> {
  return Promise.race([stream.ended(), new Promise<boolean>((resolve) => setTimeout(() => resolve(false), ms))]);
}
