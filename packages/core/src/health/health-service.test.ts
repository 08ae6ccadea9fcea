import Keyv from 'keyv';
import { describe, expect, it } from 'vitest';
import { EventBus } from '../events/bus.js';
import { ChangeWriter } from '../events/change-writer.js';
import { type FleetEventMap } from '../events/catalog.js';
import { ServerRegistry } from '../registry/registry.js';
import { ServerValidator } from '../registry/schema.js';
import { IndexCalls } from '../storage/index-calls.js';
import { MemoryIndexStore } from '../storage/memory-index-store.js';
import { RecordStore } from '../storage/records.js';
import { HealthLog } from './health-log.js';
import { type ProbeOutcome, type Prober, HealthService } from './health-service.js';
import { MemoryRateLimitStore } from '../ratelimit/memory-rate-limit-store.js';
import { CircuitBreaker } from './breaker.js';
import { type HealthOptions, resolveHealth } from './states.js';

function setup(script: (ProbeOutcome | Error)[], options: HealthOptions = { announceAfter: 1, degradedErrorRate: 0.5 }) {
  let clock = Date.UTC(2026, 10, 22, 12, 0, 0);
  const now = () => clock;
  const records = new RecordStore(new Keyv({ throwOnErrors: true }), 'mcp-fleet:');
  const events = new EventBus((error) => {
    throw error;
  });
  const changes: FleetEventMap['server.health_changed'][] = [];
  events.on('server.health_changed', (event) => {
    changes.push(event);
  });
  const registry = new ServerRegistry({
    records,
    index: new IndexCalls(new MemoryIndexStore({ now })),
    validator: new ServerValidator(),
    now,
    claimGraceMs: 60_000,
    changes: new ChangeWriter(events, undefined),
  });
  const eras: (string | undefined)[] = [];
  const prober: Prober = async (_server, era) => {
    eras.push(era);
    clock += 25;
    const next = script.shift();
    if (next === undefined) throw new Error('the script ran out');
    if (next instanceof Error) throw next;
    return next;
  };
  const thresholds = resolveHealth(options);
  const log = new HealthLog(records, now);
  const breaker = new CircuitBreaker(records, new MemoryRateLimitStore({ now }), thresholds.breaker, now);
  const health = new HealthService({ registry, log, prober, breaker, thresholds, now });
  const advance = (ms: number) => {
    clock += ms;
  };
  return { registry, health, changes, eras, log, breaker, advance, now };
}

const up = (era = '2025'): ProbeOutcome => ({ ok: true, era, responseTimeMs: 12, error: null });
const down: ProbeOutcome = { ok: false, era: undefined, responseTimeMs: 3, error: { code: 'UPSTREAM_UNREACHABLE', message: 'The server refused the connection.' } };

describe('HealthService', () => {
  it('probes, records, moves health, and announces only transitions', async () => {
    const { registry, health, changes } = setup([up(), up(), down, up()]);
    const server = (await registry.create('acme', { name: 's', type: 'http', endpoint: 'https://mcp.example/mcp' }))._unsafeUnwrap();

    const first = (await health.check('acme', server.id))._unsafeUnwrap();
    expect(first).toMatchObject({ status: 'healthy', response_time: 12, uptime: '100%', error_rate: '0%', error: null });
    expect((await registry.get('acme', server.id))._unsafeUnwrap().health).toBe('healthy');
    await health.check('acme', server.id);
    const third = (await health.check('acme', server.id))._unsafeUnwrap();
    expect(third).toMatchObject({ status: 'unhealthy', uptime: '66.67%', error_rate: '33.33%', error: { code: 'UPSTREAM_UNREACHABLE' } });
    expect((await registry.get('acme', server.id))._unsafeUnwrap().health).toBe('unhealthy');
    await health.check('acme', server.id);

    expect(changes.map((c) => [c.previous, c.current, c.reason])).toEqual([
      ['unknown', 'healthy', 'probe_ok'],
      ['healthy', 'unhealthy', 'probe_failed'],
      ['unhealthy', 'healthy', 'probe_ok'],
    ]);
    expect(changes[1]?.error).toEqual({ code: 'UPSTREAM_UNREACHABLE', message: 'The server refused the connection.' });
    // The listing by health follows the probe.
    expect((await registry.list('acme', { page: 1, limit: 10, health: 'healthy' }))._unsafeUnwrap().pagination.total).toBe(1);
  });

  it('remembers the era that answered, and keeps it through a failed probe', async () => {
    const { registry, health, eras } = setup([up('2026-07-28'), down, up('2026-07-28')]);
    const server = (await registry.create('acme', { name: 's', type: 'http', endpoint: 'https://mcp.example/mcp' }))._unsafeUnwrap();
    for (let i = 0; i < 3; i++) await health.check('acme', server.id);
    expect(eras).toEqual([undefined, '2026-07-28', '2026-07-28']);
  });

  it('turns a prober that throws into a failed probe, not a 500', async () => {
    const { registry, health } = setup([new Error('bug')]);
    const server = (await registry.create('acme', { name: 's', type: 'http', endpoint: 'https://mcp.example/mcp' }))._unsafeUnwrap();
    const record = (await health.check('acme', server.id))._unsafeUnwrap();
    expect(record).toMatchObject({ status: 'unhealthy', error: { code: 'UPSTREAM_PROTOCOL_ERROR' } });
    expect(JSON.stringify(record)).not.toContain('bug');
  });

  it('is 404 for another account and probes nothing', async () => {
    const { registry, health, eras } = setup([up()]);
    const server = (await registry.create('acme', { name: 's', type: 'http', endpoint: 'https://mcp.example/mcp' }))._unsafeUnwrap();
    const result = await health.check('intruder', server.id);
    expect(result._unsafeUnwrapErr().code).toBe('SERVER_NOT_FOUND');
    expect(eras).toEqual([]);
  });
});

const slow = (ms: number): ProbeOutcome => ({ ok: true, era: '2025', responseTimeMs: ms, error: null });
const refused: ProbeOutcome = { ok: false, era: undefined, responseTimeMs: 4, error: { code: 'UPSTREAM_AUTH_FAILED', message: 'The server answered 401.' } };
const call = (ok: boolean, at: number) => ({ kind: 'call', ok, at, responseTimeMs: 40, error: ok ? null : { code: 'UPSTREAM_UNREACHABLE', message: 'x' } }) as const;

describe('HealthService states', () => {
  async function serverIn(registry: ReturnType<typeof setup>['registry']) {
    return (await registry.create('acme', { name: 's', type: 'http', endpoint: 'https://mcp.example/mcp' }))._unsafeUnwrap();
  }

  it('says which rule decided: probe_ok, slow_probe over degradedLatencyMs, auth_rejected, probe_failed', async () => {
    const { registry, health } = setup([up(), slow(2001), slow(2000), refused, down], { announceAfter: 1, degradedLatencyMs: 2000 });
    const server = await serverIn(registry);
    const seen = [];
    for (let i = 0; i < 5; i++) {
      const record = (await health.check('acme', server.id))._unsafeUnwrap();
      seen.push([record.status, record.state_reason]);
    }
    expect(seen).toEqual([
      ['healthy', 'probe_ok'],
      ['degraded', 'slow_probe'],
      ['healthy', 'probe_ok'],
      ['auth_failed', 'auth_rejected'],
      ['unhealthy', 'probe_failed'],
    ]);
    expect((await registry.get('acme', server.id))._unsafeUnwrap().health).toBe('unhealthy');
  });

  it('is degraded when calls fail above degradedErrorRate over the window, and healthy again once they age out of it', async () => {
    const { registry, health, log, now } = setup([up(), up(), up()], { announceAfter: 1, degradedErrorRate: 0.2, errorRateWindowMs: 900_000 });
    const server = await serverIn(registry);
    expect((await health.check('acme', server.id))._unsafeUnwrap().status).toBe('healthy');
    // One call in three fails: with the probes, 1 failure in 5 requests is 20%, not above the threshold...
    for (const ok of [true, true, false]) await log.record(server.id, call(ok, now()));
    expect((await health.check('acme', server.id))._unsafeUnwrap()).toMatchObject({ status: 'healthy', state_reason: 'probe_ok' });
    // ...a second failure (2 in 7, 28.6%) is.
    await log.record(server.id, call(false, now()));
    await log.record(server.id, call(false, now()));
    expect((await health.check('acme', server.id))._unsafeUnwrap()).toMatchObject({ status: 'degraded', state_reason: 'error_rate' });
  });

  it('the error-rate rule needs errorRateMinRequests and forgets what is older than the window', async () => {
    const { registry, health, log, now, advance } = setup([up(), up(), up()], { announceAfter: 1, errorRateMinRequests: 4, errorRateWindowMs: 600_000 });
    const server = await serverIn(registry);
    await log.record(server.id, call(false, now()));
    await log.record(server.id, call(false, now()));
    // Two failed calls and this probe: 3 requests, fewer than 4: the rate decides nothing.
    expect((await health.check('acme', server.id))._unsafeUnwrap()).toMatchObject({ status: 'healthy', state_reason: 'probe_ok' });
    expect((await health.check('acme', server.id))._unsafeUnwrap()).toMatchObject({ status: 'degraded', state_reason: 'error_rate' });
    advance(15 * 60_000);
    expect((await health.check('acme', server.id))._unsafeUnwrap()).toMatchObject({ status: 'healthy', state_reason: 'probe_ok' });
  });

  it('announces a new state only once it held for announceAfter probes (anti-flap), and from unknown at once', async () => {
    const { registry, health, changes } = setup([up(), down, up(), down, down, down, up(), up()], { announceAfter: 3, degradedErrorRate: 0.99 });
    const server = await serverIn(registry);
    const statuses = [];
    for (let i = 0; i < 8; i++) {
      const record = (await health.check('acme', server.id))._unsafeUnwrap();
      statuses.push([record.status, record.pending?.status ?? null, record.pending?.probes ?? null]);
    }
    expect(statuses).toEqual([
      ['healthy', null, null],
      ['healthy', 'unhealthy', 1],
      ['healthy', null, null],
      ['healthy', 'unhealthy', 1],
      ['healthy', 'unhealthy', 2],
      ['unhealthy', null, null],
      ['unhealthy', 'healthy', 1],
      ['unhealthy', 'healthy', 2],
    ]);
    expect(changes.map((c) => [c.previous, c.current, c.reason])).toEqual([
      ['unknown', 'healthy', 'probe_ok'],
      ['healthy', 'unhealthy', 'probe_failed'],
    ]);
  });

  it('keeps the latency of probes and calls as p50/p95 over the last hour and day, in bounded digests', async () => {
    const { registry, health, log, now, advance } = setup([slow(100), slow(1000)], { announceAfter: 1 });
    const server = await serverIn(registry);
    await health.check('acme', server.id);
    for (let i = 1; i <= 100; i++) await log.record(server.id, { ...call(true, now()), responseTimeMs: i * 10 });
    advance(2 * 3_600_000);
    await health.check('acme', server.id);
    const history = (await health.history('acme', server.id))._unsafeUnwrap();
    // The percentiles are the upper edge of 10%-wide bins: never below the true value, at most 10% above it.
    const within = (value: number | undefined, truth: number) => expect(value! >= truth && value! <= truth * 1.1, `${value} for ${truth}`).toBe(true);
    within(history.latency.last_day.call?.p50, 500);
    within(history.latency.last_day.call?.p95, 950);
    expect(history.latency.last_day.call?.count).toBe(100);
    expect(history.latency.last_hour.call).toBeNull();
    within(history.latency.last_hour.probe?.p50, 1000);
    expect(history.latency.last_day.probe?.count).toBe(2);
    expect(history.buckets.map((b) => b.status)).toEqual(['healthy', 'healthy']);
    expect(history).toMatchObject({ status: 'healthy', state_reason: 'probe_ok' });
  });
});

describe('HealthService and the circuit breaker', () => {
  it('opens after breaker.failures failed probes, doubles its backoff up to the cap, and one success closes it', async () => {
    const { registry, health, breaker, advance } = setup([down, down, down, down, up()], { announceAfter: 1, breaker: { failures: 2, backoffMs: 1000, maxBackoffMs: 1500 } });
    const server = (await registry.create('acme', { name: 's', type: 'http', endpoint: 'https://mcp.example/mcp' }))._unsafeUnwrap();
    expect((await health.check('acme', server.id))._unsafeUnwrap().breaker).toMatchObject({ state: 'closed', consecutive_failures: 1 });
    expect((await breaker.admit(server.id))._unsafeUnwrap()).toEqual({ go: true, trial: false });
    const opened = (await health.check('acme', server.id))._unsafeUnwrap().breaker;
    expect(opened).toMatchObject({ state: 'open', consecutive_failures: 2 });
    expect(Date.parse(opened.retry_at!) - Date.parse(opened.opened_at!)).toBe(1000);
    expect((await breaker.admit(server.id))._unsafeUnwrap()).toMatchObject({ go: false, retryAt: Date.parse(opened.retry_at!) });
    advance(1000);
    // Half-open: one caller wins the trial, the next one still fails fast.
    expect((await breaker.view(server.id))._unsafeUnwrap().state).toBe('half_open');
    expect((await breaker.admit(server.id))._unsafeUnwrap()).toEqual({ go: true, trial: true });
    expect((await breaker.admit(server.id))._unsafeUnwrap()).toMatchObject({ go: false });
    const reopened = (await health.check('acme', server.id))._unsafeUnwrap().breaker;
    expect(Date.parse(reopened.retry_at!) - Date.parse(reopened.opened_at!)).toBe(1500);
    advance(1500);
    const again = (await health.check('acme', server.id))._unsafeUnwrap().breaker;
    expect(Date.parse(again.retry_at!) - Date.parse(again.opened_at!)).toBe(1500);
    advance(1500);
    expect((await health.check('acme', server.id))._unsafeUnwrap().breaker).toEqual({ state: 'closed', consecutive_failures: 0, opened_at: null, retry_at: null });
    expect((await breaker.admit(server.id))._unsafeUnwrap()).toEqual({ go: true, trial: false });
  });

  it('does not count a server refusing our credentials as a breaker failure', async () => {
    const { registry, health } = setup([refused, refused, refused], { announceAfter: 1, breaker: { failures: 2 } });
    const server = (await registry.create('acme', { name: 's', type: 'http', endpoint: 'https://mcp.example/mcp' }))._unsafeUnwrap();
    let record;
    for (let i = 0; i < 3; i++) record = (await health.check('acme', server.id))._unsafeUnwrap();
    expect(record).toMatchObject({ status: 'auth_failed', state_reason: 'auth_rejected', breaker: { state: 'closed', consecutive_failures: 0 } });
  });
});

describe('resolveHealth', () => {
  it('fills the documented defaults', () => {
    expect(resolveHealth()).toEqual({
      degradedLatencyMs: 2000,
      degradedErrorRate: 0.1,
      errorRateWindowMs: 900_000,
      errorRateMinRequests: 3,
      announceAfter: 2,
      breaker: { failures: 5, backoffMs: 30_000, maxBackoffMs: 600_000 },
    });
    expect(resolveHealth({ breaker: false }).breaker).toBeUndefined();
  });

  it.each([
    [{ degradedErrorRate: 1 }, 'health.degradedErrorRate'],
    [{ degradedLatencyMs: 0 }, 'health.degradedLatencyMs'],
    [{ errorRateWindowMs: 60_000 }, 'health.errorRateWindowMs'],
    [{ announceAfter: 0 }, 'health.announceAfter'],
    [{ breaker: { failures: 0 } }, 'health.breaker.failures'],
    [{ breaker: { backoffMs: 5000, maxBackoffMs: 1000 } }, 'health.breaker.maxBackoffMs'],
  ] as [HealthOptions, string][])('refuses %j, naming %s', (options, name) => {
    expect(() => resolveHealth(options)).toThrow(new RegExp(`^mcp-fleet: ${name.replace(/\./g, '\\.')} must be`));
  });
});
