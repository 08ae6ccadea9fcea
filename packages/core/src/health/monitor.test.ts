import Keyv from 'keyv';
import { describe, expect, it } from 'vitest';
import { EventBus } from '../events/bus.js';
import { ChangeWriter } from '../events/change-writer.js';
import { MemoryRateLimitStore } from '../ratelimit/memory-rate-limit-store.js';
import { ServerRegistry } from '../registry/registry.js';
import { ServerValidator } from '../registry/schema.js';
import { IndexCalls } from '../storage/index-calls.js';
import { MemoryIndexStore } from '../storage/memory-index-store.js';
import { RecordStore } from '../storage/records.js';
import { HealthLog } from './health-log.js';
import { HealthService, type Prober } from './health-service.js';
import { HealthMonitor, nextRound, type HealthMonitorOptions } from './monitor.js';
import { CircuitBreaker } from './breaker.js';
import { resolveHealth } from './states.js';

/** Two "processes": two registries, services and monitors over one shared storage and one shared lease store. */
function setup(count: number, prober: Prober, options: HealthMonitorOptions = { intervalMs: 60_000, concurrency: 3 }) {
  let clock = Date.UTC(2026, 10, 22, 12, 0, 1);
  const now = () => clock;
  const keyv = new Keyv({ throwOnErrors: true });
  const index = new MemoryIndexStore({ now });
  const leases = new MemoryRateLimitStore({ now });
  const processes = Array.from({ length: 2 }, () => {
    const records = new RecordStore(keyv, 'mcp-fleet:');
    const events = new EventBus(() => {});
    const registry = new ServerRegistry({ records, index: new IndexCalls(index), validator: new ServerValidator(), now, claimGraceMs: 60_000, changes: new ChangeWriter(events, undefined) });
    const thresholds = resolveHealth();
    const health = new HealthService({ registry, log: new HealthLog(records, now), prober, breaker: new CircuitBreaker(records, leases, thresholds.breaker, now), thresholds, now });
    const errors: unknown[] = [];
    const monitor = new HealthMonitor({ registry, health, leases, now, onError: (e) => errors.push(e) }, options);
    return { registry, monitor, errors };
  });
  return {
    processes,
    advance: (ms: number) => {
      clock += ms;
    },
    async seed() {
      const [first] = processes;
      for (let i = 0; i < count; i++) {
        const account = `acct${i % 3}`;
        (await first!.registry.create(account, { name: `s${i}`, type: 'http', endpoint: `https://mcp${i}.example/mcp` }))._unsafeUnwrap();
      }
    },
  };
}

describe('HealthMonitor', () => {
  it('probes every server of every account once per interval, even with two processes running rounds', async () => {
    const probed: string[] = [];
    const world = setup(230, async (server) => {
      probed.push(server.id);
      return { ok: true, era: '2025', responseTimeMs: 1, error: null };
    });
    await world.seed();
    const [a, b] = world.processes;
    const counts = await Promise.all([a!.monitor.round(), b!.monitor.round()]);
    expect(counts[0]! + counts[1]!).toBe(230);
    expect(new Set(probed).size).toBe(230);
    expect(probed).toHaveLength(230);
    // Same interval again: nobody probes.
    expect(await a!.monitor.round()).toBe(0);
    world.advance(60_000);
    expect(await b!.monitor.round()).toBe(230);
    // The servers' health followed.
    const page = (await a!.registry.list('acct1', { page: 1, limit: 100, health: 'healthy' }))._unsafeUnwrap();
    expect(page.pagination.total).toBe(77);
  });

  it('keeps at most `concurrency` probes in flight', async () => {
    let inFlight = 0;
    let most = 0;
    const world = setup(12, async () => {
      inFlight += 1;
      most = Math.max(most, inFlight);
      await new Promise((resolve) => setTimeout(resolve, 10));
      inFlight -= 1;
      return { ok: false, era: undefined, responseTimeMs: 10, error: { code: 'UPSTREAM_TIMEOUT', message: 'timed out' } };
    });
    await world.seed();
    expect(await world.processes[0]!.monitor.round()).toBe(12);
    expect(most).toBe(3);
  });

  it('gives one account’s slow servers at most half the lanes, and no round waits for them', async () => {
    const held: (() => void)[] = [];
    let holding = true;
    const quick: number[] = [];
    const world = setup(0, async (server) => {
      if (server.account === 'slow' && holding) await new Promise<void>((resolve) => held.push(resolve));
      if (server.account === 'quick') quick.push(Date.now());
      return { ok: true, era: '2025', responseTimeMs: 1, error: null };
    });
    const [a] = world.processes;
    for (let i = 0; i < 5; i++) (await a!.registry.create('slow', { name: `slow${i}`, type: 'http', endpoint: `https://slow${i}.example/mcp` }))._unsafeUnwrap();
    (await a!.registry.create('quick', { name: 'quick', type: 'http', endpoint: 'https://quick.example/mcp' }))._unsafeUnwrap();
    // Three lanes: one for the slow account (half of three, rounded down), so the quick server is probed at once.
    const first = a!.monitor.round();
    await expect.poll(() => quick.length, { timeout: 1000, interval: 5 }).toBe(1);
    expect(held).toHaveLength(1);
    // The next interval's round starts while the slow probe still hangs: it probes the quick server again and
    // leaves the slow server whose probe is under way alone.
    world.advance(60_000);
    const second = a!.monitor.round();
    await expect.poll(() => quick.length, { timeout: 1000, interval: 5 }).toBe(2);
    expect(held).toHaveLength(1);
    holding = false;
    for (const release of held.splice(0)) release();
    // The slow servers left over from the first round run in the second's window: each is probed once in it, by
    // whichever round reaches it first (the lease of the window the probe runs in).
    expect((await first) + (await second)).toBe(7);
    expect(quick).toHaveLength(2);
  });

  it('takes the leases of the window a round runs in when the window it was scheduled for has closed', async () => {
    const probed: string[] = [];
    const world = setup(7, async (server) => {
      probed.push(server.id);
      return { ok: true, era: '2025', responseTimeMs: 1, error: null };
    });
    await world.seed();
    const [a, b] = world.processes;
    const scheduled = Math.floor(Date.UTC(2026, 10, 22, 12, 0, 1) / 60_000);
    // The timer of window `scheduled` fires two windows late: its probes count for the window the clock is in ...
    world.advance(2 * 60_000);
    expect(await a!.monitor.round(scheduled)).toBe(7);
    // ... so another process's round of that window finds every lease taken, and the leases have not expired.
    expect(await b!.monitor.round()).toBe(0);
    world.advance(58_000);
    expect(await b!.monitor.round()).toBe(0);
    expect(probed).toHaveLength(7);
  });

  it('schedules each round in an interval window of its own, up to the jitter share after the window opens', () => {
    const interval = 60_000;
    let previous: number | undefined;
    let at = Date.UTC(2026, 10, 27, 12, 0, 59, 999);
    for (const random of [0, 0.999, 0.5, 0, 0.999, 0.25, 0.999, 0]) {
      const { delayMs, window } = nextRound(at, interval, 0.1, random);
      expect(delayMs).toBeGreaterThan(0);
      const start = at + delayMs;
      expect(window).toBe(Math.floor(at / interval) + 1);
      expect(Math.floor(start / interval)).toBe(window);
      expect(start - window * interval).toBeLessThanOrEqual(6_000);
      if (previous !== undefined) expect(window).toBe(previous + 1);
      previous = window;
      at = start;
    }
  });

  it('refuses options that make no sense', () => {
    const world = setup(0, async () => ({ ok: true, era: undefined, responseTimeMs: 0, error: null }));
    const deps = { registry: world.processes[0]!.registry } as never;
    expect(() => new HealthMonitor(deps, { intervalMs: 10 })).toThrow(TypeError);
    expect(() => new HealthMonitor(deps, { concurrency: 0 })).toThrow(TypeError);
    expect(() => new HealthMonitor(deps, { jitter: 2 })).toThrow(TypeError);
  });
});
