// One fleet behind the Hono adapter on a real port, in its own process. Started by bench/http.mjs with
// `on` (rate limits on, limits too high to refuse) or `off` (rateLimit: false). Talks to its parent over IPC:
//   → { type: 'ready', port, secret, sample }          once listening, with one answered request as a sanity check
//   ← { type: 'mark' }   → { type: 'marked' }           start of a measured round: reset the CPU clock
//   ← { type: 'stop' }   → { type: 'cpu', cpuMs, wallMs } end of the round: CPU used by this process since the mark
import { serve } from '@hono/node-server';
import { createFleet } from '@mcp-fleet/core';
import { createFleetApp } from '@mcp-fleet/hono';
import { createServer } from 'node:http';

const mode = process.argv[2];
if (mode !== 'on' && mode !== 'off') throw new Error('usage: http-server.mjs on|off');
const SERVERS = Number(process.env.BENCH_SERVERS ?? 10);

const fleet = createFleet({
  rateLimit: mode === 'on' ? { tiers: { pro: 1e9 }, operations: { 'servers.list': 1e9 } } : false,
  onError: (error) => console.error('[bench server]', error.code, error.cause ?? ''),
});
const { secret } = (await fleet.keys.create({ account: 'bench-acct', tier: 'pro' }))._unsafeUnwrap();
for (let i = 0; i < SERVERS; i++) {
  const made = await fleet.servers.create('bench-acct', {
    name: `server-${i}`,
    type: 'http',
    endpoint: `https://mcp-${i}.example.com/mcp`,
  });
  if (made.isErr()) throw made.error;
}

const server = serve({ fetch: createFleetApp(fleet).fetch, port: 0, hostname: '127.0.0.1', createServer });
await new Promise((resolve) => (server.listening ? resolve() : server.once('listening', resolve)));
const { port } = server.address();

// One request through the whole stack before saying ready: status, rate-limit headers and how many servers came back.
const response = await fetch(`http://127.0.0.1:${port}/v1/servers`, { headers: { authorization: `Bearer ${secret}` } });
const body = await response.json();
const sample = {
  status: response.status,
  servers: Array.isArray(body.data) ? body.data.length : null,
  bytes: JSON.stringify(body).length,
  rateLimitHeaders: response.headers.get('x-ratelimit-limit') !== null,
};

let cpuMark = process.cpuUsage();
let wallMark = performance.now();
process.on('message', (message) => {
  if (message.type === 'mark') {
    cpuMark = process.cpuUsage();
    wallMark = performance.now();
    process.send({ type: 'marked' });
  } else if (message.type === 'stop') {
    const used = process.cpuUsage(cpuMark);
    process.send({ type: 'cpu', cpuMs: (used.user + used.system) / 1000, wallMs: performance.now() - wallMark });
  } else if (message.type === 'exit') {
    server.closeAllConnections();
    server.close(() => fleet.close().then(() => process.exit(0)));
  }
});
process.send({ type: 'ready', port, secret, sample });
