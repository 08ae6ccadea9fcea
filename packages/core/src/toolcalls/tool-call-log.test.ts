import Keyv from 'keyv';
import { ResultAsync } from 'neverthrow';
import { describe, expect, it } from 'vitest';
import { EventBus } from '../events/bus.js';
import { ChangeWriter } from '../events/change-writer.js';
import { IndexCalls } from '../storage/index-calls.js';
import { MemoryIndexStore } from '../storage/memory-index-store.js';
import { createMemoryStorage, RecordStore } from '../storage/records.js';
import { newId } from '../util/ids.js';
import { ToolCallExpiry } from './tool-call-expiry.js';
import { type ToolCallRecord, ToolCallLog } from './tool-call-log.js';

const T0 = Date.parse('2026-11-22T10:00:00.000Z');
const HOUR = 3_600_000;

function setup() {
  let clock = T0;
  const store = new MemoryIndexStore();
  const index = new IndexCalls(store);
  const log = new ToolCallLog(new RecordStore(new Keyv({ throwOnErrors: true }), 'test:'), index, new ChangeWriter(new EventBus(() => {}), undefined), {
    retentionMs: 24 * HOUR,
    now: () => clock,
  });
  const append = async (account: string, at: number, status: ToolCallRecord['status'] = 'success') => {
    const call: ToolCallRecord = {
      id: newId('toolCall'),
      server_id: 'srv_a',
      server_name: 'a',
      tool: 'echo',
      status,
      duration_ms: 1,
      attempts: 1,
      error: null,
      created_at: new Date(at).toISOString(),
    };
    (await log.append(account, call))._unsafeUnwrap();
    return call;
  };
  return { log, store, append, advance: (ms: number) => (clock += ms) };
}

const query = { page: 1, limit: 100 };

describe('ToolCallLog listings', () => {
  it('lists a call under every combination of its filters, names that need encoding included, and a sweep unlists it from all', async () => {
    const { log, advance } = setup();
    const call: ToolCallRecord = {
      id: newId('toolCall'),
      server_id: 'srv_a',
      server_name: 'a',
      tool: 'odd|tool=name/ü %',
      status: 'error',
      duration_ms: 1,
      attempts: 1,
      error: { code: 'TOOL_ERROR', message: 'no' },
      created_at: new Date(T0).toISOString(),
    };
    (await log.append('acme', call))._unsafeUnwrap();
    const combos = [0, 1, 2, 3, 4, 5, 6, 7].map((mask) => ({
      ...(mask & 1 ? { server_id: call.server_id } : {}),
      ...(mask & 2 ? { status: call.status } : {}),
      ...(mask & 4 ? { tool: call.tool } : {}),
    }));
    for (const filters of combos) {
      const page = (await log.list('acme', { ...query, ...filters }))._unsafeUnwrap();
      expect(page.data.map((c) => c.id), JSON.stringify(filters)).toEqual([call.id]);
    }
    expect((await log.list('acme', { ...query, tool: 'odd|tool=name/ü' }))._unsafeUnwrap().pagination.total).toBe(0);
    advance(25 * HOUR);
    expect((await log.sweep(10))._unsafeUnwrap()).toBe(1);
    for (const filters of combos) expect((await log.list('acme', { ...query, ...filters }))._unsafeUnwrap().pagination.total).toBe(0);
  });
});

describe('ToolCallLog expiry', () => {
  it('a sweep removes at most its batch of the oldest due calls, of every account, with all their listing entries', async () => {
    const { log, store, append, advance } = setup();
    for (let i = 0; i < 5; i++) await append(i % 2 === 0 ? 'acme' : 'globex', T0 + i, i === 4 ? 'error' : 'success');
    const kept = await append('acme', T0 + 20 * HOUR);
    advance(25 * HOUR);
    expect((await log.sweep(2))._unsafeUnwrap()).toBe(2);
    expect((await log.sweep(2))._unsafeUnwrap()).toBe(2);
    expect((await log.sweep(2))._unsafeUnwrap()).toBe(1);
    expect((await log.sweep(2))._unsafeUnwrap()).toBe(0);
    const acme = (await log.list('acme', query))._unsafeUnwrap();
    expect(acme.data.map((c) => c.id)).toEqual([kept.id]);
    expect(acme.pagination.total).toBe(1);
    expect((await log.list('globex', query))._unsafeUnwrap().pagination.total).toBe(0);
    expect((await log.list('acme', { ...query, status: 'error' }))._unsafeUnwrap().pagination.total).toBe(0);
    expect((await log.list('acme', { ...query, server_id: 'srv_a', status: 'success', tool: 'echo' }))._unsafeUnwrap().pagination.total).toBe(1);
    // Of acme's 8 listings only the kept call's entries remain, and one expiry entry.
    expect(await store.count('toolcalls-expiry')).toBe(1);
  });

  it('ToolCallExpiry runs batches until one is not full, at most maxBatches a sweep', async () => {
    const { log, append, advance } = setup();
    for (let i = 0; i < 7; i++) await append('acme', T0 + i);
    advance(25 * HOUR);
    const expiry = new ToolCallExpiry(log, { intervalMs: 60_000, batch: 2, maxBatches: 2, onError: (e) => expect.fail(String(e)) });
    await expiry.sweep();
    expect((await log.list('acme', query))._unsafeUnwrap().pagination.total).toBe(3);
    await expiry.sweep();
    await expiry.sweep();
    expect((await log.list('acme', query))._unsafeUnwrap().pagination.total).toBe(0);
    await expiry.stop();
  });
});

describe('ToolCallLog.append at once', () => {
  const made = (status: ToolCallRecord['status']): ToolCallRecord => ({
    id: newId('toolCall'),
    server_id: 'srv_a',
    server_name: 'a',
    tool: 'odd|tool=name/ü %',
    status,
    duration_ms: 1,
    attempts: 1,
    error: status === 'success' ? null : { code: 'TOOL_ERROR', message: 'no' },
    created_at: new Date(T0).toISOString(),
  });
  let clock = T0;
  const logOver = (keyv: Keyv, store = new MemoryIndexStore()) =>
    new ToolCallLog(new RecordStore(keyv, 'test:'), new IndexCalls(store), new ChangeWriter(new EventBus(() => {}), undefined), { retentionMs: HOUR, now: () => clock });
  const filters = (call: ToolCallRecord) =>
    [0, 1, 2, 3, 4, 5, 6, 7].map((mask) => ({
      ...query,
      ...(mask & 1 ? { server_id: call.server_id } : {}),
      ...(mask & 2 ? { status: call.status } : {}),
      ...(mask & 4 ? { tool: call.tool } : {}),
    }));

  it('writes a successful call at once over the fleet memory: the same record and listings as over another store, and its sweep', async () => {
    const now = logOver(createMemoryStorage());
    const async = logOver(new Keyv({ throwOnErrors: true }));
    const call = made('success');
    const atOnce = now.append('acme', call, { arguments: { a: 1 } });
    expect(atOnce).not.toBeInstanceOf(ResultAsync);
    expect((await atOnce)._unsafeUnwrap()).toEqual(call);
    (await async.append('acme', call, { arguments: { a: 1 } }))._unsafeUnwrap();
    for (const filter of filters(call)) {
      expect((await now.list('acme', filter))._unsafeUnwrap()).toEqual((await async.list('acme', filter))._unsafeUnwrap());
      expect((await now.list('acme', filter))._unsafeUnwrap().data).toEqual([call]);
    }
    expect((await now.get('acme', call.id))._unsafeUnwrap()).toEqual({ ...call, arguments: { a: 1 } });
    expect((await now.list('other', query))._unsafeUnwrap().data).toEqual([]);
    // Listed in the expiry set too: the sweep after the retention removes it from every listing.
    expect((await now.sweep(10))._unsafeUnwrap()).toBe(0);
    clock = T0 + 2 * HOUR;
    expect((await now.sweep(10))._unsafeUnwrap()).toBe(1);
    for (const filter of filters(call)) expect((await now.list('acme', filter))._unsafeUnwrap()).toMatchObject({ data: [], pagination: { total: 0 } });
    clock = T0;
  });

  it('lists each call under its own account, server, status and tool when they alternate from one call to the next', async () => {
    const log = logOver(createMemoryStorage());
    const calls: [string, ToolCallRecord][] = [];
    for (let i = 0; i < 12; i++) {
      const call = { ...made(i % 3 === 0 ? 'error' : 'success'), tool: i % 2 === 0 ? 'echo' : 'odd|tool=name/ü %', server_id: i % 4 < 2 ? 'srv_a' : 'srv_b' };
      const account = i % 5 < 2 ? 'acme' : 'glo"bex';
      calls.push([account, call]);
      (await log.append(account, call))._unsafeUnwrap();
    }
    for (const account of ['acme', 'glo"bex']) {
      const own = calls.filter(([of]) => of === account).map(([, call]) => call);
      for (const call of own) {
        for (const filter of filters(call)) {
          const expected = own.filter(
            (other) => (filter.server_id ?? other.server_id) === other.server_id && (filter.status ?? other.status) === other.status && (filter.tool ?? other.tool) === other.tool,
          );
          const listed = (await log.list(account, { ...filter, limit: 100 }))._unsafeUnwrap().data.map((c) => c.id);
          expect(listed.sort(), JSON.stringify({ account, filter })).toEqual(expected.map((c) => c.id).sort());
        }
      }
    }
  });

  it('lists a call in the expiry set as the JSON of [created ms, account, id, server, status, tool], names that need escaping included', async () => {
    const store = new MemoryIndexStore();
    const log = logOver(createMemoryStorage(), store);
    const odd = ['a"b\\c', 'line\u2028sep \u{1F600}', '\u0000ctl'];
    const written: string[] = [];
    for (let i = 0; i < 6; i++) {
      const account = odd[i % 3] as string;
      const call = { ...made(i % 2 === 0 ? 'success' : 'timeout'), tool: odd[(i + 1) % 3] as string, server_id: `srv_${odd[(i + 2) % 3]}`, created_at: new Date(T0 + i).toISOString() };
      (await log.append(account, call))._unsafeUnwrap();
      written.push(JSON.stringify([T0 + i, account, call.id, call.server_id, call.status, call.tool]));
    }
    expect(store.range('toolcalls-expiry', { offset: 0, limit: 10 })).toEqual(written);
    clock = T0 + 2 * HOUR;
    expect((await log.sweep(10))._unsafeUnwrap()).toBe(6);
    expect(store.count('toolcalls-expiry')).toBe(0);
    for (const account of odd) expect((await log.list(account, query))._unsafeUnwrap().pagination.total).toBe(0);
    clock = T0;
  });

  it('keeps a successful call over the fleet memory until a day after its retention, and no longer', async () => {
    let now = T0;
    const log = new ToolCallLog(new RecordStore(createMemoryStorage(), 'test:', () => now), new IndexCalls(new MemoryIndexStore()), new ChangeWriter(new EventBus(() => {}), undefined), {
      retentionMs: HOUR,
      now: () => now,
    });
    const call = made('success');
    (await log.append('acme', call))._unsafeUnwrap();
    now = T0 + HOUR + 86_400_000;
    expect((await log.get('acme', call.id))._unsafeUnwrap()).toEqual(call);
    now += 1;
    expect((await log.get('acme', call.id))._unsafeUnwrapErr().code).toBe('NOT_FOUND');
  });

  it('every append goes through the change writer, a success as a failure (one road for the event mechanism)', async () => {
    const memory = createMemoryStorage();
    const bus = new EventBus(() => {});
    const told: string[] = [];
    bus.on('tool_call.failed', ({ tool_call }) => void told.push(tool_call.status));
    const changes = new ChangeWriter(bus, undefined);
    const written: (string | undefined)[] = [];
    const write = changes.write.bind(changes);
    changes.write = ((event, writes) => {
      written.push(event?.type);
      return write(event, writes);
    }) as ChangeWriter['write'];
    const log = new ToolCallLog(new RecordStore(memory, 'test:'), new IndexCalls(new MemoryIndexStore()), changes, { retentionMs: HOUR, now: () => clock });
    for (const status of ['success', 'error', 'timeout'] as const) (await log.append('acme', made(status)))._unsafeUnwrap();
    expect(written).toEqual([undefined, 'tool_call.failed', 'tool_call.failed']);
    expect(told).toEqual(['error', 'timeout']);
    expect((await log.list('acme', query))._unsafeUnwrap().pagination.total).toBe(3);
  });
});
