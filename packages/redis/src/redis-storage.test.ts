import { execFile, spawnSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { createFleet, createMemoryStore } from '@mcp-fleet/core';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { oneWindow } from '../../../test/support/clock.js';
import { deleteKeys, keysStartingWith, rawClient, REDIS_URL, uniquePrefix, withoutRedis } from '../../../test/support/redis.js';
import { createRedisStore, type RedisStore, type RedisStoreOptions } from './index.js';

const run = promisify(execFile);
const skip = withoutRedis('createRedisStore');
const url = REDIS_URL as string;
const PREFIX = uniquePrefix('storage');
/** The upgrade note's rename runs through redis-cli; without it that test skips. */
const HAS_REDIS_CLI = spawnSync('redis-cli', ['--version']).status === 0;

afterAll(async () => {
  if (!skip) await deleteKeys(PREFIX);
});

const toClose: { close(): Promise<void> }[] = [];
afterEach(async () => {
  for (const c of toClose.splice(0).reverse()) await c.close();
});
function track<T extends { close(): Promise<void> }>(c: T): T {
  toClose.push(c);
  return c;
}

let cases = 0;
/** A prefix of its own for each case, under the file's. */
const casePrefix = () => `${PREFIX}${++cases}:`;

async function open(options: Partial<RedisStoreOptions> = {}): Promise<RedisStore> {
  return track(await createRedisStore({ url, keyPrefix: casePrefix(), ...options }));
}

async function timed<T>(work: PromiseLike<T>): Promise<{ ms: number; result: PromiseSettledResult<T> }> {
  const started = Date.now();
  const [result] = await Promise.allSettled([work]);
  return { ms: Date.now() - started, result: result as PromiseSettledResult<T> };
}

function rejectionOf(result: PromiseSettledResult<unknown>): Error {
  if (result.status !== 'rejected') throw new Error('expected a rejection, got a value');
  return result.reason as Error;
}

/** A TCP server that accepts connections and never answers: a Redis that hangs. */
async function silentServer(): Promise<{ port: number; close(): Promise<void> }> {
  const sockets = new Set<Socket>();
  const server = createServer((socket) => {
    sockets.add(socket);
    socket.on('error', () => {});
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as { port: number }).port,
    close: () => {
      for (const socket of sockets) socket.destroy();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}

/**
 * A TCP proxy in front of the real Redis, to take Redis away from a running store and bring it back: `freeze` stops
 * forwarding (a server that stopped answering), `down` drops every connection and stops listening (a server that
 * is gone), `up` listens again on the same port.
 */
class RedisProxy {
  private server: Server | undefined;
  private readonly sockets = new Set<Socket>();
  private frozen = false;
  port = 0;

  constructor(private readonly target: URL) {}

  get url(): string {
    const proxied = new URL(this.target);
    proxied.hostname = '127.0.0.1';
    proxied.port = String(this.port);
    return proxied.toString();
  }

  async up(): Promise<void> {
    this.frozen = false;
    this.server = createServer((client) => {
      const upstream = connect(Number(this.target.port || 6379), this.target.hostname || 'localhost');
      for (const socket of [client, upstream]) {
        this.sockets.add(socket);
        socket.on('error', () => {});
        socket.on('close', () => {
          this.sockets.delete(socket);
          client.destroy();
          upstream.destroy();
        });
      }
      client.on('data', (data) => this.frozen || upstream.write(data));
      upstream.on('data', (data) => this.frozen || client.write(data));
    });
    await new Promise<void>((resolve) => this.server?.listen(this.port, '127.0.0.1', resolve));
    this.port = (this.server.address() as { port: number }).port;
  }

  freeze(): void {
    this.frozen = true;
  }

  async down(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
    this.server = undefined;
  }

  close(): Promise<void> {
    return this.down();
  }
}

describe('createRedisStore without a server', () => {
  // These need no Redis: they run with or without REDIS_URL.
  it('rejects within about 2 s when nothing listens, naming host and port but never the password', async () => {
    const { ms, result } = await timed(createRedisStore({ url: 'redis://:hunter2@127.0.0.1:1' }));
    const error = rejectionOf(result);
    expect(ms).toBeLessThan(3000);
    expect(error.message).toContain('127.0.0.1:1');
    expect(error.message).not.toContain('hunter2');
    expect(String(error.stack)).not.toContain('hunter2');
    expect(JSON.stringify(error, Object.getOwnPropertyNames(error))).not.toContain('hunter2');
  });

  it('rejects at the connect timeout when the server accepts but never answers, default about 2 s', async () => {
    const silent = track(await silentServer());
    const { ms, result } = await timed(createRedisStore({ url: `redis://user:hunter2@127.0.0.1:${silent.port}/3` }));
    const error = rejectionOf(result);
    expect(ms).toBeGreaterThanOrEqual(1900);
    expect(ms).toBeLessThan(3000);
    expect(error.message).toContain(`127.0.0.1:${silent.port}`);
    expect(error.message).not.toContain('hunter2');
  });

  it('takes a shorter connect timeout', async () => {
    const silent = track(await silentServer());
    const { ms, result } = await timed(createRedisStore({ url: `redis://127.0.0.1:${silent.port}`, connectTimeout: 300 }));
    rejectionOf(result);
    expect(ms).toBeLessThan(1000);
  });

  it.each(['http://:hunter2@127.0.0.1:6379', 'not a url hunter2', 'redis//:hunter2@127.0.0.1'])('refuses a URL that is not redis:// (%s) without echoing it', async (bad) => {
    const error = rejectionOf((await timed(createRedisStore({ url: bad }))).result);
    expect(error).toBeInstanceOf(TypeError);
    expect(error.message).not.toContain('hunter2');
  });

  it('refuses timeouts that are not positive', async () => {
    await expect(createRedisStore({ url: 'redis://127.0.0.1:1', connectTimeout: 0 })).rejects.toThrow(TypeError);
    await expect(createRedisStore({ url: 'redis://127.0.0.1:1', commandTimeout: -5 })).rejects.toThrow(TypeError);
  });

  it('importing the package opens no connection', async () => {
    // The build, in a process of its own, with every socket connect counted: an import must not dial anything.
    const built = fileURLToPath(new URL('../dist/index.js', import.meta.url));
    const script = `
      import net from 'node:net';
      let dialed = 0;
      const connect = net.Socket.prototype.connect;
      net.Socket.prototype.connect = function (...args) { dialed++; return connect.apply(this, args); };
      const redis = await import(process.argv[1]);
      await new Promise((resolve) => setTimeout(resolve, 200));
      process.stdout.write(JSON.stringify({ dialed, exports: Object.keys(redis).sort() }));
    `;
    const { stdout } = await run(process.execPath, ['--input-type=module', '-e', script, built], { timeout: 10_000 });
    expect(JSON.parse(stdout)).toEqual({
      dialed: 0,
      exports: ['DEFAULT_KEY_PREFIX', 'RedisIndexStore', 'RedisRateLimitStore', 'RedisTimeoutError', 'createRedisStore'],
    });
  });
});

describe.skipIf(skip)('createRedisStore on a real Redis', () => {
  it('gives a Keyv whose keys are exactly keyPrefix + key, with throwOnErrors, surviving a new connection', async () => {
    const keyPrefix = casePrefix();
    const first = await createRedisStore({ url, keyPrefix });
    expect(first.records.throwOnErrors).toBe(true);
    await first.records.set('mcp-fleet:probe', { deep: { value: [1, 2, 3] } });
    expect(await keysStartingWith(keyPrefix)).toEqual([`${keyPrefix}mcp-fleet:probe`]);
    await first.close();
    await first.close();

    const second = track(await createRedisStore({ url, keyPrefix }));
    expect(await second.records.get('mcp-fleet:probe')).toEqual({ deep: { value: [1, 2, 3] } });
    expect(await second.records.getMany(['mcp-fleet:probe', 'missing'])).toEqual([{ deep: { value: [1, 2, 3] } }, undefined]);
    expect(await second.records.has('mcp-fleet:probe')).toBe(true);
    expect(await second.records.delete('mcp-fleet:probe')).toBe(true);
    expect(await second.records.get('mcp-fleet:probe')).toBeUndefined();
  });

  it('defaults its key prefix to mcp-fleet:', async () => {
    // Its own database keeps the default prefix from meeting anyone's data; only the keys written here are removed.
    const inDb = new URL(url);
    inDb.pathname = '/11';
    const redis = track(await createRedisStore({ url: inDb.toString() }));
    const key = `probe-${randomBytes(6).toString('hex')}`;
    try {
      await redis.records.set(key, 1);
      await redis.index.commit({ claims: [{ key, owner: 'o' }] });
      await redis.rateLimits.consume([{ key, limit: 1 }], Date.now() + 30_000);
      expect(await keysStartingWith(`mcp-fleet:${key}`, inDb.toString())).toEqual([`mcp-fleet:${key}`]);
      expect(await keysStartingWith(`mcp-fleet:index:claim:${key}`, inDb.toString())).toEqual([`mcp-fleet:index:claim:${key}`]);
      expect(await keysStartingWith(`mcp-fleet:ratelimit:${key}`, inDb.toString())).toEqual([`mcp-fleet:ratelimit:${key}`]);
    } finally {
      const client = await rawClient(inDb.toString());
      await client.unlink([`mcp-fleet:${key}`, `mcp-fleet:index:claim:${key}`, `mcp-fleet:ratelimit:${key}`]);
      await client.close();
    }
  });

  it('records, index and counters share one connection, named in CLIENT LIST', async () => {
    const clientName = `mcp-fleet-test-${randomBytes(4).toString('hex')}`;
    const redis = await open({ clientName });
    await redis.records.set('r', 1);
    await redis.index.commit({ add: [{ set: 's', member: 'm', score: 1 }] });
    await redis.rateLimits.consume([{ key: 'c', limit: 5 }], Date.now() + 30_000);
    await redis.records.get('r');
    const client = await rawClient();
    try {
      const list = String(await client.sendCommand(['CLIENT', 'LIST']));
      expect(list.split('\n').filter((line) => line.includes(` name=${clientName} `))).toHaveLength(1);
    } finally {
      await client.close();
    }
  });

  it('after close every call rejects at once instead of connecting again', async () => {
    const redis = await createRedisStore({ url, keyPrefix: casePrefix() });
    await redis.records.set('k', 'v');
    await redis.close();
    for (const call of [() => redis.records.get('k'), () => redis.records.set('k', 'w'), () => redis.index.count('s'), () => redis.rateLimits.consume([{ key: 'c', limit: 1 }], Date.now() + 1000)]) {
      const { ms, result } = await timed(call());
      rejectionOf(result);
      expect(ms).toBeLessThan(200);
    }
  });

  it('when Redis stops answering, then goes away, calls reject fast; when it is back, they work again', async () => {
    const proxy = track(new RedisProxy(new URL(url)));
    await proxy.up();
    const errors: Error[] = [];
    const redis = await open({ url: proxy.url, onError: (error) => errors.push(error) });
    const fleet = createFleet({ store: redis, rateLimit: false });
    const counter = [{ key: 'c', limit: 100 }];
    await redis.records.set('k', 'v');
    expect(await redis.index.commit({ add: [{ set: 's', member: 'm', score: 1 }] })).toEqual({ ok: true });
    expect((await redis.rateLimits.consume(counter, Date.now() + 60_000)).allowed).toBe(true);
    const calls = () => [redis.records.get('k'), redis.records.set('k', 'w'), redis.index.count('s'), redis.index.commit({ claims: [{ key: 'x', owner: 'o' }] }), redis.rateLimits.consume(counter, Date.now() + 60_000)];

    // Stops answering: the commands are sent and no reply comes. Each call ends at the command timeout (2 s).
    proxy.freeze();
    const frozen = await timed(Promise.allSettled(calls()));
    const frozenResults = (frozen.result as PromiseFulfilledResult<PromiseSettledResult<unknown>[]>).value;
    for (const result of frozenResults) expect(rejectionOf(result).message).toMatch(/did not answer/);
    expect(frozen.ms).toBeGreaterThanOrEqual(1900);
    expect(frozen.ms).toBeLessThan(3000);

    // Gone: the connection drops and reconnecting is refused. Calls fail at once, nothing waits in a queue.
    await proxy.down();
    await vi.waitFor(() => expect(errors.length).toBeGreaterThan(0));
    const gone = await timed(Promise.allSettled(calls()));
    for (const result of (gone.result as PromiseFulfilledResult<PromiseSettledResult<unknown>[]>).value) rejectionOf(result);
    expect(gone.ms).toBeLessThan(500);
    const listed = await timed(fleet.servers.list('acme'));
    expect(listed.ms).toBeLessThan(500);
    expect(listed.result.status === 'fulfilled' && listed.result.value.isErr() && listed.result.value.error.code).toBe('STORAGE_UNAVAILABLE');
    // Offline is not forever-queued: still failing fast a second later, with reconnect attempts in between.
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const stillGone = await timed(redis.index.count('s'));
    rejectionOf(stillGone.result);
    expect(stillGone.ms).toBeLessThan(500);

    // Back: the store reconnects by itself (attempts at most about 2 s apart) and every part works again.
    await proxy.up();
    await vi.waitFor(async () => expect(await redis.records.get('k')).toBe('v'), { timeout: 6000, interval: 100 });
    expect(await redis.index.count('s')).toBe(1);
    expect(await redis.index.commit({ claims: [{ key: 'x', owner: 'o' }] })).toEqual({ ok: true });
    expect((await redis.rateLimits.consume(counter, Date.now() + 60_000)).counts).toEqual([2]);
    expect((await fleet.servers.list('acme')).isOk()).toBe(true);
    for (const error of errors) expect(error).toBeInstanceOf(Error);
    await fleet.close();
  });
});

describe.skipIf(skip)('a fleet on Redis', () => {
  it('rate limits on a Redis that went away: 503 STORAGE_UNAVAILABLE (fail closed), or admitted with failOpen', async () => {
    const proxy = track(new RedisProxy(new URL(url)));
    await proxy.up();
    const redis = await open({ url: proxy.url, onError: () => {} });
    const counters = await open({ url: proxy.url, onError: () => {} });
    // Records stay in memory: only the counter store is taken away.
    const closed = createFleet({ store: { ...createMemoryStore(), rateLimits: redis.rateLimits }, onError: () => {} });
    const open_ = createFleet({ store: { ...createMemoryStore(), rateLimits: counters.rateLimits }, rateLimit: { failOpen: true } });
    const keys = await Promise.all([closed, open_].map(async (f) => (await f.keys.create({ account: 'acme' }))._unsafeUnwrap().secret));
    const get = (fleet: typeof closed, key: string) =>
      fleet.handle(new Request('http://x/v1/servers', { headers: { authorization: `Bearer ${key}` } }));
    expect((await get(closed, keys[0] as string)).headers.get('x-ratelimit-limit')).toBe('60');
    await proxy.down();
    const refused = await get(closed, keys[0] as string);
    expect(refused.status).toBe(503);
    expect(((await refused.json()) as { error: { code: string } }).error.code).toBe('STORAGE_UNAVAILABLE');
    const admitted = await get(open_, keys[1] as string);
    expect(admitted.status).toBe(200);
    expect(admitted.headers.get('x-ratelimit-limit')).toBeNull();
    await Promise.all([closed.close(), open_.close()]);
  });

  const server = (name: string) => ({ name, type: 'http' as const, endpoint: 'https://weather.example/mcp' });

  it('creates, lists and gets servers, and keeps them for a fleet on a new connection', async () => {
    const keyPrefix = casePrefix();
    const first = await createRedisStore({ url, keyPrefix });
    const fleet1 = createFleet({ store: first, rateLimit: false });
    const created = await fleet1.servers.create('acme', server('weather'));
    if (created.isErr()) throw created.error;
    const second = (await fleet1.servers.create('acme', server('search')))._unsafeUnwrap();
    const listed = (await fleet1.servers.list('acme'))._unsafeUnwrap();
    expect(listed.data.map((s) => s.name)).toEqual(['weather', 'search']);
    expect(listed.pagination.total).toBe(2);
    await fleet1.close();
    await first.close();

    const again = track(await createRedisStore({ url, keyPrefix }));
    const fleet2 = createFleet({ store: again, rateLimit: false });
    expect((await fleet2.servers.get('acme', created.value.id))._unsafeUnwrap().name).toBe('weather');
    expect((await fleet2.servers.list('acme', { page: 2, limit: 1 }))._unsafeUnwrap().data.map((s) => s.id)).toEqual([second.id]);
    expect((await fleet2.servers.create('acme', server('weather')))._unsafeUnwrapErr().code).toBe('SERVER_NAME_EXISTS');
    expect((await fleet2.servers.list('other'))._unsafeUnwrap().data).toEqual([]);
    await fleet2.close();
  });

  it('a fleet over this storage writes every key under one prefix: no doubled prefix, index and counters as documented', async () => {
    const keyPrefix = casePrefix();
    const redis = track(await createRedisStore({ url, keyPrefix }));
    // A minute ahead, so that the counters' window cannot end (and the counters expire) while the test looks at them.
    const now = Date.now() + 60_000;
    const window = Math.floor(now / 60_000);
    const fleet = createFleet({ store: redis, webhooks: false, now: () => now });
    const { key: { id: keyId }, secret } = (await fleet.keys.create({ account: 'acme' }))._unsafeUnwrap();
    const response = await fleet.handle(
      new Request('http://x/v1/servers', {
        method: 'POST',
        headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
        body: JSON.stringify(server('weather')),
      }),
    );
    expect(response.status).toBe(201);
    const { id } = ((await response.json()) as { data: { id: string } }).data;
    await fleet.close();

    const hash = createHash('sha256').update(secret).digest('hex');
    // `apikey-used:` is the key's last use (written off the request's path; `close` waits for it).
    const records = [`apikey:${keyId}`, `apikey-hash:${hash}`, `apikey-hash-of:${keyId}`, `apikey-used:${keyId}`, `server:${id}`];
    const index = [
      // The key's secret, claimed in the commit that lists the key: two registrations of one secret make one key.
      `claim:apikey-secret:${hash}`,
      'claim:name:acme:weather',
      'set:apikeys',
      'set:apikeys:acme',
      'set:servers-all',
      'set:servers:acme',
      'set:servers:acme:health:unknown',
      'set:servers:acme:type:http',
      'set:servers:acme:type:http:health:unknown',
    ];
    const counters = [`rl:acme:op:servers.create:${window}`, `rl:acme:tier:${window}`];
    expect(await keysStartingWith(keyPrefix)).toEqual(
      [
        ...records.map((key) => `${keyPrefix}${key}`),
        ...index.map((key) => `${keyPrefix}index:${key}`),
        ...counters.map((key) => `${keyPrefix}ratelimit:${key}`),
      ].sort(),
    );

    // A fleet on a new connection reads what the first one wrote.
    const again = track(await createRedisStore({ url, keyPrefix }));
    const reopened = createFleet({ store: again, rateLimit: false, webhooks: false });
    expect((await reopened.servers.get('acme', id))._unsafeUnwrap().name).toBe('weather');
    await reopened.close();
  });

  it.skipIf(!HAS_REDIS_CLI)('the rename in docs/upgrading.md moves records off the doubled prefix, and a fleet reads them again', async () => {
    // The documented command, with this case's store prefix for P (the fleet's F stays the default).
    const keyPrefix = casePrefix();
    const documented = /```sh\n([\s\S]*?)```/.exec(readFileSync(new URL('../../../docs/upgrading.md', import.meta.url), 'utf8'))?.[1] ?? '';
    expect(documented).toContain("P='mcp-fleet:' F='mcp-fleet:'");
    const command = documented.replace("P='mcp-fleet:'", `P='${keyPrefix}'`);

    const redis = track(await createRedisStore({ url, keyPrefix }));
    const fleet = createFleet({ store: redis, rateLimit: false, webhooks: false });
    const { secret } = (await fleet.keys.create({ account: 'acme' }))._unsafeUnwrap();
    const { id } = (await fleet.servers.create('acme', server('weather')))._unsafeUnwrap();
    await fleet.close();

    // What an earlier version left: the same records under the store's prefix and then the fleet's.
    const records = (await keysStartingWith(keyPrefix)).filter((key) => !key.startsWith(`${keyPrefix}index:`));
    expect(records).toContain(`${keyPrefix}server:${id}`);
    const client = await rawClient();
    try {
      for (const key of records) await client.rename(key, `${keyPrefix}mcp-fleet:${key.slice(keyPrefix.length)}`);
      await client.pExpire(`${keyPrefix}mcp-fleet:server:${id}`, 600_000);
      const before = createFleet({ store: redis, rateLimit: false, webhooks: false });
      expect((await before.servers.get('acme', id))._unsafeUnwrapErr().code).toBe('SERVER_NOT_FOUND');
      await before.close();

      await run('sh', ['-c', command], { env: { ...process.env, REDIS_URL: url }, timeout: 10_000 });
      expect((await keysStartingWith(keyPrefix)).filter((key) => !key.startsWith(`${keyPrefix}index:`)).sort()).toEqual(records.sort());
      // RENAME keeps the expiry.
      expect(await client.pTTL(`${keyPrefix}server:${id}`)).toBeGreaterThan(500_000);
    } finally {
      await client.close();
    }

    const upgraded = createFleet({ store: redis, rateLimit: false, webhooks: false });
    const listed = await upgraded.handle(new Request('http://x/v1/servers', { headers: { authorization: `Bearer ${secret}` } }));
    expect(listed.status).toBe(200);
    expect(((await listed.json()) as { data: { id: string }[] }).data.map((s) => s.id)).toEqual([id]);
    await upgraded.close();
  });

  it('two fleets on two connections racing to create one name: exactly one wins', async () => {
    const keyPrefix = casePrefix();
    const a = track(await createRedisStore({ url, keyPrefix }));
    const b = track(await createRedisStore({ url, keyPrefix }));
    const window = oneWindow();
    const fleets = [a, b].map((r) => createFleet({ store: r, rateLimit: false }));
    for (let round = 0; round < 5; round++) {
      const name = `contested-${round}`;
      const results = await Promise.all(Array.from({ length: 10 }, (_, i) => (fleets[i % 2] as (typeof fleets)[number]).servers.create('acme', server(name))));
      const won = results.filter((r) => r.isOk());
      expect(won, name).toHaveLength(1);
      for (const r of results) if (r.isErr()) expect(r.error.code).toBe('SERVER_NAME_EXISTS');
      for (const fleet of fleets) {
        const names = (await fleet.servers.list('acme', { limit: 100 }))._unsafeUnwrap().data.map((s) => s.name);
        expect(names.filter((n) => n === name)).toHaveLength(1);
      }
    }
    for (const fleet of fleets) await fleet.close();
  });

  it('two fleets sharing the Redis counters admit exactly the limit between them', async () => {
    const keyPrefix = casePrefix();
    const a = track(await createRedisStore({ url, keyPrefix }));
    const b = track(await createRedisStore({ url, keyPrefix }));
    const window = oneWindow();
    const fleets = [a, b].map((r) =>
      // One window for both (`oneWindow`): a minute that ends during the burst would admit three more.
      createFleet({ store: r, now: window, rateLimit: { operations: { 'servers.create': 3 } } }),
    );
    const { secret } = (await (fleets[0] as (typeof fleets)[number]).keys.create({ account: 'acme', tier: 'pro' }))._unsafeUnwrap();
    const responses = await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        (fleets[i % 2] as (typeof fleets)[number]).handle(
          new Request('http://x/v1/servers', {
            method: 'POST',
            headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
            body: JSON.stringify(server(`limited-${i}`)),
          }),
        ),
      ),
    );
    const statuses = responses.map((r) => r.status).sort();
    expect(statuses).toEqual([201, 201, 201, 429, 429, 429, 429, 429, 429, 429]);
    for (const fleet of fleets) await fleet.close();
  });
});
