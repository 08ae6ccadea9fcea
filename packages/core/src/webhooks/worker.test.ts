import { describe, expect, it } from 'vitest';
import { DUE_SET } from './deliveries.js';
import type { SendInput, SendOutcome } from './sender.js';
import { webhookParts } from './test-helpers.js';

async function published(p: ReturnType<typeof webhookParts>, events = ['server.created'] as const) {
  const hook = (await p.webhooks.create('acct', { url: 'https://h.example.com/hook', events: [...events] }))._unsafeUnwrap();
  const staged = (await p.outbox.stage('acct', 'server.created', { server: { id: 'srv_1' } }, new Date(p.now()).toISOString(), { key: 'k' }))._unsafeUnwrap();
  (await p.index.commit(staged!.publish))._unsafeUnwrap();
  return { hook, delivery: staged!.event.deliveries[0]!.id, event: staged!.event };
}

describe('DeliveryWorker', () => {
  it('sends a due delivery once, signed, with the service headers', async () => {
    const p = webhookParts();
    const { hook, delivery, event } = await published(p);
    await p.worker().tick();
    expect(p.sent).toHaveLength(1);
    const [input] = p.sent;
    expect(input!.url).toBe(hook.url);
    expect(JSON.parse(input!.body)).toEqual({ id: event.id, type: 'server.created', created_at: event.created_at, data: { server: { id: 'srv_1' } } });
    expect(input!.headers).toMatchObject({ 'content-type': 'application/json', 'x-service-event': 'server.created', 'x-service-delivery': delivery, 'webhook-id': delivery });
    expect(input!.headers['x-service-signature']).toMatch(/^sha256=[0-9a-f]{64}$/);
    const record = (await p.deliveries.get(delivery))._unsafeUnwrap();
    expect(record).toMatchObject({ status: 'delivered', next_attempt_at: null });
    expect(record!.attempts).toEqual([{ attempt: 1, at: new Date(p.now()).toISOString(), status_code: 200, duration_ms: 3, error: null }]);
    await p.worker().tick();
    expect(p.sent).toHaveLength(1);
    expect((await p.index.count(DUE_SET))._unsafeUnwrap()).toBe(0);
  });

  it('retries with backoff, under the same delivery id, then gives up after the last attempt', async () => {
    const p = webhookParts({ retry: { attempts: 3, baseMs: 1000, factor: 2 } });
    const { delivery } = await published(p);
    p.answers.push({ statusCode: 500 }, { statusCode: null, error: { code: 'UPSTREAM_UNREACHABLE', message: 'x' } }, { statusCode: 502 });
    const worker = p.worker();
    await worker.tick();
    expect((await p.deliveries.get(delivery))._unsafeUnwrap()?.next_attempt_at).toBe(new Date(p.now() + 1000).toISOString());
    await worker.tick();
    expect(p.sent).toHaveLength(1);
    p.clock.now += 1000;
    await worker.tick();
    p.clock.now += 2000;
    await worker.tick();
    expect(p.sent.map((s) => s.headers['x-service-delivery'])).toEqual([delivery, delivery, delivery]);
    const record = (await p.deliveries.get(delivery))._unsafeUnwrap()!;
    expect(record.status).toBe('failed');
    expect(record.attempts.map((a) => a.status_code)).toEqual([500, null, 502]);
    expect(record.attempts[1]!.error).toEqual({ code: 'UPSTREAM_UNREACHABLE', message: 'x' });
    expect((await p.index.count(DUE_SET))._unsafeUnwrap()).toBe(0);
  });

  it('waits what Retry-After asks on a 429', async () => {
    const p = webhookParts();
    const { delivery } = await published(p);
    p.answers.push({ statusCode: 429, retryAfter: '120' });
    await p.worker().tick();
    expect((await p.deliveries.get(delivery))._unsafeUnwrap()?.next_attempt_at).toBe(new Date(p.now() + 120_000).toISOString());
  });

  it('a 410 fails the delivery and disables the webhook', async () => {
    const p = webhookParts();
    const { hook, delivery } = await published(p);
    p.answers.push({ statusCode: 410 });
    await p.worker().tick();
    expect((await p.deliveries.get(delivery))._unsafeUnwrap()?.status).toBe('failed');
    expect((await p.webhooks.get('acct', hook.id))._unsafeUnwrap()).toMatchObject({ enabled: false, disabled_reason: 'gone' });
  });

  it('cancels without sending when the webhook was deleted or disabled', async () => {
    const p = webhookParts();
    const { hook, delivery } = await published(p);
    (await p.webhooks.update('acct', hook.id, { enabled: false }))._unsafeUnwrap();
    await p.worker().tick();
    expect(p.sent).toHaveLength(0);
    expect((await p.deliveries.get(delivery))._unsafeUnwrap()?.status).toBe('cancelled');
  });

  it('leaves a leased delivery to its holder, and takes the lease over once it is older than leaseMs', async () => {
    const p = webhookParts({ leaseMs: 30_000 });
    const { delivery } = await published(p);
    (await p.index.commit({ claims: [{ key: `webhook-lease:${delivery}`, owner: 'wkr_dead' }] }))._unsafeUnwrap();
    const worker = p.worker();
    await worker.tick();
    expect(p.sent).toHaveLength(0);
    p.clock.now += 30_001;
    await worker.tick();
    expect(p.sent).toHaveLength(1);
    expect((await p.index.claimOf(`webhook-lease:${delivery}`))._unsafeUnwrap()).toBeUndefined();
  });

  it('two workers on one store make each attempt once', async () => {
    const p = webhookParts();
    await p.webhooks.create('acct', { url: 'https://h.example.com/hook', events: ['server.created'] });
    const ids: string[] = [];
    for (let i = 0; i < 10; i++) {
      const staged = (await p.outbox.stage('acct', 'server.created', {}, new Date(p.now()).toISOString(), { key: 'k' }))._unsafeUnwrap();
      (await p.index.commit(staged!.publish))._unsafeUnwrap();
      ids.push(staged!.event.deliveries[0]!.id);
    }
    const a = p.worker('wkr_a');
    const b = p.worker('wkr_b');
    await Promise.all([a.tick(), b.tick(), a.tick(), b.tick()]);
    expect(p.sent.map((s) => s.headers['x-service-delivery']).sort()).toEqual([...ids].sort());
  });

  it('stop() abandons an attempt in flight: nothing is recorded and the delivery stays due', async () => {
    const p = webhookParts();
    const { delivery } = await published(p);
    let started!: () => void;
    const inFlight = new Promise<void>((resolve) => (started = resolve));
    p.answers.push(
      (input) =>
        new Promise((_resolve, reject) => {
          started();
          input.signal?.addEventListener('abort', () => reject(new Error('aborted')));
        }),
    );
    const worker = p.worker();
    worker.start();
    await inFlight;
    await worker.stop();
    const record = (await p.deliveries.get(delivery))._unsafeUnwrap();
    expect(record).toMatchObject({ status: 'pending', attempts: [] });
    expect((await p.index.count(DUE_SET))._unsafeUnwrap()).toBe(1);
  });
});

describe('DeliveryWorker lanes', () => {
  /** Stages and publishes one `server.created` for `account`, whose webhooks then each get a delivery. */
  async function publish(p: ReturnType<typeof webhookParts>, account: string) {
    const staged = (await p.outbox.stage(account, 'server.created', {}, new Date(p.now()).toISOString(), { key: 'k' }))._unsafeUnwrap();
    (await p.index.commit(staged!.publish))._unsafeUnwrap();
    staged!.published();
  }

  it('one account’s dead receivers hold at most half the lanes, and another account’s delivery goes out at once', async () => {
    const p = webhookParts();
    const dead = 'https://dead.example.com/hook';
    for (let i = 0; i < 16; i++) (await p.webhooks.create('tenant_x', { url: `${dead}/${i}`, events: ['server.created'] }))._unsafeUnwrap();
    (await p.webhooks.create('tenant_y', { url: 'https://alive.example.com/hook', events: ['server.created'] }))._unsafeUnwrap();
    const hanging = new Set<string>();
    // Receivers of tenant_x never answer (until the worker stops); tenant_y's answers 200.
    const answer = (input: SendInput): Promise<SendOutcome> =>
      input.url.startsWith(dead)
        ? new Promise<never>((_resolve, reject) => {
            hanging.add(input.url);
            input.signal?.addEventListener('abort', () => reject(new Error('aborted')));
          })
        : Promise.resolve({ statusCode: 200, durationMs: 1, retryAfter: undefined, error: null });
    for (let i = 0; i < 40; i++) p.answers.push(answer);
    const worker = p.worker();
    worker.start();
    await publish(p, 'tenant_x');
    await expect.poll(() => hanging.size, { timeout: 2000 }).toBe(2);
    const started = performance.now();
    await publish(p, 'tenant_y');
    await expect.poll(() => p.sent.some((s) => s.url.startsWith('https://alive.example.com')), { timeout: 1000, interval: 10 }).toBe(true);
    expect(performance.now() - started).toBeLessThan(1000);
    // Half of the 4 lanes, never more, for tenant_x: its 14 other deliveries wait for a lane of their own.
    expect(hanging.size).toBe(2);
    await worker.stop();
  });
});
