import Keyv from 'keyv';
import { ResultAsync } from 'neverthrow';
import { describe, expect, it } from 'vitest';
import { createMemoryStorage, RecordStore } from '../storage/records.js';
import { type Attempt, formatPercent, HealthLog } from './health-log.js';

const T0 = Date.UTC(2026, 10, 22, 12, 0, 0);

function setup() {
  let clock = T0;
  const keyv = new Keyv({ throwOnErrors: true });
  const log = new HealthLog(new RecordStore(keyv, 't:'), () => clock);
  return {
    log,
    keyv,
    advance: (ms: number) => {
      clock += ms;
    },
    at: () => clock,
  };
}

const probe = (at: number, ok: boolean, responseTimeMs = 12): Attempt => ({
  kind: 'probe',
  ok,
  at,
  responseTimeMs,
  error: ok ? null : { code: 'UPSTREAM_UNREACHABLE', message: 'The server refused the connection.' },
});
const call = (at: number, ok: boolean): Attempt => ({ kind: 'call', ok, at, responseTimeMs: 5, error: null });

describe('formatPercent', () => {
  it.each([
    [1, '100%'],
    [0, '0%'],
    [0.995, '99.5%'],
    [2 / 3, '66.67%'],
    [1 / 3, '33.33%'],
    [0.5, '50%'],
    [0.0001, '0.01%'],
    [0.00001, '0%'],
  ])('%s → %s', (share, text) => {
    expect(formatPercent(share)).toBe(text);
  });
});

describe('HealthLog', () => {
  it('has no record before the first probe', async () => {
    const { log } = setup();
    expect((await log.read('srv_a'))._unsafeUnwrap()).toBeUndefined();
  });

  it('reports the latest probe and the shares of the last 24 hours', async () => {
    const { log, at, advance } = setup();
    await log.record('srv_a', probe(at(), true, 10));
    advance(30_000);
    await log.record('srv_a', probe(at(), true, 11));
    advance(30_000);
    await log.record('srv_a', probe(at(), false, 2000));
    const record = (await log.read('srv_a'))._unsafeUnwrap();
    expect(record).toEqual({
      status: 'unhealthy',
      state_reason: 'probe_failed',
      pending: null,
      response_time: 2000,
      last_check: new Date(at()).toISOString(),
      uptime: '66.67%',
      error_rate: '33.33%',
      error: { code: 'UPSTREAM_UNREACHABLE', message: 'The server refused the connection.' },
    });
  });

  it('counts tool calls in error_rate but not in uptime, and keeps the latest probe as the status', async () => {
    const { log, at } = setup();
    await log.record('srv_a', probe(at(), true));
    await log.record('srv_a', call(at(), false));
    await log.record('srv_a', call(at(), false));
    await log.record('srv_a', call(at(), true));
    const record = (await log.read('srv_a'))._unsafeUnwrap();
    expect(record).toMatchObject({ status: 'healthy', uptime: '100%', error_rate: '50%' });
  });

  it('forgets what is older than 24 hours', async () => {
    const { log, at, advance } = setup();
    await log.record('srv_a', probe(at(), false));
    advance(24 * 60 * 60_000 + 10 * 60_000);
    await log.record('srv_a', probe(at(), true));
    expect((await log.read('srv_a'))._unsafeUnwrap()).toMatchObject({ uptime: '100%', error_rate: '0%' });
  });

  it('keeps servers apart, and forget() removes one server history', async () => {
    const { log, at } = setup();
    await log.record('srv_a', probe(at(), false));
    await log.record('srv_b', probe(at(), true));
    await log.forget('srv_a');
    expect((await log.read('srv_a'))._unsafeUnwrap()).toBeUndefined();
    expect((await log.read('srv_b'))._unsafeUnwrap()).toMatchObject({ uptime: '100%' });
  });

  it('loses no count under concurrent records in one process', async () => {
    const { log, at } = setup();
    await Promise.all(Array.from({ length: 50 }, (_, i) => log.record('srv_a', probe(at(), i % 5 !== 0))));
    expect((await log.read('srv_a'))._unsafeUnwrap()).toMatchObject({ uptime: '80%', error_rate: '20%' });
  });

  it('lets buckets expire in storage after a day', async () => {
    const { log, at, keyv } = setup();
    await log.record('srv_a', probe(at(), true));
    const stored = [...(keyv.store as Map<string, string>).entries()].filter(([key]) => key.includes(':b:'));
    expect(stored).toHaveLength(1);
    const expires = JSON.parse(stored[0]?.[1] as string).expires as number;
    expect(expires - Date.now()).toBeGreaterThan(24 * 60 * 60_000);
    expect(expires - Date.now()).toBeLessThan(25 * 60 * 60_000);
  });
});

describe('HealthLog.history', () => {
  it('answers the last 24 hours in five-minute buckets, oldest first, with the figures they add up to', async () => {
    const { log, advance, at } = setup();
    await log.record('srv_a', probe(at(), true));
    await log.record('srv_a', call(at() + 1000, false));
    advance(2 * 60 * 60_000);
    await log.record('srv_a', probe(at(), false));
    await log.record('srv_b', probe(at(), true));
    const history = (await log.history('srv_a'))._unsafeUnwrap();
    const ms = (p: number) => ({ p50: p, p95: p, count: 1 });
    expect(history).toEqual({
      // Probes recorded without a state (as before states had reasons): the state follows the latest probe.
      status: 'unhealthy',
      state_reason: 'probe_failed',
      uptime: '50%',
      error_rate: '66.67%',
      latency: { last_hour: { probe: ms(13), call: null }, last_day: { probe: { ...ms(13), count: 2 }, call: ms(5) } },
      buckets: [
        { start: new Date(T0).toISOString(), probes: 1, healthy: 1, requests: 2, failures: 1, status: null, latency: { probe: ms(13), call: ms(5) } },
        { start: new Date(T0 + 2 * 60 * 60_000).toISOString(), probes: 1, healthy: 0, requests: 1, failures: 1, status: null, latency: { probe: ms(13), call: null } },
      ],
    });
    // The same figures as the health record.
    expect((await log.read('srv_a'))._unsafeUnwrap()).toMatchObject({ uptime: '50%', error_rate: '66.67%' });
    advance(23 * 60 * 60_000);
    expect((await log.history('srv_a'))._unsafeUnwrap().buckets.map((b) => b.probes)).toEqual([1]);
    expect((await log.history('srv_none'))._unsafeUnwrap()).toEqual({
      status: 'unknown',
      state_reason: 'not_probed',
      uptime: '0%',
      error_rate: '0%',
      latency: { last_hour: { probe: null, call: null }, last_day: { probe: null, call: null } },
      buckets: [],
    });
  });
});

describe('HealthLog.record at once', () => {
  it('never changes the bucket it counts on: one read before (shared, as a history reads it) still holds what it held', async () => {
    const at = T0;
    const records = new RecordStore(createMemoryStorage(), 't:');
    const log = new HealthLog(records, () => at);
    const key = `health:srv_a:b:${Math.floor(at / 300_000)}`;
    (await log.record('srv_a', probe(at, true, 12)))._unsafeUnwrap();
    (await log.record('srv_a', call(at, false)))._unsafeUnwrap();
    const held = (await records.get<Record<string, unknown>>(key, true))._unsafeUnwrap();
    const before = structuredClone(held);
    expect(before).toEqual({ probes: 1, probesOk: 1, requests: 2, failures: 1, probeMs: { '27': 1 }, callMs: { '17': 1 } });
    (await log.record('srv_a', call(at, true)))._unsafeUnwrap();
    (await log.record('srv_a', probe(at, false, 12)))._unsafeUnwrap();
    expect(held).toEqual(before);
    expect((await records.get(key, true))._unsafeUnwrap()).toEqual({ probes: 2, probesOk: 1, requests: 4, failures: 2, probeMs: { '27': 2 }, callMs: { '17': 2 } });
    // Another server and another five minutes: their own buckets.
    (await log.record('srv_b', call(at, true)))._unsafeUnwrap();
    (await log.record('srv_a', call(at + 300_000, true)))._unsafeUnwrap();
    expect((await records.get(key, true))._unsafeUnwrap()).toMatchObject({ requests: 4 });
    expect((await records.get(`health:srv_b:b:${Math.floor(at / 300_000)}`, true))._unsafeUnwrap()).toEqual({ probes: 0, probesOk: 0, requests: 1, failures: 0, callMs: { '17': 1 } });
    expect((await records.get(`health:srv_a:b:${Math.floor(at / 300_000) + 1}`, true))._unsafeUnwrap()).toMatchObject({ requests: 1 });
  });

  it('counts at once over the fleet memory; waits its turn while another change of the server runs; goes through a promise over another store', async () => {
    const at = T0;
    const log = new HealthLog(new RecordStore(createMemoryStorage(), 't:'), () => at);
    const later = (ran: ReturnType<HealthLog['record']>) => ran instanceof ResultAsync;
    expect(later(log.record('srv_a', probe(at, true)))).toBe(false);
    expect(later(log.record('srv_a', call(at, false)))).toBe(false);
    // A change that waits holds the server's lane: a count at once could come between its steps.
    const forgetting = log.forget('srv_b');
    const waiting = log.record('srv_b', call(at, false));
    expect(later(waiting)).toBe(true);
    (await forgetting)._unsafeUnwrap();
    (await waiting)._unsafeUnwrap();
    await new Promise((resolve) => setImmediate(resolve));
    expect(later(log.record('srv_a', call(at, true)))).toBe(false);
    expect((await log.history('srv_a'))._unsafeUnwrap().buckets).toMatchObject([{ probes: 1, healthy: 1, requests: 3, failures: 1 }]);
    expect((await log.history('srv_b'))._unsafeUnwrap().buckets).toMatchObject([{ probes: 0, requests: 1, failures: 1 }]);

    const elsewhere = new HealthLog(new RecordStore(new Keyv({ throwOnErrors: true }), 't:'), () => at);
    const through = elsewhere.record('srv_a', call(at, true));
    expect(later(through)).toBe(true);
    (await through)._unsafeUnwrap();
    expect((await elsewhere.history('srv_a'))._unsafeUnwrap().buckets).toMatchObject([{ requests: 1, failures: 0 }]);
  });
});
