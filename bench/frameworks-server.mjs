// One server process of section 2 (bench/frameworks.mjs): a fleet behind an adapter, or the bare framework doing the
// same visible work without mcp-fleet. `node bench/frameworks-server.mjs <variant> [this|base]`, variants:
//   fleet-hono       createFleetApp(fleet) on @hono/node-server; rate limits on (too high to refuse), webhooks on
//   fleet-hono-off   the same with rateLimit: false
//   fleet-express    fleetMiddleware(fleet) in an Express app
//   bare-hono        Hono: GET answers the fleet's GET /v1/servers envelope (same JSON bytes, c.json); POST does
//                    JSON.parse, a strict zod schema as demanding as the fleet's, a name-uniqueness Map, a 201 envelope
//   bare-express     Express: GET answers the same envelope (res.json)
// The second argument picks the build of the fleet variants (bench/builds.mjs): `this` (default) or `base`, the
// checkout named by BENCH_BASELINE.
// IPC: ready → { port, secret, sample }; mark → marked and stop → cpu (CPU of
// the slice, and the time it waited for a core); profile-start /
// profile-stop → a CPU profile summary; { type: 'envelope', body } gives a bare server the JSON it answers.
import { serve } from '@hono/node-server';
import { createServer } from 'node:http';
import { randomUUID } from 'node:crypto';
import { Session } from 'node:inspector/promises';
import { Hono } from 'hono';
import { z } from 'zod';
import { createBenchFleet, importPackage } from './builds.mjs';
import { byPackage, topFunctions } from './cpu-profile.mjs';
import { runQueueWaitMs } from './stats.mjs';

const variant = process.argv[2];
const build = process.argv[3] ?? 'this';
const SERVERS = Number(process.env.BENCH_SERVERS ?? 20);
const HIGH = 1e9;

let fleet;
let secret = '';
let listen;

if (variant.startsWith('fleet-')) {
  const core = await importPackage(build, 'core');
  fleet = createBenchFleet(core, {
    rateLimit:
      variant === 'fleet-hono-off'
        ? false
        : { tiers: { pro: HIGH }, operations: { 'servers.list': HIGH, 'servers.create': HIGH, 'servers.get': HIGH } },
    onError: (error) => console.error('[bench server]', error.code, error.cause ?? ''),
    // The POST comparison creates thousands of servers in one account: the default quota (1000) would refuse them.
    quotas: { serversPerAccount: 1_000_000_000 },
  });
  ({ secret } = (await fleet.keys.create({ account: 'bench-acct', tier: 'pro' }))._unsafeUnwrap());
  for (let i = 0; i < SERVERS; i++) {
    const made = await fleet.servers.create('bench-acct', { name: `server-${i}`, type: 'http', endpoint: `https://mcp-${i}.example.com/mcp` });
    if (made.isErr()) throw made.error;
  }
  if (variant === 'fleet-express') {
    const express = (await import('express')).default;
    const { fleetMiddleware } = await importPackage(build, 'express');
    const app = express();
    app.use(fleetMiddleware(fleet));
    listen = () => app.listen(0, '127.0.0.1');
  } else {
    const { createFleetApp } = await importPackage(build, 'hono');
    listen = () => serve({ fetch: createFleetApp(fleet).fetch, port: 0, hostname: '127.0.0.1', createServer });
  }
} else {
  // The bare baselines answer a body the orchestrator hands over: the fleet's own answer, parsed.
  let envelope = null;
  process.on('message', (message) => {
    if (message.type === 'envelope') {
      envelope = message.body;
      process.send({ type: 'envelope-set' });
    }
  });
  if (variant === 'bare-express') {
    const express = (await import('express')).default;
    const app = express();
    app.get('/v1/servers', (_req, res) => res.json(envelope));
    listen = () => app.listen(0, '127.0.0.1');
  } else {
    const app = new Hono();
    app.get('/v1/servers', (c) => c.json(envelope));
    // As demanding as the fleet's create schema for an http server: strict object, the same field rules.
    const CONTROL = /[\u0000-\u001f\u007f]/;
    const text = (max) => z.string().min(1).max(max).refine((v) => !CONTROL.test(v), 'must not contain control characters');
    const url = (schemes) =>
      z.string().superRefine((value, ctx) => {
        let parsed;
        try {
          parsed = new URL(value);
        } catch {
          ctx.addIssue({ code: 'custom', message: 'must be a valid absolute URL' });
          return;
        }
        if (!schemes.includes(parsed.protocol)) ctx.addIssue({ code: 'custom', message: 'bad scheme' });
        if (parsed.username !== '' || parsed.password !== '') ctx.addIssue({ code: 'custom', message: 'no credentials' });
      });
    const schema = z.strictObject({
      name: text(100),
      type: z.literal('http'),
      endpoint: url(['http:', 'https:']),
      timeout: z.number().int().min(1).max(300_000).default(30_000),
      retry: z.strictObject({ enabled: z.boolean(), max_attempts: z.number().int().min(1).max(10).default(3), backoff: z.literal('exponential').default('exponential') }).optional(),
      authentication: z
        .discriminatedUnion('type', [
          z.strictObject({ type: z.literal('bearer'), token: z.string().min(1).max(8192) }),
          z.strictObject({ type: z.literal('oauth2'), client_id: text(1024), client_secret: z.string().min(1).max(8192), token_url: url(['http:', 'https:']).optional(), scope: text(1024).optional() }),
        ])
        .optional(),
    });
    const names = new Map();
    app.post('/v1/servers', async (c) => {
      let body;
      try {
        body = JSON.parse(await c.req.text());
      } catch {
        return c.json({ success: false, error: { code: 'INVALID_JSON' } }, 400);
      }
      const parsed = schema.safeParse(body);
      if (!parsed.success) return c.json({ success: false, error: { code: 'VALIDATION_ERROR', details: parsed.error.issues } }, 400);
      const { name, type, endpoint } = parsed.data;
      if (names.has(name)) return c.json({ success: false, error: { code: 'SERVER_NAME_EXISTS' } }, 409);
      const now = new Date().toISOString();
      const server = { id: `srv_${randomUUID()}`, name, type, endpoint, status: 'active', health: 'unknown', created_at: now, updated_at: now };
      names.set(name, server);
      return c.json({ success: true, data: server, meta: { timestamp: now, request_id: `req_${randomUUID()}` } }, 201);
    });
    listen = () => serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1', createServer });
  }
}

const server = listen();
await new Promise((resolve) => (server.listening ? resolve() : server.once('listening', resolve)));
const { port } = server.address();

let sample = null;
if (fleet !== undefined) {
  const response = await fetch(`http://127.0.0.1:${port}/v1/servers`, { headers: { authorization: `Bearer ${secret}` } });
  const body = await response.json();
  sample = { status: response.status, body, servers: Array.isArray(body.data) ? body.data.length : null, rateLimitHeaders: response.headers.get('x-ratelimit-limit') !== null };
}

let cpuMark = process.cpuUsage();
let waitMark = runQueueWaitMs();
let wallMark = performance.now();
let session;
process.on('message', async (message) => {
  if (message.type === 'mark') {
    // No gc() here. Each variant is a process of its own, so the garbage a slice finds is its own variant's: part of
    // its steady cost, as in production. A forced full gc before every part instead shrank the young generation and
    // charged the concurrent sweep to the part that followed, which costs the process with the larger heap most: the
    // same fleet and bare Hono measured 0.53–0.62× with it and 0.88–0.89× without, in one run (docs/performance.md).
    cpuMark = process.cpuUsage();
    waitMark = runQueueWaitMs();
    wallMark = performance.now();
    process.send({ type: 'marked' });
  } else if (message.type === 'stop') {
    const used = process.cpuUsage(cpuMark);
    process.send({ type: 'cpu', cpuMs: (used.user + used.system) / 1000, wallMs: performance.now() - wallMark, waitMs: runQueueWaitMs() - waitMark });
  } else if (message.type === 'profile-start') {
    session = new Session();
    session.connect();
    await session.post('Profiler.enable');
    await session.post('Profiler.setSamplingInterval', { interval: 200 });
    await session.post('Profiler.start');
    process.send({ type: 'profiling' });
  } else if (message.type === 'profile-stop') {
    const { profile } = await session.post('Profiler.stop');
    session.disconnect();
    process.send({ type: 'profile', top: topFunctions(profile, 15), packages: byPackage(profile).slice(0, 10) });
  } else if (message.type === 'exit') {
    server.closeAllConnections?.();
    server.close(() => (fleet ? fleet.close() : Promise.resolve()).then(() => process.exit(0)));
  }
});
process.send({ type: 'ready', port, secret, sample });
