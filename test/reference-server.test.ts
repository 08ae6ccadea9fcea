/**
 * The reference server (`npm start`) as a real process: the variables of docs/configuration.md "The reference server",
 * its stores, the key it prints, and how it stops. Runs the built `examples/reference-server/dist/main.js`.
 */
import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, readdirSync, statSync } from 'node:fs';
import { request as httpRequest, Agent } from 'node:http';
import { connect, createServer, type AddressInfo, type Socket } from 'node:net';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import {
  api,
  killLeftovers,
  PRINTED_KEY,
  REFERENCE_SERVER,
  removeTempDirs,
  runToExit,
  startServer,
  tempDir,
  waitForOutput,
  type Exit,
  type RunningServer,
} from './support/reference-server.js';
import { startV2ToolServer } from '../packages/core/src/mcp/fixtures/tool-servers.js';
import { startV1Server } from '../packages/core/src/mcp/fixtures/v1-server.js';
import { earlyInAMinute } from './support/http-client.js';
import { expectReadyzFollows, startRelay } from './support/relay.js';
import { REDIS_URL, removeKeysAddedDuring, withDatabase, withoutRedis } from './support/redis.js';
import { staticImports } from './support/static-imports.js';

afterEach(async () => {
  await killLeftovers();
  await removeTempDirs();
});

/** An operator-chosen secret, unique per call so that a leak cannot match some other text by chance. */
const secret = (label: string) => `${label}-${randomBytes(12).toString('hex')}`;

const httpServer = (name: string, extra: Record<string, unknown> = {}) => ({ name, type: 'http', endpoint: 'https://mcp.example.com/mcp', ...extra });

async function create(server: RunningServer, key: string, body: unknown): Promise<any> {
  const res = await api(server.url, key, 'POST', '/servers', body);
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body.data;
}

async function listNames(server: RunningServer, key: string): Promise<string[]> {
  const res = await api(server.url, key, 'GET', '/servers?limit=100');
  expect(res.status).toBe(200);
  return res.body.data.map((s: { name: string }) => s.name);
}

function expectCleanStop(exit: Exit): void {
  expect(exit.code, exit.stderr).toBe(0);
  expect(exit.signal).toBeNull();
  expect(exit.stdout).toContain('mcp-fleet: stopped');
}

/** Whether the SQLite file was closed cleanly: the last connection to close folds the WAL back and removes it. */
function expectNoWal(file: string): void {
  expect(existsSync(file)).toBe(true);
  expect(existsSync(`${file}-wal`)).toBe(false);
  expect(existsSync(`${file}-shm`)).toBe(false);
}

describe('the key printed on first start', () => {
  it('prints one key once on an empty store; a restart prints none and the first key still works', async () => {
    const cwd = await tempDir();
    const first = await startServer({ cwd });
    expect(first.storeLabel).toBe('sqlite .mcp-fleet/fleet.sqlite');
    expect(first.host).toBe('127.0.0.1');
    expect(first.printedKeys).toHaveLength(1);
    const key = first.printedKeys[0] as string;
    expect(key).toMatch(/^mcpf_[0-9A-Za-z]{40}$/);
    expect(first.stdout().match(PRINTED_KEY)).toEqual([key]);

    const listed = await api(first.url, key, 'GET', '/servers');
    expect(listed.status).toBe(200);
    expect(listed.body).toMatchObject({ success: true, data: [], pagination: { total: 0 } });
    expect((await api(first.url, null, 'GET', '/servers')).status).toBe(401);
    expect((await api(first.url, `mcpf_${'x'.repeat(40)}`, 'GET', '/servers')).status).toBe(401);
    expectCleanStop(await first.stop());
    expect(existsSync(join(cwd, '.mcp-fleet', 'fleet.sqlite'))).toBe(true);

    const second = await startServer({ cwd });
    expect(second.printedKeys).toEqual([]);
    expect(second.stdout()).not.toMatch(PRINTED_KEY);
    expect(second.stderr()).not.toMatch(PRINTED_KEY);
    expect((await api(second.url, key, 'GET', '/servers')).status).toBe(200);
    expectCleanStop(await second.stop());
  });
});

describe('persistence in the embedded default store', () => {
  it('keeps servers (ids, names, configuration), keys and name claims across SIGTERM and restart', async () => {
    const cwd = await tempDir();
    const acme = secret('acme');
    const first = await startServer({ cwd, env: { MCP_FLEET_API_KEYS: `acme:pro:${acme}` } });
    expect(first.printedKeys).toEqual([]);
    const alpha = await create(first, acme, httpServer('alpha', { timeout: 12_345, retry: { enabled: true, max_attempts: 4 }, authentication: { type: 'bearer', token: 'upstream-token-1' } }));
    const beta = await create(first, acme, { name: 'beta', type: 'websocket', endpoint: 'wss://ws.example.com/mcp', heartbeat: { enabled: true, interval: 5000 } });
    const updated = await api(first.url, acme, 'PUT', `/servers/${beta.id}`, { timeout: 2500 });
    expect(updated.status).toBe(200);
    const deleted = await create(first, acme, httpServer('gamma'));
    expect((await api(first.url, acme, 'DELETE', `/servers/${deleted.id}`)).status).toBe(200);
    const alphaBefore = (await api(first.url, acme, 'GET', `/servers/${alpha.id}`)).body.data;
    const betaBefore = (await api(first.url, acme, 'GET', `/servers/${beta.id}`)).body.data;
    expect(alphaBefore).toMatchObject({ timeout: 12_345, authentication: { type: 'bearer' } });
    expect(betaBefore).toMatchObject({ timeout: 2500 });
    expectCleanStop(await first.stop('SIGTERM'));
    expectNoWal(join(cwd, '.mcp-fleet', 'fleet.sqlite'));

    // No MCP_FLEET_API_KEYS now: the key registered last time is in the store, so no key is created either.
    const second = await startServer({ cwd });
    expect(second.printedKeys).toEqual([]);
    const list = await api(second.url, acme, 'GET', '/servers');
    expect(list.status).toBe(200);
    expect(list.body.data.map((s: { id: string; name: string }) => [s.id, s.name])).toEqual([
      [alpha.id, 'alpha'],
      [beta.id, 'beta'],
    ]);
    expect(list.body.pagination).toMatchObject({ total: 2 });
    expect((await api(second.url, acme, 'GET', `/servers/${alpha.id}`)).body.data).toEqual(alphaBefore);
    expect((await api(second.url, acme, 'GET', `/servers/${beta.id}`)).body.data).toEqual(betaBefore);
    expect((await api(second.url, acme, 'GET', `/servers/${deleted.id}`)).status).toBe(404);

    const again = await api(second.url, acme, 'POST', '/servers', httpServer('alpha'));
    expect(again.status).toBe(409);
    expect(again.body.error).toMatchObject({ code: 'SERVER_NAME_EXISTS', details: { name: 'alpha' } });
    // The deleted server's name was released before the restart and stays free.
    expect((await api(second.url, acme, 'POST', '/servers', httpServer('gamma'))).status).toBe(201);
    expect(second.stdout() + second.stderr()).not.toContain('upstream-token-1');
    expectCleanStop(await second.stop());
  });

  it('keeps everything that was answered 201 before a SIGKILL', async () => {
    const cwd = await tempDir();
    const first = await startServer({ cwd });
    const key = first.printedKeys[0] as string;
    const created: string[] = [];
    for (let i = 0; i < 5; i++) created.push((await create(first, key, httpServer(`crash-${i}`))).id);
    const killed = await first.stop('SIGKILL');
    expect(killed.signal).toBe('SIGKILL');
    expect(killed.stdout).not.toContain('stopped');

    const second = await startServer({ cwd });
    expect(second.printedKeys).toEqual([]);
    const list = await api(second.url, key, 'GET', '/servers');
    expect(list.status).toBe(200);
    expect(list.body.data.map((s: { id: string }) => s.id)).toEqual(created);
    const dup = await api(second.url, key, 'POST', '/servers', httpServer('crash-4'));
    expect(dup.status).toBe(409);
    expectCleanStop(await second.stop());
  });
});

describe('MCP_FLEET_STORE', () => {
  it('memory:// keeps nothing across a restart and writes no file', async () => {
    const cwd = await tempDir();
    const first = await startServer({ cwd, env: { MCP_FLEET_STORE: 'memory://' } });
    expect(first.storeLabel).toMatch(/^memory/);
    const firstKey = first.printedKeys[0] as string;
    expect(firstKey).toMatch(/^mcpf_/);
    await create(first, firstKey, httpServer('ephemeral'));
    expectCleanStop(await first.stop());

    const second = await startServer({ cwd, env: { MCP_FLEET_STORE: 'memory://' } });
    expect(second.printedKeys).toHaveLength(1);
    const secondKey = second.printedKeys[0] as string;
    expect(secondKey).not.toBe(firstKey);
    expect((await api(second.url, firstKey, 'GET', '/servers')).status).toBe(401);
    expect(await listNames(second, secondKey)).toEqual([]);
    expectCleanStop(await second.stop());
    expect(existsSync(join(cwd, '.mcp-fleet'))).toBe(false);
  });

  it('sqlite://PATH creates that file (and its folder) and keeps the data there, whatever the working directory', async () => {
    const data = await tempDir('mcp-fleet-data-');
    const file = join(data, 'x', 'db.sqlite');
    const store = `sqlite://${file}`;
    const cwd1 = await tempDir();
    const first = await startServer({ cwd: cwd1, env: { MCP_FLEET_STORE: store } });
    expect(first.storeLabel).toBe(`sqlite ${file}`);
    expect(existsSync(file)).toBe(true);
    const key = first.printedKeys[0] as string;
    await create(first, key, httpServer('kept'));
    expectCleanStop(await first.stop());
    expectNoWal(file);
    expect(existsSync(join(cwd1, '.mcp-fleet'))).toBe(false);

    const cwd2 = await tempDir();
    const second = await startServer({ cwd: cwd2, env: { MCP_FLEET_STORE: store } });
    expect(second.printedKeys).toEqual([]);
    expect(await listNames(second, key)).toEqual(['kept']);
    expectCleanStop(await second.stop());
  });

  it('a relative sqlite:// path is taken from the working directory', async () => {
    const cwd = await tempDir();
    const server = await startServer({ cwd, env: { MCP_FLEET_STORE: 'sqlite://./data/fleet.sqlite' } });
    expectCleanStop(await server.stop());
    expectNoWal(join(cwd, 'data', 'fleet.sqlite'));
  });

  it.each([
    'postgres://fleet:pw-hunter2-secret@127.0.0.1:1/fleet',
    'postgresql://fleet:pw-hunter2-secret@127.0.0.1:1/fleet',
  ])('a PostgreSQL that cannot be reached (%s) exits 2 within seconds, naming host and port, never the password', async (value) => {
    const cwd = await tempDir();
    const started = Date.now();
    const exit = await runToExit({ cwd, env: { MCP_FLEET_STORE: value } });
    expect(Date.now() - started).toBeLessThan(8000);
    expect(exit.code).toBe(2);
    expect(exit.stderr).toContain('MCP_FLEET_STORE');
    expect(exit.stderr).toMatch(/^mcp-fleet: MCP_FLEET_STORE: Cannot connect to PostgreSQL at 127\.0\.0\.1:1 \(database fleet\)/m);
    expect(exit.stderr).not.toMatch(/\n\s+at /);
    expect(exit.stdout + exit.stderr).not.toContain('hunter2');
    expect(exit.stdout).not.toContain('listening');
    expect(existsSync(join(cwd, '.mcp-fleet'))).toBe(false);
  });

  it.each(['redis://:pw-hunter2-secret@127.0.0.1:1', 'rediss://user:pw-hunter2-secret@127.0.0.1:1/2'])(
    'a Redis that cannot be reached (%s) exits 2 within seconds, naming host and port, never the password',
    async (value) => {
      const cwd = await tempDir();
      const started = Date.now();
      const exit = await runToExit({ cwd, env: { MCP_FLEET_STORE: value } });
      expect(Date.now() - started).toBeLessThan(8000);
      expect(exit.code).toBe(2);
      expect(exit.stderr).toMatch(/^mcp-fleet: MCP_FLEET_STORE: Cannot connect to Redis at 127\.0\.0\.1:1\b/m);
      expect(exit.stderr).not.toMatch(/\n\s+at /);
      expect(exit.stdout + exit.stderr).not.toContain('hunter2');
      expect(exit.stdout).not.toContain('listening');
      expect(existsSync(join(cwd, '.mcp-fleet'))).toBe(false);
    },
  );

  describe.skipIf(withoutRedis('MCP_FLEET_STORE=redis://'))('redis:// (REDIS_URL, database 9)', () => {
    // The server writes under the default prefix, `mcp-fleet:`; database 9 keeps that away from other data, and
    // only the keys that appeared during this test are deleted afterwards.
    const store = REDIS_URL === undefined ? '' : withDatabase(REDIS_URL, 9);
    removeKeysAddedDuring(store);

    it('keeps servers, keys and name claims across a restart, whatever the working directory', async () => {
      // An account of this run's own, so that another run on the same database lists nothing of ours.
      const account = `acme${randomBytes(4).toString('hex')}`;
      const key = secret('acme');
      const first = await startServer({ cwd: await tempDir(), env: { MCP_FLEET_STORE: store, MCP_FLEET_API_KEYS: `${account}:pro:${key}` } });
      expect(first.storeLabel).toBe(`redis ${new URL(store).hostname}:${new URL(store).port || '6379'}/9`);
      const alpha = await create(first, key, httpServer('alpha', { authentication: { type: 'bearer', token: 'upstream-token-2' } }));
      await create(first, key, httpServer('beta'));
      expectCleanStop(await first.stop());

      const cwd = await tempDir();
      const second = await startServer({ cwd, env: { MCP_FLEET_STORE: store } });
      expect(second.printedKeys).toEqual([]);
      expect(await listNames(second, key)).toEqual(['alpha', 'beta']);
      expect((await api(second.url, key, 'GET', `/servers/${alpha.id}`)).body.data).toMatchObject({ name: 'alpha', authentication: { type: 'bearer' } });
      const again = await api(second.url, key, 'POST', '/servers', httpServer('alpha'));
      expect(again.status).toBe(409);
      expect(second.stdout() + second.stderr()).not.toContain('upstream-token-2');
      expectCleanStop(await second.stop());
      expect(existsSync(join(cwd, '.mcp-fleet'))).toBe(false);
    });

    it('GET /readyz answers 503 while the store cannot be reached, and 200 again once it can', async () => {
      const relay = await startRelay(store, 6379);
      const server = await startServer({ cwd: await tempDir(), env: { MCP_FLEET_STORE: relay.url, MCP_FLEET_API_KEYS: `ready${randomBytes(3).toString('hex')}:pro:${secret('ready')}` } });
      try {
        await expectReadyzFollows(server.origin, relay);
      } finally {
        await server.stop();
        relay.close();
      }
    });
  });

  it.each(['mysql://db/fleet', 'sqlite://', 'fleet.sqlite'])('an unknown or incomplete value (%s) exits 2', async (value) => {
    const exit = await runToExit({ cwd: await tempDir(), env: { MCP_FLEET_STORE: value } });
    expect(exit.code).toBe(2);
    expect(exit.stderr).toContain('MCP_FLEET_STORE');
  });
});

describe('MCP_FLEET_API_KEYS', () => {
  it('registers every key at start; each account sees only its own servers; a restart with the same keys is idempotent', async () => {
    const cwd = await tempDir();
    const acme = secret('acme');
    const beta = secret('beta');
    const env = { MCP_FLEET_API_KEYS: `acme:pro:${acme},beta:free:${beta}` };
    const first = await startServer({ cwd, env });
    expect(first.printedKeys).toEqual([]);

    const acmeServer = await create(first, acme, httpServer('same-name'));
    const betaServer = await create(first, beta, httpServer('same-name'));
    expect(betaServer.id).not.toBe(acmeServer.id);
    await create(first, acme, httpServer('acme-only'));
    expect(await listNames(first, acme)).toEqual(['same-name', 'acme-only']);
    expect(await listNames(first, beta)).toEqual(['same-name']);
    const foreign = await api(first.url, beta, 'GET', `/servers/${acmeServer.id}`);
    expect(foreign.status).toBe(404);
    expect(foreign.body.error.code).toBe('SERVER_NOT_FOUND');
    expect((await api(first.url, beta, 'DELETE', `/servers/${acmeServer.id}`)).status).toBe(404);
    expectCleanStop(await first.stop());

    const second = await startServer({ cwd, env });
    expect(second.printedKeys).toEqual([]);
    expect(await listNames(second, acme)).toEqual(['same-name', 'acme-only']);
    expect(await listNames(second, beta)).toEqual(['same-name']);
    const exit = await second.stop();
    expectCleanStop(exit);
    for (const output of [first.stdout(), first.stderr(), exit.stdout, exit.stderr]) {
      expect(output).not.toContain(acme);
      expect(output).not.toContain(beta);
    }
  });

  it('an entry ending in :tools=<glob>|<glob> gives its key that tool allowlist; a secret may still hold colons', async () => {
    const upstream = await startV2ToolServer();
    try {
      const limited = `${secret('limited')}:with:colons`;
      const open = secret('open');
      const server = await startServer({
        cwd: await tempDir(),
        env: {
          MCP_FLEET_STORE: 'memory://',
          MCP_FLEET_ALLOW_PRIVATE_NETWORKS: '1',
          MCP_FLEET_API_KEYS: `acme:pro:${limited}:tools=tools__echo|other__*,acme:pro:${open}`,
        },
      });
      const { id } = await create(server, open, { name: 'tools', type: 'http', endpoint: upstream.url });
      const call = (key: string, name: string) => api(server.url, key, 'POST', `/servers/${id}/tools/call`, { name, arguments: name === 'echo' ? { text: 'hi' } : {} });
      expect((await call(limited, 'echo')).status).toBe(200);
      const denied = await call(limited, 'fail');
      expect(denied.status).toBe(403);
      expect(denied.body.error).toMatchObject({ code: 'FORBIDDEN', details: { tool: 'fail' } });
      expect((await call(open, 'fail')).status).toBe(200);
      const calls = await api(server.url, open, 'GET', '/tool-calls');
      expect(calls.body.pagination.total).toBe(2);
      expectCleanStop(await server.stop());
    } finally {
      await upstream.close();
    }
  });

  it('an entry may end with :scopes=<scope>|<scope> (with :tools= in any order); a key with a list and no scopes cannot write servers', async () => {
    const upstream = await startV2ToolServer();
    try {
      const writer = `${secret('writer')}:with:colons`;
      const listed = secret('listed');
      const reader = secret('reader');
      const server = await startServer({
        cwd: await tempDir(),
        env: {
          MCP_FLEET_STORE: 'memory://',
          MCP_FLEET_ALLOW_PRIVATE_NETWORKS: '1',
          MCP_FLEET_API_KEYS: [
            `acme:pro:${writer}:scopes=servers:read|servers:write|tool_calls:write:tools=tools__echo`,
            `acme:pro:${listed}:tools=tools__*:prompts=tools__*:resources=tools__file:///*`,
            `acme:pro:${reader}:scopes=servers:read`,
          ].join(','),
        },
      });
      const { id } = await create(server, writer, { name: 'tools', type: 'http', endpoint: upstream.url });
      const call = (key: string, name: string) => api(server.url, key, 'POST', `/servers/${id}/tools/call`, { name, arguments: name === 'echo' ? { text: 'hi' } : {} });
      expect((await call(writer, 'echo')).status).toBe(200);
      expect((await call(writer, 'fail')).status).toBe(403);
      // Its list and no scopes: every scope but servers:write.
      const rename = await api(server.url, listed, 'PUT', `/servers/${id}`, { name: 'tools__files' });
      expect(rename.status).toBe(403);
      expect(rename.body.error).toMatchObject({ code: 'FORBIDDEN', details: { required_scope: 'servers:write' } });
      expect((await call(listed, 'fail')).status).toBe(200);
      const denied = await call(reader, 'echo');
      expect(denied.body.error).toMatchObject({ code: 'FORBIDDEN', details: { required_scope: 'tool_calls:write' } });
      expect((await api(server.url, reader, 'GET', '/servers')).status).toBe(200);
      expectCleanStop(await server.stop());
    } finally {
      await upstream.close();
    }
  });

  const bad = secret('leak-me');
  it.each([
    ['a tier that does not exist', `acme:gold:${bad}`],
    ['a missing tier', `acme:${bad}`],
    ['a missing secret', 'acme:pro:'],
    ['a missing account', `:pro:${bad}`],
    ['an empty entry among good ones', `acme:pro:${secret('ok')},,beta:free:${bad}`],
    ['a secret shorter than 16 characters', `acme:pro:${bad.slice(0, 12)}`],
    ['an account that is not a valid name', `acme corp!:pro:${bad}`],
    ['a secret with a space', `acme:pro:${bad} ${bad}`],
    ['a secret with a comma, read as a second entry', `acme:pro:${secret('ok')},x:${bad}:y`],
    ['an empty tool allowlist', `acme:pro:${bad}:tools=`],
    ['an empty pattern in the tool allowlist', `acme:pro:${bad}:tools=search__*|`],
    ['a tools suffix without a secret', `acme:pro::tools=search__*`],
    ['an unknown scope', `acme:pro:${bad}:scopes=servers:read|servers:everything`],
    ['an empty scope list', `acme:pro:${bad}:scopes=`],
    ['the same option twice', `acme:pro:${bad}:tools=a__*:tools=b__*`],
    ['an empty pattern in the resource allowlist', `acme:pro:${bad}:resources=docs__*|`],
  ])('%s exits 2, names the variable and never prints the secret', async (_label, value) => {
    const exit = await runToExit({ cwd: await tempDir(), env: { MCP_FLEET_API_KEYS: value } });
    expect(exit.code, exit.stderr).toBe(2);
    expect(exit.stderr).toContain('MCP_FLEET_API_KEYS');
    expect(exit.stdout).not.toContain('listening');
    const output = exit.stdout + exit.stderr;
    expect(output).not.toContain(bad.slice(0, 12));
    expect(output).not.toMatch(PRINTED_KEY);
  });
});

/** A port nobody listens on right now. */
async function freePort(host: string): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, host, resolve));
  const { port } = probe.address() as AddressInfo;
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  return port;
}

describe('HOST and PORT', () => {
  it.skipIf(process.platform !== 'linux')('listens exactly where HOST and PORT say', async () => {
    const port = await freePort('127.0.0.2');
    const server = await startServer({ cwd: await tempDir(), env: { HOST: '127.0.0.2', PORT: String(port) } });
    expect(server.url).toBe(`http://127.0.0.2:${port}/v1`);
    const key = server.printedKeys[0] as string;
    expect((await api(server.url, key, 'GET', '/servers')).status).toBe(200);
    // Bound to that address only.
    await expect(fetch(`http://127.0.0.1:${port}/v1/servers`)).rejects.toThrow();
    expectCleanStop(await server.stop());
  });

  it('HOST ::1 listens on IPv6 and prints the address in brackets', async () => {
    const server = await startServer({ cwd: await tempDir(), env: { HOST: '::1' } });
    expect(server.origin).toMatch(/^http:\/\/\[::1\]:\d+$/);
    expect((await api(server.url, server.printedKeys[0] as string, 'GET', '/servers')).status).toBe(200);
    expectCleanStop(await server.stop());
  });

  it.each(['abc', '-1', '65536', '3000.5', '80x', ' ', '0x50', '1e3'])('PORT=%j exits 2 naming PORT', async (port) => {
    const exit = await runToExit({ cwd: await tempDir(), env: { PORT: port } });
    expect(exit.code).toBe(2);
    expect(exit.stderr).toMatch(/^mcp-fleet: PORT: /m);
  });

  it('a port already in use exits 2 with one clear line, no stack trace', async () => {
    const holder = createServer();
    await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve));
    const { port } = holder.address() as AddressInfo;
    try {
      const exit = await runToExit({ cwd: await tempDir(), env: { PORT: String(port) } });
      expect(exit.code).toBe(2);
      expect(exit.stderr).toContain(`PORT ${port}`);
      expect(exit.stderr).toContain('EADDRINUSE');
      expect(exit.stderr).not.toMatch(/\n\s+at /);
    } finally {
      await new Promise<void>((resolve) => holder.close(() => resolve()));
    }
  });
});

describe('malformed HTTP', () => {
  /** Sends raw bytes and reads what comes back until the server closes. */
  function raw(port: number, text: string): Promise<string> {
    return new Promise((resolve, reject) => {
      const socket = connect(port, '127.0.0.1', () => socket.write(text));
      let answer = '';
      socket.on('data', (chunk) => (answer += chunk));
      socket.on('close', () => resolve(answer));
      socket.on('error', reject);
      setTimeout(() => socket.destroy(), 5000).unref();
    });
  }

  it('an unknown method or a bad Content-Length is answered 400 in the error envelope', async () => {
    const server = await startServer({ cwd: await tempDir(), env: { MCP_FLEET_STORE: 'memory://' } });
    for (const request of ['BREW /v1/servers HTTP/1.1\r\nHost: x\r\n\r\n', 'POST /v1/servers HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n']) {
      const answer = await raw(server.port, request);
      expect(answer).toMatch(/^HTTP\/1\.1 400 /);
      const body = JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4)) as { success: boolean; error: { code: string }; meta: { request_id: string } };
      expect(body).toMatchObject({ success: false, error: { code: 'INVALID_REQUEST' } });
      expect(answer.toLowerCase()).toContain(`x-request-id: ${body.meta.request_id.toLowerCase()}`);
    }
    expectCleanStop(await server.stop());
  });
});

describe('MCP_FLEET_TRUST_PROXY', () => {
  /** Bad keys from one forwarded address until the 401 budget (20 a minute) is spent, then one from another. */
  async function guessFrom(url: string, addresses: [string, string]): Promise<[number, number]> {
    // The 22 guesses must fall in one window (the server's real clock): a minute that ends among them renews the budget.
    await earlyInAMinute();
    let last = 0;
    for (let i = 0; i < 21; i++) {
      last = (await fetch(`${url}/servers`, { headers: { authorization: 'Bearer wrong-key-0123456789', 'x-forwarded-for': addresses[0] } })).status;
    }
    const other = (await fetch(`${url}/servers`, { headers: { authorization: 'Bearer wrong-key-0123456789', 'x-forwarded-for': addresses[1] } })).status;
    return [last, other];
  }

  it('with one hop, each forwarded client has its own 401 budget; without, the header is ignored', async () => {
    const behind = await startServer({ cwd: await tempDir(), env: { MCP_FLEET_STORE: 'memory://', MCP_FLEET_TRUST_PROXY: '1' } });
    expect(await guessFrom(behind.url, ['198.51.100.1', '198.51.100.2'])).toEqual([429, 401]);
    expectCleanStop(await behind.stop());
    const direct = await startServer({ cwd: await tempDir(), env: { MCP_FLEET_STORE: 'memory://' } });
    // A client cannot buy a fresh budget by writing the header itself.
    expect(await guessFrom(direct.url, ['198.51.100.1', '198.51.100.2'])).toEqual([429, 429]);
    expectCleanStop(await direct.stop());
  });
});

describe('MCP_FLEET_STDIO_COMMANDS', () => {
  const stdio = (name: string, command: string) => ({ name, type: 'stdio', command, args: ['server.js'] });

  it('allows exactly the listed commands', async () => {
    const server = await startServer({ cwd: await tempDir(), env: { MCP_FLEET_STDIO_COMMANDS: 'node, python3' } });
    const key = server.printedKeys[0] as string;
    const node = await create(server, key, stdio('local-node', 'node'));
    expect(node).toMatchObject({ type: 'stdio', endpoint: null });
    expect((await api(server.url, key, 'GET', `/servers/${node.id}`)).body.data).toMatchObject({ command: 'node', args: ['server.js'] });
    await create(server, key, stdio('local-python', 'python3'));
    for (const command of ['bash', 'nodejs', '/usr/bin/node', 'node ']) {
      const refused = await api(server.url, key, 'POST', '/servers', stdio(`other-${command.trim()}`, command));
      expect(refused.status, command).toBe(400);
      expect(refused.body.error).toMatchObject({ code: 'INVALID_REQUEST', details: { field: 'command' } });
    }
    expectCleanStop(await server.stop());
  });

  it.runIf(process.getuid?.() === 0)('MCP_FLEET_STDIO_UIDS and MCP_FLEET_STDIO_HOMES: the account’s stdio user comes from the range, its private home from the folder', async () => {
    const cwd = await tempDir();
    // Every stdio user must pass the folders above the homes (a temporary folder is made 0700).
    chmodSync(cwd, 0o755);
    const homes = join(cwd, 'homes');
    const env = { MCP_FLEET_STDIO_COMMANDS: 'node', MCP_FLEET_STDIO_UIDS: '270000-270009', MCP_FLEET_STDIO_HOMES: homes, MCP_FLEET_STORE: 'memory://' };
    const server = await startServer({ cwd, env });
    const key = server.printedKeys[0] as string;
    await create(server, key, { name: 'local-node', type: 'stdio', command: 'node', args: ['-e', '1'] });
    const made = readdirSync(homes).map(Number);
    expect(made).toHaveLength(1);
    expect(made[0]).toBeGreaterThanOrEqual(270_000);
    expect(made[0]).toBeLessThanOrEqual(270_009);
    expect(statSync(join(homes, String(made[0]))).uid).toBe(made[0]);
    expectCleanStop(await server.stop());
  });

  it.each([undefined, '', ' , '])('stdio is off when the list is empty (%j)', async (value) => {
    const server = await startServer({ cwd: await tempDir(), env: { MCP_FLEET_STDIO_COMMANDS: value } });
    const key = server.printedKeys[0] as string;
    const refused = await api(server.url, key, 'POST', '/servers', stdio('local', 'node'));
    expect(refused.status).toBe(400);
    expect(refused.body.error).toMatchObject({ code: 'INVALID_REQUEST', details: { field: 'command' } });
    await create(server, key, httpServer('remote'));
    expectCleanStop(await server.stop());
  });
});

describe('the configuration first', () => {
  it('is read before the engine loads: what main.js imports before it runs reaches no package but @mcp-fleet/core/scopes', () => {
    // A wrong value exits 2 without loading the MCP SDKs, zod and undici (about half a second a start; main.ts).
    const { packages } = staticImports(REFERENCE_SERVER);
    expect([...packages].filter((from) => !from.startsWith('node:'))).toEqual(['@mcp-fleet/core/scopes']);
  });
});

describe('variables of later features are validated now', () => {
  it.each([
    ['MCP_FLEET_ALLOW_PRIVATE_NETWORKS', 'yes'],
    ['MCP_FLEET_ALLOW_PRIVATE_NETWORKS', 'true'],
    ['MCP_FLEET_ALLOW_PRIVATE_NETWORKS', '2'],
    ['MCP_FLEET_WEBHOOK_RETRY_BASE_MS', '0'],
    ['MCP_FLEET_WEBHOOK_RETRY_BASE_MS', '-5'],
    ['MCP_FLEET_WEBHOOK_RETRY_BASE_MS', '1.5'],
    ['MCP_FLEET_WEBHOOK_RETRY_BASE_MS', 'soon'],
    ['MCP_FLEET_STDIO_UIDS', '200000'],
    ['MCP_FLEET_STDIO_UIDS', '300-200'],
    ['MCP_FLEET_STDIO_UIDS', '0-10'],
    ['MCP_FLEET_STDIO_SHARED_USER', 'yes'],
  ])('%s=%s exits 2 naming the variable', async (name, value) => {
    const exit = await runToExit({ cwd: await tempDir(), env: { [name]: value } });
    expect(exit.code).toBe(2);
    expect(exit.stderr).toContain(`mcp-fleet: ${name}:`);
  });

  it('valid values start the server', async () => {
    for (const env of [
      { MCP_FLEET_ALLOW_PRIVATE_NETWORKS: '1', MCP_FLEET_WEBHOOK_RETRY_BASE_MS: '250' },
      { MCP_FLEET_ALLOW_PRIVATE_NETWORKS: '0', MCP_FLEET_WEBHOOK_RETRY_BASE_MS: '86400000' },
    ]) {
      const server = await startServer({ cwd: await tempDir(), env: { ...env, MCP_FLEET_STORE: 'memory://' } });
      expectCleanStop(await server.stop());
    }
  });
});

/** A reference server on memory with one key of `acme`, allowed to reach the loopback upstreams of these tests. */
const probingEnv = (key: string, health: Record<string, string>) => ({
  MCP_FLEET_STORE: 'memory://',
  MCP_FLEET_API_KEYS: `acme:pro:${key}`,
  MCP_FLEET_ALLOW_PRIVATE_NETWORKS: '1',
  ...health,
});

describe('outgoing connections of the reference server', () => {
  it('runs the background monitor: a new server turns healthy without anyone asking (MCP_FLEET_HEALTH_INTERVAL_MS)', async () => {
    const fixture = await startV1Server();
    try {
      const key = secret('monitor');
      const server = await startServer({
        cwd: await tempDir(),
        // What is tested is that the monitor probes unasked, not how fast: a probe slowed by a loaded machine must not
        // read as `degraded` (slow_probe), so the latency rule is set out of reach.
        env: probingEnv(key, { MCP_FLEET_HEALTH_INTERVAL_MS: '1000', MCP_FLEET_HEALTH_DEGRADED_LATENCY_MS: '600000' }),
      });
      const created = await api(server.url, key, 'POST', '/servers', { name: 'watched', type: 'http', endpoint: fixture.url });
      let health = 'unknown';
      for (const end = Date.now() + 15_000; health === 'unknown' && Date.now() < end; await new Promise((r) => setTimeout(r, 200))) {
        health = (await api(server.url, key, 'GET', `/servers/${created.body.data.id}`)).body.data.health;
      }
      expect(health).toBe('healthy');
      expect(fixture.methods).toContain('ping');
      expectCleanStop(await server.stop());
    } finally {
      await fixture.close();
    }
  });

  it.each(['500', 'soon', '-1'])('MCP_FLEET_HEALTH_INTERVAL_MS=%s exits 2', async (value) => {
    const exit = await runToExit({ cwd: await tempDir(), env: { MCP_FLEET_HEALTH_INTERVAL_MS: value } });
    expect(exit.code).toBe(2);
    expect(exit.stderr).toContain('MCP_FLEET_HEALTH_INTERVAL_MS');
  });

  it('MCP_FLEET_HEALTH_DEGRADED_LATENCY_MS reaches the health rules: a probe slower than it is degraded', async () => {
    const fixture = await startV1Server();
    try {
      const key = secret('rules');
      const server = await startServer({
        cwd: await tempDir(),
        // Any real probe takes longer than a millisecond: each one is `slow_probe`.
        env: probingEnv(key, { MCP_FLEET_HEALTH_INTERVAL_MS: '0', MCP_FLEET_HEALTH_DEGRADED_LATENCY_MS: '1', MCP_FLEET_HEALTH_ANNOUNCE_AFTER: '1' }),
      });
      const created = await api(server.url, key, 'POST', '/servers', { name: 'local', type: 'http', endpoint: fixture.url });
      const health = await api(server.url, key, 'GET', `/servers/${created.body.data.id}/health`);
      expect(health.status).toBe(200);
      expect(health.body.data).toMatchObject({ status: 'degraded', state_reason: 'slow_probe', error: null });
      expectCleanStop(await server.stop());
    } finally {
      await fixture.close();
    }
  });

  it('MCP_FLEET_BREAKER_FAILURES=1 opens the breaker at the first failed probe; 0 turns it off', async () => {
    // A loopback port nothing listens on: every probe fails to connect.
    const dead = createServer();
    await new Promise<void>((resolve) => dead.listen(0, '127.0.0.1', resolve));
    const endpoint = `http://127.0.0.1:${(dead.address() as AddressInfo).port}/mcp`;
    await new Promise((resolve) => dead.close(resolve));
    const key = secret('breaker');
    for (const [failures, expected] of [
      ['1', { state: 'open', consecutive_failures: 1 }],
      ['0', { state: 'closed', consecutive_failures: 0 }],
    ] as const) {
      const server = await startServer({
        cwd: await tempDir(),
        env: { MCP_FLEET_STORE: 'memory://', MCP_FLEET_API_KEYS: `acme:pro:${key}`, MCP_FLEET_ALLOW_PRIVATE_NETWORKS: '1', MCP_FLEET_HEALTH_INTERVAL_MS: '0', MCP_FLEET_BREAKER_FAILURES: failures },
      });
      const created = await api(server.url, key, 'POST', '/servers', { name: 'gone', type: 'http', endpoint });
      const health = await api(server.url, key, 'GET', `/servers/${created.body.data.id}/health`);
      expect(health.status).toBe(200);
      expect(health.body.data).toMatchObject({ status: 'unhealthy', breaker: expected });
      expectCleanStop(await server.stop());
    }
  });

  it.each([
    ['MCP_FLEET_HEALTH_DEGRADED_LATENCY_MS', '0', 'expected an integer from 1 to 600000'],
    ['MCP_FLEET_HEALTH_DEGRADED_ERROR_RATE', '1', 'expected a share from 0 to below 1'],
    ['MCP_FLEET_HEALTH_DEGRADED_ERROR_RATE', '10%', 'expected a share from 0 to below 1'],
    ['MCP_FLEET_HEALTH_ANNOUNCE_AFTER', 'two', 'expected an integer from 1 to 100'],
    ['MCP_FLEET_BREAKER_BACKOFF_MS', '10', 'expected an integer from 1000 to 600000'],
  ])('%s=%s exits 2 and says what it expects', async (name, value, message) => {
    const exit = await runToExit({ cwd: await tempDir(), env: { MCP_FLEET_STORE: 'memory://', [name]: value } });
    expect(exit.code).toBe(2);
    expect(exit.stderr).toContain(`${name}: ${message}`);
  });

  it('MCP_FLEET_BREAKER_BACKOFF_MS with the breaker off exits 2 naming both variables', async () => {
    const exit = await runToExit({ cwd: await tempDir(), env: { MCP_FLEET_STORE: 'memory://', MCP_FLEET_BREAKER_FAILURES: '0', MCP_FLEET_BREAKER_BACKOFF_MS: '5000' } });
    expect(exit.code).toBe(2);
    expect(exit.stderr).toContain('MCP_FLEET_BREAKER_BACKOFF_MS: the breaker is off (MCP_FLEET_BREAKER_FAILURES=0)');
  });

  it('MCP_FLEET_ALLOW_PRIVATE_NETWORKS=1 lets a health probe reach a loopback MCP server; without it the guard refuses', async () => {
    const fixture = await startV1Server();
    try {
      const key = secret('probe');
      for (const [flag, expected] of [
        ['1', { status: 'healthy', error: null }],
        ['', { status: 'unhealthy', error: { code: 'DESTINATION_NOT_ALLOWED' } }],
      ] as const) {
        const server = await startServer({
          cwd: await tempDir(),
          env: { MCP_FLEET_STORE: 'memory://', MCP_FLEET_API_KEYS: `acme:pro:${key}`, MCP_FLEET_ALLOW_PRIVATE_NETWORKS: flag },
        });
        const created = await api(server.url, key, 'POST', '/servers', { name: 'local', type: 'http', endpoint: fixture.url });
        expect(created.status).toBe(201);
        const health = await api(server.url, key, 'GET', `/servers/${created.body.data.id}/health`);
        expect(health.status).toBe(200);
        expect(health.body.data).toMatchObject(expected);
        expectCleanStop(await server.stop());
      }
    } finally {
      await fixture.close();
    }
  });
});

/** Resolves when the socket is closed by the other side (or rejects after `ms`). */
function closed(socket: Socket, ms = 3000): Promise<void> {
  return new Promise((resolve, reject) => {
    if (socket.destroyed) return resolve();
    const timer = setTimeout(() => reject(new Error('the server did not close the connection')), ms);
    socket.once('close', () => {
      clearTimeout(timer);
      resolve();
    });
  });
}

describe('graceful shutdown', () => {
  it.each(['SIGTERM', 'SIGINT'] as const)('%s with an idle keep-alive connection: exit 0 within 2 s, the store closed cleanly', async (signal) => {
    const cwd = await tempDir();
    const server = await startServer({ cwd });
    const key = server.printedKeys[0] as string;
    await create(server, key, httpServer('before-stop'));

    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    try {
      const socket = await new Promise<Socket>((resolve, reject) => {
        const req = httpRequest(`${server.url}/servers`, { agent, headers: { authorization: `Bearer ${key}` } }, (res) => {
          expect(res.statusCode).toBe(200);
          expect(res.headers.connection).toBe('keep-alive');
          res.resume();
          res.on('end', () => resolve(req.socket as Socket));
        });
        req.on('error', reject);
        req.end();
      });
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(socket.destroyed).toBe(false); // kept open, idle, in the agent's pool

      const exit = await server.stop(signal);
      expectCleanStop(exit);
      expect(exit.stdout).toContain(`${signal} received`);
      expect(exit.ms).toBeLessThan(2000);
      await closed(socket);
    } finally {
      agent.destroy();
    }
    expectNoWal(join(cwd, '.mcp-fleet', 'fleet.sqlite'));

    const again = await startServer({ cwd });
    expect(await listNames(again, key)).toEqual(['before-stop']);
    expectCleanStop(await again.stop());
  });

  it('a request in flight at SIGTERM is answered (Connection: close) and saved; new connections are refused', async () => {
    const cwd = await tempDir();
    const acme = secret('acme');
    const server = await startServer({ cwd, env: { MCP_FLEET_API_KEYS: `acme:pro:${acme}` } });
    const body = JSON.stringify(httpServer('in-flight'));
    const socket = connect(server.port, '127.0.0.1');
    let response = '';
    socket.setEncoding('utf8').on('data', (chunk: string) => (response += chunk));
    await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
    // Headers and half the body now, the rest after the signal: the request is in flight when SIGTERM lands.
    socket.write(
      `POST /v1/servers HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${acme}\r\n` +
        `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body.slice(0, 10)}`,
    );
    await new Promise((resolve) => setTimeout(resolve, 150));
    const exited = server.stop('SIGTERM');
    await waitForOutput(server, /SIGTERM received/);
    await expect(fetch(`${server.url}/servers`, { headers: { authorization: `Bearer ${acme}` } })).rejects.toThrow();

    socket.write(body.slice(10));
    await closed(socket);
    const answeredAt = Date.now();
    expect(response).toMatch(/^HTTP\/1\.1 201 /);
    expect(response.toLowerCase()).toContain('\r\nconnection: close\r\n');
    expect(response).toContain('"name":"in-flight"');

    const exit = await exited;
    expectCleanStop(exit);
    expect(Date.now() - answeredAt).toBeLessThan(2000);

    const again = await startServer({ cwd });
    expect(await listNames(again, acme)).toEqual(['in-flight']);
    expectCleanStop(await again.stop());
  });
});
