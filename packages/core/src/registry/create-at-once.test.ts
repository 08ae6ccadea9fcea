import { randomBytes } from 'node:crypto';
import { type Result, ResultAsync } from 'neverthrow';
import type { FleetError } from '../errors/fleet-error.js';
import type { Ran } from '../util/result.js';
import Keyv from 'keyv';
import { describe, expect, it } from 'vitest';
import type { Principal } from '../auth/scopes.js';
import { EventBus } from '../events/bus.js';
import { ChangeWriter } from '../events/change-writer.js';
import { EventOutbox, INTENT_SET } from '../events/outbox.js';
import { createMemoryStore } from '../store.js';
import { createFleet } from '../fleet.js';
import { IndexCalls } from '../storage/index-calls.js';
import { MemoryIndexStore } from '../storage/memory-index-store.js';
import { createMemoryStorage, RecordStore } from '../storage/records.js';
import { SecretBox } from '../util/secret-box.js';
import { DeliveryLog, DUE_SET } from '../webhooks/deliveries.js';
import { webhookRecipients } from '../webhooks/recipients.js';
import { WebhookValidator } from '../webhooks/schema.js';
import { WebhookStore } from '../webhooks/subscriptions.js';
import { ServerRegistry } from './registry.js';
import { ServerValidator } from './schema.js';
import { type ServerRecord, toDetail } from './views.js';

/**
 * docs/performance.md "POST /v1/servers: the create path": over the memory stores a create is written in one
 * synchronous step: `ServerRegistry.create` answers a `Result`, every store having answered at once. What it must keep: the name claimed atomically, the record an
 * independent copy, every listing committed, the quota, the event staged whenever a webhook subscribes.
 */

const T0 = Date.parse('2026-11-22T10:00:00.000Z');
const GRACE = 60_000;
const http = (name: string, extra: Record<string, unknown> = {}) => ({ name, type: 'http', endpoint: 'https://mcp.example.com/mcp', ...extra });

function parts(options: { keyv?: Keyv; maxPerAccount?: number; box?: SecretBox } = {}) {
  let clock = T0;
  const now = () => clock;
  const keyv = options.keyv ?? createMemoryStorage();
  const records = new RecordStore(keyv, 'mcp-fleet:');
  const index = new IndexCalls(new MemoryIndexStore({ now }));
  const secrets = options.box ?? new SecretBox();
  const webhooks = new WebhookStore({ records, index, validator: new WebhookValidator({ allowPrivateNetworks: true }), now, secrets });
  const deliveries = new DeliveryLog(records, index, 86_400_000);
  const outbox = new EventOutbox({ records, index, recipients: webhookRecipients(webhooks, deliveries), now, graceMs: GRACE, retentionMs: 86_400_000, wake: () => {} });
  const told: unknown[] = [];
  const bus = new EventBus((error) => {
    throw error;
  });
  bus.on('server.created', (event) => {
    told.push(event);
  });
  const registry = new ServerRegistry({
    records,
    index,
    validator: new ServerValidator({ stdioCommands: ['node'] }),
    now,
    claimGraceMs: GRACE,
    changes: new ChangeWriter(bus, outbox),
    secrets,
    ...(options.maxPerAccount !== undefined && { maxPerAccount: options.maxPerAccount }),
  });
  /** Server records stored, listed or not. */
  const stored = () => [...(keyv.store as Map<string, unknown>).keys()].filter((key) => key.startsWith('mcp-fleet:server:')).length;
  return { registry, records, index, webhooks, told, stored, advance: (ms: number) => (clock += ms) };
}

/** What ran at once, or `undefined` when it answered through a promise. */
const atOnce = <T>(ran: Ran<T>): Result<T, FleetError> | undefined => (ran instanceof ResultAsync ? undefined : ran);

function createdAtOnce(registry: ServerRegistry, account: string, input: unknown): ServerRecord {
  const result = atOnce(registry.create(account, input));
  if (result === undefined) throw new Error('create did not answer at once');
  return result._unsafeUnwrap();
}

describe('ServerRegistry.create at once', () => {
  it('answers at once over the memory stores, and through a promise over any other Keyv', async () => {
    const { registry, told } = parts();
    const server = createdAtOnce(registry, 'acme', http('weather'));
    expect(server).toMatchObject({ account: 'acme', status: 'active', health: 'unknown', config: { name: 'weather', type: 'http', timeout: 30_000 } });
    expect((await registry.get('acme', server.id))._unsafeUnwrap()).toEqual(server);
    expect(told).toMatchObject([{ account: 'acme', server: { id: server.id, name: 'weather' } }]);

    const keyv = new Keyv({ throwOnErrors: true });
    const other = parts({ keyv });
    const later = other.registry.create('acme', http('weather'));
    expect(atOnce(later)).toBeUndefined();
    expect(other.told).toEqual([]);
    (await later)._unsafeUnwrap();
    expect(other.told).toHaveLength(1);
    expect((await other.registry.list('acme', { page: 1, limit: 10 }))._unsafeUnwrap().pagination.total).toBe(1);
  });

  it('refuses what create refuses, with the same errors, and writes nothing', () => {
    const { registry, told, stored } = parts({ maxPerAccount: 2 });
    expect(atOnce(registry.create('acme', { name: 'x', type: 'http' }))?._unsafeUnwrapErr().code).toBe('INVALID_REQUEST');
    createdAtOnce(registry, 'acme', http('a'));
    expect(atOnce(registry.create('acme', http('a')))?._unsafeUnwrapErr().code).toBe('SERVER_NAME_EXISTS');
    createdAtOnce(registry, 'acme', http('b'));
    expect(atOnce(registry.create('acme', http('c')))?._unsafeUnwrapErr().code).toBe('QUOTA_EXCEEDED');
    expect(told).toHaveLength(2);
    expect(stored()).toBe(2);
  });

  it('keeps the stored record apart from the input and from the detail made of it', async () => {
    // The record is handed to the store without a copy: neither the caller's input nor a detail may share any of it.
    const { registry } = parts();
    const websocket = { name: 'ws', type: 'websocket', endpoint: 'wss://mcp.example.com/ws', retry: { enabled: true }, heartbeat: { enabled: true, interval: 30_000 } };
    const stdio = { name: 'local', type: 'stdio', command: 'node', args: ['server.js', '--port', '1'], env: { TOKEN: 'x' } };
    for (const input of [websocket, stdio]) {
      const record = createdAtOnce(registry, 'acme', input);
      const kept = structuredClone(record);
      const detail = toDetail(record) as unknown as { retry: { enabled: boolean } | null; heartbeat: { interval: number } | null; args: string[] | null };
      if (detail.retry !== null) detail.retry.enabled = false;
      if (detail.heartbeat !== null) detail.heartbeat.interval = 1;
      detail.args?.push('--mutated');
      websocket.retry.enabled = false;
      websocket.heartbeat.interval = 2;
      stdio.args.push('--mutated');
      stdio.env.TOKEN = 'y';
      expect((await registry.get('acme', record.id))._unsafeUnwrap()).toEqual(kept);
    }
  });

  it('lists the server in every listing it belongs to: all, by type, by health, by both, and everyServer', async () => {
    const { registry } = parts();
    const server = createdAtOnce(registry, 'acme', http('listed'));
    for (const filter of [{}, { type: 'http' as const }, { health: 'unknown' as const }, { type: 'http' as const, health: 'unknown' as const }]) {
      const page = (await registry.list('acme', { page: 1, limit: 10, ...filter }))._unsafeUnwrap();
      expect(page.data.map((r) => r.id)).toEqual([server.id]);
    }
    expect((await registry.list('acme', { page: 1, limit: 10, type: 'stdio' }))._unsafeUnwrap().data).toEqual([]);
    expect((await registry.everyServer(0, 10))._unsafeUnwrap().map((r) => r.id)).toEqual([server.id]);
  });

  it('claims a name once among creates at once and creates waited for, started together', async () => {
    const { registry } = parts();
    const waited = Array.from({ length: 5 }, () => registry.create('acme', http('contested')));
    const immediate = Array.from({ length: 5 }, () => atOnce(registry.create('acme', http('contested'))));
    const results = [...immediate, ...(await Promise.all(waited))];
    expect(results.filter((r) => r?.isOk())).toHaveLength(1);
    expect(results.filter((r) => r?.isErr() && r.error.code === 'SERVER_NAME_EXISTS')).toHaveLength(9);
    expect((await registry.list('acme', { page: 1, limit: 50 }))._unsafeUnwrap().pagination.total).toBe(1);
  });

  it('takes over a stale claim whose server is gone, and only after the grace', async () => {
    const { registry, index, advance } = parts();
    (await index.commit({ claims: [{ key: 'name:acme:weather', owner: 'srv_000000000000000000000000' }] }))._unsafeUnwrap();
    expect(atOnce(registry.create('acme', http('weather')))?._unsafeUnwrapErr().code).toBe('SERVER_NAME_EXISTS');
    advance(GRACE + 1);
    const server = createdAtOnce(registry, 'acme', http('weather'));
    expect((await index.claimOf('name:acme:weather'))._unsafeUnwrap()?.owner).toBe(server.id);
    advance(10 * GRACE);
    expect(atOnce(registry.create('acme', http('weather')))?._unsafeUnwrapErr().code).toBe('SERVER_NAME_EXISTS');
  });

  it('stages and publishes the event of a create a webhook subscribes to, at once too', async () => {
    const { registry, webhooks, index } = parts();
    (await webhooks.create('acme', { url: 'https://h.example.com/', events: ['server.created'] }))._unsafeUnwrap();
    (await webhooks.create('other', { url: 'https://h.example.com/', events: ['server.deleted'] }))._unsafeUnwrap();
    // Another account's webhook, or one to another event, stages nothing.
    createdAtOnce(registry, 'other', http('quiet'));
    expect((await index.count(DUE_SET))._unsafeUnwrap()).toBe(0);
    createdAtOnce(registry, 'acme', http('hooked'));
    expect((await registry.list('acme', { page: 1, limit: 10 }))._unsafeUnwrap().pagination.total).toBe(1);
    expect((await index.count(DUE_SET))._unsafeUnwrap()).toBe(1);
    expect((await index.count(INTENT_SET))._unsafeUnwrap()).toBe(0);
  });

  it('seals secrets at once once the key check has passed; while it runs, leaves the create to wait', async () => {
    const box = new SecretBox({ current: randomBytes(32) });
    let pass: (error: undefined) => void = () => {};
    void box.startCheck(() => new Promise((resolve) => (pass = resolve)));
    const { registry, records } = parts({ box });
    const secret = http('sealed', { authentication: { type: 'bearer', token: 'TOKEN-XYZ' } });
    const waiting = registry.create('acme', secret);
    expect(atOnce(waiting)).toBeUndefined();
    expect(createdAtOnce(registry, 'acme', http('no-secret')).config.name).toBe('no-secret');
    pass(undefined);
    await new Promise((resolve) => setImmediate(resolve));
    expect((await waiting)._unsafeUnwrap().config.name).toBe('sealed');
    const server = createdAtOnce(registry, 'acme', { ...secret, name: 'sealed-at-once' });
    const stored = (await records.get<ServerRecord>(`server:${server.id}`))._unsafeUnwrap();
    expect(JSON.stringify(stored)).not.toContain('TOKEN-XYZ');
    expect((await registry.getRevealed('acme', server.id))._unsafeUnwrap().config).toMatchObject({ authentication: { token: 'TOKEN-XYZ' } });
  });
});

describe('the record key and the quota set of a create', () => {
  it('are the ones every other path reads, whether the create ran at once or through a promise', async () => {
    for (const keyv of [createMemoryStorage(), new Keyv({ throwOnErrors: true })]) {
      const { registry, records, index } = parts({ keyv, maxPerAccount: 1 });
      const server = (await registry.create('acme', http('one')))._unsafeUnwrap();
      // The key `get` reads and the recovery check names.
      expect((await records.get<ServerRecord>(`server:${server.id}`))._unsafeUnwrap()?.id).toBe(server.id);
      expect((await registry.get('acme', server.id))._unsafeUnwrap().id).toBe(server.id);
      // The set the quota counts is the account's listing, which `list` reads.
      expect((await index.count('servers:acme'))._unsafeUnwrap()).toBe(1);
      expect((await registry.list('acme', { page: 1, limit: 10 }))._unsafeUnwrap().pagination.total).toBe(1);
      expect((await registry.create('acme', http('two')))._unsafeUnwrapErr().code).toBe('QUOTA_EXCEEDED');
    }
  });
});

describe('POST /v1/servers over the memory stores', () => {
  const principal: Principal = { account: 'acme', tier: 'pro', scopes: null };
  const post = (body: unknown) =>
    new Request('http://fleet.test/v1/servers', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });

  it('of concurrent creates of one name through two fleets on one storage, exactly one is 201', async () => {
    const storage = createMemoryStorage();
    const index = new MemoryIndexStore();
    const options = { store: { ...createMemoryStore({ records: storage }), index }, authenticate: () => principal, rateLimit: false as const };
    const [a, b] = [createFleet(options), createFleet(options)];
    try {
      const answers = await Promise.all([
        ...Array.from({ length: 6 }, (_, i) => (i % 2 === 0 ? a : b).handle(post(http('same')))),
        // The embedder's API waits on the stores: it races with the requests answered at once.
        a.servers.create('acme', { name: 'same', type: 'http', endpoint: 'https://mcp.example.com/mcp' }),
      ]);
      const statuses = await Promise.all(answers.slice(0, 6).map(async (r) => (r as Response).status));
      const embedded = answers[6] as Awaited<ReturnType<typeof a.servers.create>>;
      expect(statuses.filter((s) => s === 201).length + (embedded.isOk() ? 1 : 0)).toBe(1);
      expect(statuses.filter((s) => s === 409)).toHaveLength(embedded.isOk() ? 6 : 5);
      expect((await b.servers.list('acme'))._unsafeUnwrap().pagination.total).toBe(1);
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  });

  it('answers the eight fields of the created server, as stored', async () => {
    const fleet = createFleet({ authenticate: () => principal, rateLimit: false });
    try {
      const response = await fleet.handle(post(http('eight', { authentication: { type: 'bearer', token: 'TOKEN-XYZ' } })));
      expect(response.status).toBe(201);
      const text = await response.text();
      expect(text).not.toContain('TOKEN-XYZ');
      const { data } = JSON.parse(text) as { data: Record<string, unknown> };
      expect(Object.keys(data)).toEqual(['id', 'name', 'type', 'endpoint', 'status', 'health', 'created_at', 'updated_at']);
      const detail = (await fleet.servers.get('acme', data.id as string))._unsafeUnwrap();
      expect(data).toEqual({ id: detail.id, name: 'eight', type: 'http', endpoint: detail.endpoint, status: 'active', health: 'unknown', created_at: detail.created_at, updated_at: detail.updated_at });
    } finally {
      await fleet.close();
    }
  });
});

describe('ServerRegistry.getRevealed at once', () => {
  it('answers at once over the memory stores what it answers through a promise, and through a promise over any other Keyv', async () => {
    const box = new SecretBox({ current: randomBytes(32) });
    const { registry } = parts({ box });
    const server = createdAtOnce(registry, 'acme', http('sealed', { authentication: { type: 'bearer', token: 'TOKEN-XYZ' } }));
    const now = atOnce(registry.getRevealed('acme', server.id));
    expect(now?._unsafeUnwrap()).toEqual((await registry.getRevealed('acme', server.id))._unsafeUnwrap());
    expect(now?._unsafeUnwrap().config).toMatchObject({ authentication: { token: 'TOKEN-XYZ' } });
    for (const [account, id] of [['other', server.id], ['acme', 'srv_000000000000000000000000'], ['acme', 'not-an-id']]) {
      const waited = (await registry.getRevealed(account as string, id as string))._unsafeUnwrapErr();
      expect(atOnce(registry.getRevealed(account as string, id as string))?._unsafeUnwrapErr()).toMatchObject({ code: waited.code, message: waited.message });
    }
    // What it answers is a copy: changing it changes nothing stored.
    (now?._unsafeUnwrap().config as { name: string }).name = 'changed';
    expect(atOnce(registry.getRevealed('acme', server.id))?._unsafeUnwrap().config.name).toBe('sealed');

    const other = parts({ keyv: new Keyv({ throwOnErrors: true }) });
    const stored = (await other.registry.create('acme', http('elsewhere')))._unsafeUnwrap();
    const later = other.registry.getRevealed('acme', stored.id);
    expect(atOnce(later)).toBeUndefined();
    expect((await later)._unsafeUnwrap().id).toBe(stored.id);
  });
});
