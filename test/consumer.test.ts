/**
 * The packages as a user gets them: `npm pack`ed tarballs installed into a fresh ESM project and a fresh CommonJS
 * project, imported, type-checked and used, with the core's subpaths (`/node`, `/webhooks`, `/scopes`; `/testing`
 * resolved and type-checked only: running it needs vitest). Global setup has built `dist/`. @mcp-fleet/sqlite is only
 * inspected: installing it compiles sqlite3 from source, which takes over a minute. @mcp-fleet/redis and @mcp-fleet/postgres are
 * installed and loaded, not connected: that needs a server. @mcp-fleet/client is used from both projects against the
 * Express-mounted fleet, and bundled for the browser (esbuild, `platform: 'browser'`) into a third project whose
 * bundle runs in a context with the Web globals alone.
 */
import { execFile, spawn } from 'node:child_process';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { createContext, runInContext } from 'node:vm';
import { build } from 'esbuild';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Adapter, ADAPTERS, serveFleet } from './support/adapters.js';
import { npmInstall, PACKAGES, type PackageName, type PackedFile, packTarballs, ROOT } from './support/packed.js';
import { removeTempDirs, tempDir } from './support/reference-server.js';

const run = promisify(execFile);
/** The entry points of @mcp-fleet/core: the root and its subpaths. */
const CORE_SUBPATHS = ['index', 'node', 'webhooks', 'scopes', 'testing'];
const TSC = join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');

let work: string;
const tarballs = {} as Record<PackageName, string>;
const packed = {} as Record<PackageName, PackedFile>;
/** `npm run check:packages`, started in beforeAll so that it runs while the projects install. */
let checkPackages: Promise<{ code: number | null; output: string }>;

function runScript(args: string[], cwd: string): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve) => {
    const child = spawn(args[0] as string, args.slice(1), { cwd, env: { ...process.env, NO_COLOR: '1' } });
    let output = '';
    child.stdout.on('data', (chunk) => (output += chunk));
    child.stderr.on('data', (chunk) => (output += chunk));
    child.on('close', (code) => resolve({ code, output }));
  });
}

async function project(kind: 'esm' | 'cjs'): Promise<string> {
  const dir = join(work, kind);
  await mkdir(dir);
  await writeFile(
    join(dir, 'package.json'),
    JSON.stringify({ name: `consumer-${kind}`, version: '1.0.0', private: true, type: kind === 'esm' ? 'module' : 'commonjs' }),
  );
  await writeFile(
    join(dir, 'tsconfig.json'),
    JSON.stringify({
      compilerOptions: {
        module: 'nodenext',
        moduleResolution: 'nodenext',
        target: 'es2022',
        lib: ['es2023'],
        types: ['node'],
        strict: true,
        noEmit: true,
        esModuleInterop: true,
        // Declarations are not checked line by line (slow, and mostly the frameworks'); the @ts-expect-error lines
        // in check.ts fail if ours degrade to `any`.
        skipLibCheck: true,
      },
      files: ['check.ts'],
    }),
  );
  await npmInstall(dir, [
    tarballs.core,
    tarballs.hono,
    tarballs.express,
    tarballs.redis,
    tarballs.postgres,
    tarballs.client,
    'hono@^4.6.0',
    'express@^5.0.0',
    'keyv@^5.6.0',
    '@types/express@^5',
    '@types/node@^20',
  ]);
  return dir;
}

/** A project for the browser: the client alone, bundled by esbuild. */
async function browserProject(): Promise<string> {
  const dir = join(work, 'browser');
  await mkdir(dir);
  await writeFile(join(dir, 'package.json'), JSON.stringify({ name: 'consumer-browser', version: '1.0.0', private: true, type: 'module' }));
  await npmInstall(dir, [tarballs.client]);
  return dir;
}

let browser: string;
let esm: string;
let cjs: string;

beforeAll(async () => {
  work = await tempDir('mcp-fleet-consumer-');
  const tarballDir = join(work, 'tarballs');
  await mkdir(tarballDir);
  const made = await packTarballs(tarballDir);
  // The very tarballs the projects install, checked while they install.
  checkPackages = runScript(['npm', 'run', '--silent', 'check:packages', '--', tarballDir], ROOT);
  for (const name of PACKAGES) {
    expect(made.files[name].filename).toBe(`mcp-fleet-${name}-0.1.0.tgz`);
    packed[name] = made.files[name];
    tarballs[name] = made.tarballs[name];
  }
  [esm, cjs, browser] = await Promise.all([project('esm'), project('cjs'), browserProject()]);
}, 120_000);

afterAll(async () => {
  await checkPackages;
  await removeTempDirs();
});

/** Everything a consumer does first: make a key, ask for the servers, through the core and both adapters. */
const USE = `
  const keyv = new Keyv({ throwOnErrors: true });
  const fleet = createFleet({ store: createMemoryStore({ records: keyv }) });
  const created = await fleet.keys.create({ account: 'acme', tier: 'pro' });
  const { secret } = created._unsafeUnwrap();
  const auth = { authorization: 'Bearer ' + secret };
  const core = await fleet.handle(new Request('http://x/v1/servers', { headers: auth }));
  const coreBody = await core.json();
  const anonymous = await fleet.handle(new Request('http://x/v1/servers'));
  const made = await fleet.servers.create('acme', { name: 'one', type: 'http', endpoint: 'https://mcp.example.com/mcp' });

  const hono = new Hono();
  hono.route('/', createFleetApp(fleet));
  const viaHono = await hono.request('/v1/servers', { headers: auth });
  const honoBody = await viaHono.json();

  const app = express();
  app.use('/api', fleetMiddleware(fleet));
  const server = await new Promise((resolve) => { const s = app.listen(0, '127.0.0.1', () => resolve(s)); });
  const viaExpress = await fetch('http://127.0.0.1:' + server.address().port + '/api/v1/servers', { headers: auth });
  const expressBody = await viaExpress.json();
  const client = createClient({ baseUrl: 'http://127.0.0.1:' + server.address().port + '/api/v1', apiKey: secret });
  const viaClient = await client.servers.list();
  const clientError = await client.servers.get('srv_000000000000000000000000').catch((e) => [e instanceof FleetApiError, isFleetApiError(e), e.code, e.status]);
  await new Promise((resolve) => server.close(resolve));

  const hookSecret = newWebhookSecret();
  const hookBody = JSON.stringify({ id: 'evt_1', type: 'server.created', created_at: '2026-01-01T00:00:00.000Z', data: {} });
  const receiver = new Hono();
  receiver.post('/hook', honoVerifyWebhook({ secret: hookSecret }), (c) => c.text(c.get('webhook').event.type));
  const signed = sign(hookSecret, hookBody, { id: 'dlv_1', timestamp: Math.floor(Date.now() / 1000) });
  const hookOk = await receiver.request('/hook', { method: 'POST', body: hookBody, headers: signed });
  const hookBad = await receiver.request('/hook', { method: 'POST', body: hookBody + ' ', headers: signed });

  // @mcp-fleet/core/node: a plain node:http server, no framework.
  const plain = http.createServer((req, res) => {
    const path = mountPath(req.url.split('?', 1)[0], fleet.prefix);
    if (path === undefined) return void res.writeHead(404).end();
    fleet.handle(toWebRequest(req, res), { path }).then((response) => writeWebResponse(res, response));
  });
  await new Promise((resolve) => plain.listen(0, '127.0.0.1', resolve));
  const viaNode = await fetch('http://127.0.0.1:' + plain.address().port + '/v1/servers', { headers: auth });
  const nodeBody = await viaNode.json();
  await new Promise((resolve) => plain.close(resolve));

  // @mcp-fleet/core/webhooks: the receiver alone; its refusals are the root entry's FleetError (one class, shared chunk).
  const onlyReceiver = createWebhookReceiver({ secret: hookSecret });
  const received = await onlyReceiver.verifyRequest(new Request('http://x/hook', { method: 'POST', body: hookBody, headers: signed }));
  const refused = await onlyReceiver.verifyRequest(new Request('http://x/hook', { method: 'POST', body: hookBody }));
  const refusal = onlyReceiver.refusal(refused.error);

  // The dashboard's files ship in the tarball and are found from either build (import.meta.url, shimmed in CommonJS).
  const withDashboard = createFleet({ dashboard: true });
  const page = await withDashboard.handle(new Request('http://x/v1/dashboard/'));
  const pageText = await page.text();
  await withDashboard.close();

  console.log(JSON.stringify({
    dashboard: [page.status, page.headers.get('content-type'), pageText.includes('src="./assets/index-')],
    webhooks: [hookOk.status, await hookOk.text(), hookBad.status, typeof expressVerifyWebhook],
    node: [viaNode.status, nodeBody.data.map((s) => s.name)],
    receiverOnly: [received.isOk() && received.value.event.type, refusal.status, refusal.headers.get('cache-control'), (await refusal.json()).error.code],
    sameClass: refused.error instanceof FleetError && isFleetError(refused.error) && refused.error.category === 'receiver',
    secret: /^mcpf_[0-9A-Za-z]{40}$/.test(secret),
    core: [core.status, coreBody.success, coreBody.data.length],
    anonymous: anonymous.status,
    made: made.isOk(),
    hono: [viaHono.status, honoBody.data.map((s) => s.name)],
    express: [viaExpress.status, expressBody.data.map((s) => s.name)],
    client: [viaClient.data.map((s) => s.name), viaClient.pagination.total, clientError, clientEntry],
    errorCode: ERROR_CODES.SERVER_NAME_EXISTS.status,
    resolved,
    redis: [typeof createRedisStore, redisEntry],
    postgres: [typeof createPostgresStore, postgresEntry],
    subpaths,
  }));
`;

const ESM_MAIN = `
import http from 'node:http';
import { createFleet, createMemoryStore, ERROR_CODES, FleetError, isFleetError, sign } from '@mcp-fleet/core';
import { mountPath, toWebRequest, writeWebResponse } from '@mcp-fleet/core/node';
import { createWebhookReceiver, newWebhookSecret } from '@mcp-fleet/core/webhooks';
import { createFleetApp, verifyWebhook as honoVerifyWebhook } from '@mcp-fleet/hono';
import { fleetMiddleware, verifyWebhook as expressVerifyWebhook } from '@mcp-fleet/express';
import { createRedisStore } from '@mcp-fleet/redis';
import { createPostgresStore } from '@mcp-fleet/postgres';
import { createClient, FleetApiError, isFleetApiError } from '@mcp-fleet/client';
import corePackage from '@mcp-fleet/core/package.json' with { type: 'json' };
import express from 'express';
import { Hono } from 'hono';
import Keyv from 'keyv';
const resolved = ['@mcp-fleet/core', '@mcp-fleet/hono', '@mcp-fleet/express'].map((name) => import.meta.resolve(name)).concat(corePackage.name);
const redisEntry = import.meta.resolve('@mcp-fleet/redis');
const postgresEntry = import.meta.resolve('@mcp-fleet/postgres');
const clientEntry = import.meta.resolve('@mcp-fleet/client');
const subpaths = ['node', 'webhooks', 'scopes', 'testing'].map((name) => import.meta.resolve('@mcp-fleet/core/' + name));
${USE}
`;

const CJS_MAIN = `
const http = require('node:http');
const { createFleet, createMemoryStore, ERROR_CODES, FleetError, isFleetError, sign } = require('@mcp-fleet/core');
const { mountPath, toWebRequest, writeWebResponse } = require('@mcp-fleet/core/node');
const { createWebhookReceiver, newWebhookSecret } = require('@mcp-fleet/core/webhooks');
const { createFleetApp, verifyWebhook: honoVerifyWebhook } = require('@mcp-fleet/hono');
const { fleetMiddleware, verifyWebhook: expressVerifyWebhook } = require('@mcp-fleet/express');
const { createRedisStore } = require('@mcp-fleet/redis');
const { createPostgresStore } = require('@mcp-fleet/postgres');
const { createClient, FleetApiError, isFleetApiError } = require('@mcp-fleet/client');
const express = require('express');
const { Hono } = require('hono');
const { default: Keyv } = require('keyv');
const resolved = ['@mcp-fleet/core', '@mcp-fleet/hono', '@mcp-fleet/express'].map((name) => require.resolve(name)).concat(require('@mcp-fleet/core/package.json').name);
const redisEntry = require.resolve('@mcp-fleet/redis');
const postgresEntry = require.resolve('@mcp-fleet/postgres');
const clientEntry = require.resolve('@mcp-fleet/client');
const subpaths = ['node', 'webhooks', 'scopes', 'testing'].map((name) => require.resolve('@mcp-fleet/core/' + name));
(async () => {
${USE}
})().catch((error) => { console.error(error); process.exit(1); });
`;

/** Compiled with the consumer's own resolution (nodenext): the `types` of each exports condition must do. */
const CHECK_TS = `
import { createFleet, createMemoryStore, FleetError, type Fleet, type FleetStore, MemoryIndexStore, MemoryRateLimitStore, type ServerDetail, type ServerInput } from '@mcp-fleet/core';
import { fleetMiddleware } from '@mcp-fleet/express';
import { createFleetApp } from '@mcp-fleet/hono';
import { createRedisStore, type RedisStore } from '@mcp-fleet/redis';
import { createPostgresStore, type PostgresStore } from '@mcp-fleet/postgres';
import { createClient, FleetApiError } from '@mcp-fleet/client';
import { mountPath, toWebRequest, writeWebResponse } from '@mcp-fleet/core/node';
import { createWebhookReceiver, type VerifiedDelivery, type WebhookPayload, type WebhookVerificationError } from '@mcp-fleet/core/webhooks';
import { SCOPES, type Scope, TIERS, type Tier } from '@mcp-fleet/core/scopes';
import { fleetStoreSuite, indexStoreContract, type RateLimitClock, rateLimitStoreContract } from '@mcp-fleet/core/testing';
import { createServer } from 'node:http';
import express from 'express';
import { Hono } from 'hono';
import Keyv from 'keyv';

export function serveWithNode(fleet: Fleet) {
  return createServer((req, res) => {
    const path: string | undefined = mountPath(req.url ?? '/', fleet.prefix);
    const request: Request = toWebRequest(req, res, { exactBody: false });
    // @ts-expect-error: a Node response, not a Web one
    toWebRequest(req, new Response());
    void fleet.handle(request, { path }).then((response) => writeWebResponse(res, response));
  });
}

export async function receive(request: Request): Promise<Response | string> {
  const receiver = createWebhookReceiver({ secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw' });
  const verified = await receiver.verifyRequest(request);
  if (verified.isErr()) {
    const error: WebhookVerificationError = verified.error;
    return receiver.refusal(error, request);
  }
  const delivery: VerifiedDelivery<WebhookPayload> = verified.value;
  // @ts-expect-error: the event type is a known union, not any string
  const type: 'nope' = delivery.event.type;
  return type;
}

export function keyNames(): [readonly Tier[], readonly Scope[]] {
  // @ts-expect-error: a tier is one of TIERS
  const gold: Tier = 'gold';
  void gold;
  return [TIERS, SCOPES];
}

export function contracts(clock: RateLimitClock): void {
  indexStoreContract('x', async () => new MemoryIndexStore(), undefined, { durable: false });
  rateLimitStoreContract('y', async () => new MemoryRateLimitStore(), { clock });
  // @ts-expect-error: open must give a store
  indexStoreContract('z', async () => 42);
  fleetStoreSuite('w', ({ now }): FleetStore => createMemoryStore({ now }), { sharedAcrossFleets: false });
  // @ts-expect-error: open must give a FleetStore
  fleetStoreSuite('v', async () => new MemoryIndexStore());
}

export async function onRedis(url: string): Promise<Fleet> {
  const redis: RedisStore = await createRedisStore({ url, keyPrefix: 'app:fleet:' });
  // @ts-expect-error: the URL is required
  await createRedisStore({ keyPrefix: 'x' });
  // @ts-expect-error: the counters are the store's, not an option of rateLimit
  createFleet({ store: redis, rateLimit: { store: redis.rateLimits } });
  return createFleet({ store: redis });
}

export async function onPostgres(connectionString: string): Promise<Fleet> {
  const store: PostgresStore = await createPostgresStore({ connectionString, schema: 'app_fleet' });
  // @ts-expect-error: the schema is a name, not a number
  await createPostgresStore({ connectionString, schema: 1 });
  return createFleet({ store });
}

export async function useClient(): Promise<string> {
  const client = createClient({ baseUrl: 'http://127.0.0.1:3000/v1', apiKey: 'mcpf_x' });
  const server = await client.servers.get('srv_x');
  try {
    await client.servers.list({ health: 'healthy' });
  } catch (error) {
    if (error instanceof FleetApiError && error.code === 'INVALID_REQUEST' && 'field' in error.details) return error.details.field;
  }
  // @ts-expect-error: a server type that does not exist
  await client.servers.create({ name: 'x', type: 'ftp', endpoint: 'https://x' });
  return server.name;
}

export async function check(): Promise<string> {
  const fleet: Fleet = createFleet({ store: createMemoryStore({ records: new Keyv({ throwOnErrors: true }) }), prefix: '/v1' });
  new Hono().route('/', createFleetApp(fleet));
  express().use('/api', fleetMiddleware(fleet, { clientAddress: (req) => req.ip }));
  const input: ServerInput = { name: 'one', type: 'http', endpoint: 'https://mcp.example.com/mcp' };
  const created = await fleet.servers.create('acme', input);
  const detail: ServerDetail | FleetError = created.isOk() ? created.value : created.error;
  const response: Response = await fleet.handle(new Request('http://x/v1/servers'));
  const total: number = (await fleet.servers.list('acme'))._unsafeUnwrap().pagination.total;
  // @ts-expect-error: a number, not a string
  const notText: string = total;
  // @ts-expect-error: the prefix is read-only
  fleet.prefix = '/v2';
  // @ts-expect-error: a server type that does not exist
  const wrong: ServerInput = { name: 'x', type: 'ftp', endpoint: 'ftp://x' };
  return String(response.status) + JSON.stringify(detail) + JSON.stringify(wrong) + notText;
}
`;

function parseLastLine(stdout: string): any {
  const line = stdout.trim().split('\n').pop() as string;
  return JSON.parse(line);
}

function expectUsable(result: any): void {
  expect(result).toMatchObject({
    secret: true,
    core: [200, true, 0],
    anonymous: 401,
    made: true,
    webhooks: [200, 'server.created', 401, 'function'],
    hono: [200, ['one']],
    express: [200, ['one']],
    client: [['one'], 1, [true, true, 'SERVER_NOT_FOUND', 404], expect.any(String)],
    node: [200, ['one']],
    receiverOnly: ['server.created', 400, 'no-store', 'MISSING_HEADERS'],
    sameClass: true,
    errorCode: 409,
    dashboard: [200, 'text/html; charset=utf-8', true],
  });
}

describe('the packed packages', () => {
  it.each(PACKAGES)('@mcp-fleet/%s ships dist and a package.json whose every entry point is in the tarball', async (name) => {
    const files = packed[name].files.map((f) => f.path).sort();
    const entries = name === 'core' ? CORE_SUBPATHS : ['index'];
    const entryFiles = entries.flatMap((entry) => ['.cjs', '.cjs.map', '.d.cts', '.d.ts', '.js', '.js.map'].map((ext) => `dist/${entry}${ext}`));
    // Besides the entries, only the chunks they share (core's subpaths split their common modules out).
    const shared = files.filter((file) => file.startsWith('dist/') && !entryFiles.includes(file));
    expect(files).toEqual(['LICENSE', 'README.md', ...entryFiles, ...shared, 'package.json'].sort());
    // And core's dashboard: its page, one script and one stylesheet (docs/dashboard.md).
    const dashboard = shared.filter((file) => file.startsWith('dist/dashboard/'));
    if (name === 'core') {
      expect(dashboard).toContain('dist/dashboard/index.html');
      for (const file of dashboard) expect(file).toMatch(/^dist\/dashboard\/(?:index\.html|assets\/index-[\w-]+\.(?:js|css))$/);
      for (const file of shared.filter((f) => !dashboard.includes(f))) expect(file).toMatch(/^dist\/[\w-]+\.(?:js|cjs|d\.ts|d\.cts|js\.map|cjs\.map)$/);
    } else expect(shared).toEqual([]);
    const { stdout } = await run('tar', ['-xzOf', tarballs[name], 'package/package.json']);
    const pkg = JSON.parse(stdout);
    expect(pkg).toMatchObject({ name: `@mcp-fleet/${name}`, version: '0.1.0', type: 'module', sideEffects: false, files: ['dist', 'README.md', 'LICENSE'] });
    const exportOf = (entry: string) => ({
      import: { types: `./dist/${entry}.d.ts`, default: `./dist/${entry}.js` },
      require: { types: `./dist/${entry}.d.cts`, default: `./dist/${entry}.cjs` },
    });
    expect(pkg.exports).toEqual({
      '.': exportOf('index'),
      ...Object.fromEntries(entries.filter((entry) => entry !== 'index').map((entry) => [`./${entry}`, exportOf(entry)])),
      './package.json': './package.json',
    });
    for (const entry of [pkg.main, pkg.module, pkg.types]) expect(files).toContain(entry.replace(/^\.\//, ''));
    // The core is the host's too: every sibling names it as a peer (one copy in an app), of the version published with
    // it. The client talks to a fleet over HTTP: it needs no core.
    if (name !== 'core' && name !== 'client') {
      expect(pkg.peerDependencies['@mcp-fleet/core']).toBe('^0.1.0');
      expect(pkg.dependencies?.['@mcp-fleet/core']).toBeUndefined();
    }
    // The host's framework is the host's: one copy, as a peer. vitest only for @mcp-fleet/core/testing, optional.
    const peers: Record<PackageName, string[]> = {
      core: ['keyv', 'vitest'],
      hono: ['@mcp-fleet/core', 'hono'],
      express: ['@mcp-fleet/core', 'express'],
      sqlite: ['@mcp-fleet/core', 'keyv'],
      redis: ['@mcp-fleet/core', 'keyv'],
      postgres: ['@mcp-fleet/core', 'keyv'],
      client: [],
      otel: ['@mcp-fleet/core', '@opentelemetry/api'],
      // The host's registry is its own prom-client's: one copy, never installed for it.
      prometheus: ['@mcp-fleet/core', 'prom-client'],
    };
    expect(Object.keys(pkg.peerDependencies ?? {}).sort()).toEqual(peers[name]);
    if (name === 'core') expect(pkg.peerDependenciesMeta).toEqual({ vitest: { optional: true } });
    if (name === 'otel') expect(pkg.peerDependenciesMeta).toEqual({ '@opentelemetry/api': { optional: true } });
    if (name === 'prometheus') expect(pkg.peerDependenciesMeta).toEqual({ 'prom-client': { optional: true } });
    expect(Object.keys(pkg.dependencies ?? {})).not.toContain(name === 'hono' ? 'hono' : name === 'express' ? 'express' : 'keyv');
    expect(pkg.devDependencies).toBeUndefined();
    if (name === 'client') expect(pkg.dependencies).toBeUndefined();
  });

  it('an ESM project imports them and serves a request', async () => {
    await writeFile(join(esm, 'main.js'), ESM_MAIN);
    const { stdout } = await run(process.execPath, ['main.js'], { cwd: esm });
    const result = parseLastLine(stdout);
    expectUsable(result);
    // The ESM build, not the CommonJS one.
    expect(result.resolved.slice(0, 3)).toEqual(
      ['core', 'hono', 'express'].map((name) => expect.stringMatching(new RegExp(`node_modules/@mcp-fleet/${name}/dist/index\\.js$`))),
    );
    expect(result.resolved[3]).toBe('@mcp-fleet/core');
    expect(result.redis).toEqual(['function', expect.stringMatching(/node_modules\/@mcp-fleet\/redis\/dist\/index\.js$/)]);
    expect(result.postgres).toEqual(['function', expect.stringMatching(/node_modules\/@mcp-fleet\/postgres\/dist\/index\.js$/)]);
    expect(result.client[3]).toMatch(/node_modules\/@mcp-fleet\/client\/dist\/index\.js$/);
    expect(result.subpaths).toEqual(['node', 'webhooks', 'scopes', 'testing'].map((name) => expect.stringMatching(new RegExp(`node_modules/@mcp-fleet/core/dist/${name}\\.js$`))));
  });

  it('a CommonJS project requires them and serves a request', async () => {
    await writeFile(join(cjs, 'main.js'), CJS_MAIN);
    const { stdout } = await run(process.execPath, ['main.js'], { cwd: cjs });
    const result = parseLastLine(stdout);
    expectUsable(result);
    expect(result.resolved.slice(0, 3)).toEqual(
      ['core', 'hono', 'express'].map((name) => expect.stringMatching(new RegExp(`node_modules/@mcp-fleet/${name}/dist/index\\.cjs$`))),
    );
    expect(result.resolved[3]).toBe('@mcp-fleet/core');
    expect(result.redis).toEqual(['function', expect.stringMatching(/node_modules\/@mcp-fleet\/redis\/dist\/index\.cjs$/)]);
    expect(result.postgres).toEqual(['function', expect.stringMatching(/node_modules\/@mcp-fleet\/postgres\/dist\/index\.cjs$/)]);
    expect(result.client[3]).toMatch(/node_modules\/@mcp-fleet\/client\/dist\/index\.cjs$/);
    expect(result.subpaths).toEqual(['node', 'webhooks', 'scopes', 'testing'].map((name) => expect.stringMatching(new RegExp(`node_modules/@mcp-fleet/core/dist/${name}\\.cjs$`))));
  });

  it.each(['esm', 'cjs'] as const)('the types resolve and check in the %s project (module nodenext)', async (kind) => {
    const dir = kind === 'esm' ? esm : cjs;
    await writeFile(join(dir, 'check.ts'), CHECK_TS);
    const result = await runScript([process.execPath, TSC, '-p', 'tsconfig.json', '--listFiles'], dir);
    expect(result.output).not.toContain('error TS');
    expect(result.code, result.output).toBe(0);
    // The declarations each resolution picked: .d.ts for import, .d.cts for require.
    for (const name of ['core', 'hono', 'express', 'redis', 'postgres', 'client']) {
      expect(result.output).toContain(`node_modules/@mcp-fleet/${name}/dist/index.${kind === 'esm' ? 'd.ts' : 'd.cts'}\n`);
    }
    for (const subpath of CORE_SUBPATHS) {
      expect(result.output).toContain(`node_modules/@mcp-fleet/core/dist/${subpath}.${kind === 'esm' ? 'd.ts' : 'd.cts'}\n`);
    }
  }, 60_000);

  it('publint and attw find no problem in any tarball (npm run check:packages)', async () => {
    const result = await checkPackages;
    expect(result.output).not.toMatch(/Errors:|Warnings:|Suggestions:/);
    for (const name of PACKAGES) {
      expect(result.output).toContain(`publint run --strict ${join(work, 'tarballs', `mcp-fleet-${name}-0.1.0.tgz`)}`);
      expect(result.output).toContain(`@mcp-fleet/${name} v0.1.0`);
    }
    expect(result.output.match(/All good!/g)).toHaveLength(PACKAGES.length);
    expect(result.output.match(/No problems found/g)).toHaveLength(PACKAGES.length);
    expect(result.output).toContain(`check:packages: ${PACKAGES.length} packages, no problems`);
    expect(result.code, result.output).toBe(0);
  });
});

describe('the installed projects', () => {
  it('resolved @mcp-fleet/hono, @mcp-fleet/express, @mcp-fleet/redis and @mcp-fleet/postgres to the one installed core', async () => {
    for (const dir of [esm, cjs]) {
      const lock = JSON.parse(await readFile(join(dir, 'package-lock.json'), 'utf8'));
      const cores = Object.keys(lock.packages).filter((path) => path.endsWith('node_modules/@mcp-fleet/core'));
      expect(cores).toEqual(['node_modules/@mcp-fleet/core']);
    }
  });

  it('@mcp-fleet/core/webhooks, for an app that only receives deliveries, loads neverthrow and nothing else of the engine\'s dependencies', async () => {
    const script = "require('@mcp-fleet/core/webhooks'); console.log(JSON.stringify(Object.keys(require.cache)))";
    const { stdout } = await run(process.execPath, ['-e', script], { cwd: cjs });
    const packages = new Set((JSON.parse(stdout) as string[]).map((path) => /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(path)?.[1]));
    // Neither zod (the envelope's schemas), the MCP SDKs nor undici: the receiver's answers are made without them.
    expect([...packages].sort()).toEqual(['@mcp-fleet/core', 'neverthrow']);
  });

  it('@mcp-fleet/core/scopes, for code that checks key names before it loads the engine, loads nothing else', async () => {
    const script = "const { SCOPES, TIERS, ACCOUNT_PATTERN } = require('@mcp-fleet/core/scopes'); console.log(JSON.stringify({ names: [SCOPES.length, TIERS.join(), ACCOUNT_PATTERN.test('acme')], loaded: Object.keys(require.cache) }))";
    const { stdout } = await run(process.execPath, ['-e', script], { cwd: cjs });
    const { names, loaded } = JSON.parse(stdout) as { names: unknown[]; loaded: string[] };
    expect(names).toEqual([7, 'free,pro,enterprise', true]);
    expect(new Set(loaded.map((path) => /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(path)?.[1]))).toEqual(new Set(['@mcp-fleet/core']));
  });
});

/** A page's script: the client against the fleet named by `FLEET`, its outcome in `globalThis.done`. */
const BROWSER_APP = `
import { createClient, FleetApiError } from '@mcp-fleet/client';
const client = createClient({ baseUrl: FLEET.baseUrl, apiKey: FLEET.apiKey });
globalThis.done = (async () => {
  const created = await client.servers.create({ name: 'from-browser', type: 'http', endpoint: 'https://mcp.example.com/mcp' });
  const names = [];
  for await (const server of client.paginate(client.servers.list, { limit: 1 })) names.push(server.name);
  const error = await client.servers.get('srv_000000000000000000000000').catch((e) => [e instanceof FleetApiError, e.name, e.code, e.status]);
  return JSON.stringify({ created: created.id.startsWith('srv_'), names, error, rateLimit: client.lastRateLimit === undefined });
})();
`;

describe('@mcp-fleet/client in a browser bundle', () => {
  it('bundles for the browser without a Node built-in, and runs with the Web globals alone against a fleet', async () => {
    await writeFile(join(browser, 'app.js'), BROWSER_APP);
    const bundled = await build({ entryPoints: ['app.js'], absWorkingDir: browser, bundle: true, platform: 'browser', format: 'iife', target: 'es2022', write: false, logLevel: 'silent' });
    const code = bundled.outputFiles[0]?.text as string;
    expect(code).toContain('FleetNetworkError');
    expect(code).not.toMatch(/["'`]node:|\brequire\(|\bprocess\.|\bBuffer\b/);
    const served = await serveFleet(ADAPTERS[0] as Adapter);
    try {
      const apiKey = (await served.fleet.keys.create({ account: 'browser', tier: 'pro' }))._unsafeUnwrap().secret;
      // What a page (or a worker, an edge runtime) has, and nothing of Node's: no process, Buffer, require or module.
      const web = { fetch, URL, URLSearchParams, Headers, Request, Response, AbortController, AbortSignal, DOMException, setTimeout, clearTimeout, console, TextEncoder, TextDecoder };
      const context = createContext({ ...web, FLEET: { baseUrl: served.url, apiKey } });
      runInContext(code, context);
      const outcome = JSON.parse(await (context as { done: Promise<string> }).done);
      expect(outcome).toEqual({ created: true, names: ['from-browser'], error: [true, 'FleetApiError', 'SERVER_NOT_FOUND', 404], rateLimit: true });
    } finally {
      await served.close();
    }
  });
});
