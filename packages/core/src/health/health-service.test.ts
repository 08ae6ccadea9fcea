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

function setup(script: (ProbeOutcome | Error)[]) {
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
  const health = new HealthService({ registry, log: new HealthLog(records, now), prober, now });
  return { registry, health, changes, eras };
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

    expect(changes.map((c) => [c.previous, c.current])).toEqual([
      ['unknown', 'healthy'],
      ['healthy', 'unhealthy'],
      ['unhealthy', 'healthy'],
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
