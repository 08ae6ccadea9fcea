import { afterAll, describe, expect, it } from 'vitest';
import { type Adapter, ADAPTERS, type Served, serveFleet } from '../support/adapters.js';
import { type ApiResponse, createKey, type RequestOptions, send } from '../support/http-client.js';

/**
 * The one place both adapters are compared: the same requests, with the same X-Request-Id and the same clock,
 * must get the same status, body and headers from Hono and from Express.
 */

const T0 = Date.parse('2026-11-22T10:00:00.000Z');
const COMPARED_HEADERS = ['content-type', 'cache-control', 'x-content-type-options', 'x-request-id', 'allow', 'www-authenticate'];

interface Step {
  method: string;
  /** May name `{srv1}`, `{srv2}`…: the ids of the servers created so far, in creation order. */
  path: string;
  options?: RequestOptions;
  /** Which key to send: the full key (default), a read-only key, or none/unknown. */
  as?: 'admin' | 'reader' | 'none' | 'unknown';
}

const json = { 'content-type': 'application/json' };

function stream(size: number): ReadableStream<Uint8Array> {
  let sent = 0;
  return new ReadableStream<Uint8Array>({
    pull(controller) {
      if (sent >= size) return controller.close();
      controller.enqueue(new TextEncoder().encode('x'.repeat(4096)));
      sent += 4096;
    },
  });
}

const STEPS: (() => Step)[] = [
  () => ({ method: 'POST', path: '/servers', options: { body: { name: 'one', type: 'http', endpoint: 'https://a.example.com/mcp', authentication: { type: 'bearer', token: 'tkn' }, timeout: 1000 } } }),
  () => ({ method: 'POST', path: '/servers', options: { body: { name: 'two', type: 'websocket', endpoint: 'wss://b.example.com', heartbeat: { enabled: true, interval: 5000 } } } }),
  () => ({ method: 'POST', path: '/servers', options: { body: { name: 'three', type: 'stdio', command: 'node', env: { B: '1', A: '2' } } } }),
  () => ({ method: 'POST', path: '/servers', options: { body: { name: 'one', type: 'http', endpoint: 'https://c.example.com' } } }),
  () => ({ method: 'POST', path: '/servers', options: { body: { name: '', type: 'http', endpoint: 'ftp://x', timeout: 0, id: 'srv_x', foo: 1 } } }),
  () => ({ method: 'POST', path: '/servers', options: { body: { name: 'x', type: 'http', endpoint: 'https://x.example.com', heartbeat: { enabled: true } } } }),
  () => ({ method: 'GET', path: '/servers' }),
  () => ({ method: 'GET', path: '/servers?limit=1&page=2' }),
  () => ({ method: 'GET', path: '/servers?page=9&limit=2' }),
  () => ({ method: 'GET', path: '/servers?type=stdio&health=unknown' }),
  () => ({ method: 'GET', path: '/servers?page=0&limit=101&zzz=1' }),
  () => ({ method: 'GET', path: '/servers?page=1&page=2' }),
  () => ({ method: 'GET', path: '/servers/{srv1}' }),
  () => ({ method: 'GET', path: '/servers/{srv3}' }),
  () => ({ method: 'PUT', path: '/servers/{srv1}', options: { body: { timeout: 5000, retry: { enabled: true } } } }),
  () => ({ method: 'PUT', path: '/servers/{srv1}', options: { body: { timeout: null, authentication: null } } }),
  () => ({ method: 'PUT', path: '/servers/{srv1}', options: { body: { name: 'two' } } }),
  () => ({ method: 'PUT', path: '/servers/{srv1}', options: { body: {} } }),
  () => ({ method: 'PUT', path: '/servers/{srv1}', options: { body: { command: 'node' } } }),
  () => ({ method: 'DELETE', path: '/servers/{srv2}' }),
  () => ({ method: 'GET', path: '/servers/{srv2}' }),
  () => ({ method: 'DELETE', path: '/servers/{srv2}' }),
  () => ({ method: 'GET', path: '/servers/srv_000000000000000000000000' }),
  () => ({ method: 'GET', path: '/nowhere/at/all' }),
  () => ({ method: 'GET', path: '/servers/%E0%A4%A' }),
  () => ({ method: 'PATCH', path: '/servers', options: { body: { a: 1 } } }),
  () => ({ method: 'POST', path: '/servers/{srv1}', options: { body: { a: 1 } } }),
  () => ({ method: 'DELETE', path: '/tool-calls' }),
  () => ({ method: 'POST', path: '/servers', options: { body: { name: 'big', pad: 'x'.repeat(70_000) } } }),
  () => ({ method: 'POST', path: '/servers', options: { body: stream(80_000), raw: true, headers: json } }),
  () => ({ method: 'POST', path: '/servers', options: { body: '{"name":"a"}', raw: true, headers: { 'content-type': 'text/plain' } } }),
  () => ({ method: 'POST', path: '/servers', options: { body: new TextEncoder().encode('{"name":"a"}'), raw: true } }),
  () => ({ method: 'POST', path: '/servers', options: { body: '{"name":', raw: true, headers: json } }),
  () => ({ method: 'POST', path: '/servers', options: { body: '[1,2]', raw: true, headers: json } }),
  () => ({ method: 'POST', path: '/servers', options: { body: '', raw: true, headers: json } }),
  () => ({ method: 'GET', path: '/servers', as: 'none' }),
  () => ({ method: 'GET', path: '/servers', as: 'unknown' }),
  () => ({ method: 'POST', path: '/servers', as: 'reader', options: { body: { name: 'r', type: 'http', endpoint: 'https://r.example.com' } } }),
  () => ({ method: 'GET', path: '/tool-calls', as: 'reader' }),
  () => ({ method: 'GET', path: '/tool-calls' }),
  () => ({ method: 'GET', path: '/tool-calls?limit=0' }),
  () => ({ method: 'GET', path: '/tool-calls/call_abcdefghijklmnopqrstuvwx' }),
  () => ({ method: 'GET', path: '/servers/' }),
  () => ({ method: 'POST', path: '/servers/{srv1}/tools/call', options: { body: { name: '', arguments: [1], extra: true } } }),
  () => ({ method: 'POST', path: '/servers/srv_000000000000000000000000/tools/call', options: { body: { name: 'echo' } } }),
  () => ({ method: 'POST', path: '/servers/{srv1}/tools/call', as: 'reader', options: { body: { name: 'echo' } } }),
  () => ({ method: 'GET', path: '/servers/{srv1}/tools/call' }),
  () => ({ method: 'GET', path: '/tool-calls?status=bogus&tool=&server_id=x' }),
  () => ({ method: 'GET', path: '/tool-calls?status=timeout&tool=echo' }),
];

interface Observed {
  step: string;
  status: number;
  headers: Record<string, string | null>;
  body: string;
}

/** Replaces every server id by `srv_#n` in order of first appearance. */
function normalizer() {
  const ids = new Map<string, string>();
  return (text: string) =>
    text.replace(/srv_[0-9A-Za-z]{24}/g, (id) => {
      if (id === 'srv_000000000000000000000000') return id;
      let alias = ids.get(id);
      if (alias === undefined) ids.set(id, (alias = `srv_#${ids.size + 1}`));
      return alias;
    });
}

async function run(adapter: Adapter, opened: Served[]): Promise<Observed[]> {
  let clock = T0;
  const served = await serveFleet(adapter, { now: () => clock, stdio: { commands: ['node'] } });
  opened.push(served);
  const keys = {
    admin: await createKey(served, { account: 'parity' }),
    reader: await createKey(served, { account: 'parity', scopes: ['servers:read'] }),
    none: null,
    unknown: `mcpf_${'Z'.repeat(40)}`,
  };
  const normalize = normalizer();
  const created: string[] = [];
  const observed: Observed[] = [];
  for (const [i, make] of STEPS.entries()) {
    clock += 1000;
    const step = make();
    const path = step.path.replace(/\{srv(\d+)\}/g, (_m, n: string) => created[Number(n) - 1] ?? 'missing');
    const options: RequestOptions = { ...step.options, headers: { ...step.options?.headers, 'x-request-id': `parity-${i}` } };
    const res: ApiResponse = await send(served.url, step.method, path, options, keys[step.as ?? 'admin']);
    if (step.method === 'POST' && res.status === 201) created.push(res.body.data.id);
    observed.push({
      step: `${step.method} ${step.path}${step.as ? ` as ${step.as}` : ''}`,
      status: res.status,
      headers: Object.fromEntries(COMPARED_HEADERS.map((h) => [h, res.headers.get(h)])),
      body: normalize(res.text),
    });
  }
  return observed;
}

describe('adapter parity', () => {
  const opened: Served[] = [];
  afterAll(async () => {
    await Promise.all(opened.map((s) => s.close()));
  });

  it('hono and express answer the same requests with identical status, body and headers', async () => {
    expect(ADAPTERS.map((a) => a.name).sort()).toEqual(['express', 'hono']);
    const results = [];
    for (const adapter of ADAPTERS) results.push(await run(adapter, opened));
    const [first, ...rest] = results;
    expect(first).toBeDefined();
    // sanity: the script exercised what it claims to
    const statuses = new Set(first!.map((o) => o.status));
    for (const status of [200, 201, 400, 401, 403, 404, 405, 409, 413, 415]) expect(statuses).toContain(status);
    expect(first!.every((o, i) => o.headers['x-request-id'] === `parity-${i}`)).toBe(true);
    for (const other of rest) {
      expect(other).toHaveLength(first!.length);
      for (const [i, o] of other.entries()) expect(o, `step ${i}: ${o.step}`).toEqual(first![i]);
    }
  });
});
