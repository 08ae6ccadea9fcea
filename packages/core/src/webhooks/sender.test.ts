import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createGuardedAgent } from '../net/guarded-agent.js';
import { createSender } from './sender.js';

let server: Server;
let base = '';
const hits: string[] = [];

beforeAll(async () => {
  server = createServer((req, res) => {
    hits.push(req.url ?? '');
    req.resume();
    if (req.url === '/redirect') res.writeHead(302, { location: '/target' }).end();
    else if (req.url === '/slow') setTimeout(() => res.writeHead(200).end(), 2000);
    else if (req.url === '/big') res.writeHead(500).end('x'.repeat(1_000_000));
    else if (req.url === '/busy') res.writeHead(503, { 'retry-after': '30' }).end();
    else res.writeHead(200).end('ok');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

describe('createSender', () => {
  const open = createSender(createGuardedAgent({ allowPrivateNetworks: true }));
  const send = (send: ReturnType<typeof createSender>, path: string, timeoutMs = 5000) =>
    send({ url: base + path, headers: { 'content-type': 'application/json' }, body: '{}', timeoutMs });

  it('a 2xx is success, with status and duration', async () => {
    const outcome = await send(open, '/ok');
    expect(outcome).toMatchObject({ statusCode: 200, error: null, retryAfter: undefined });
    expect(Number.isInteger(outcome.durationMs)).toBe(true);
  });

  it('does not follow a redirect', async () => {
    hits.length = 0;
    const outcome = await send(open, '/redirect');
    expect(outcome.statusCode).toBe(302);
    expect(outcome.error?.code).toBe('UNEXPECTED_STATUS');
    expect(hits).toEqual(['/redirect']);
  });

  it('drains a large error body without keeping any of it', async () => {
    const outcome = await send(open, '/big');
    expect(outcome.statusCode).toBe(500);
    expect(JSON.stringify(outcome)).not.toContain('xxxx');
  });

  it('reports Retry-After of a 503', async () => {
    expect(await send(open, '/busy')).toMatchObject({ statusCode: 503, retryAfter: '30' });
  });

  it('times out', async () => {
    const outcome = await send(open, '/slow', 200);
    expect(outcome).toMatchObject({ statusCode: null, error: { code: 'UPSTREAM_TIMEOUT' } });
  });

  it('goes through the guard: a loopback receiver is refused unless private networks are allowed', async () => {
    const guarded = createSender(createGuardedAgent());
    const outcome = await send(guarded, '/ok');
    expect(outcome).toMatchObject({ statusCode: null, error: { code: 'DESTINATION_NOT_ALLOWED' } });
  });
});
