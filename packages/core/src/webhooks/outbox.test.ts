import { describe, expect, it } from 'vitest';
import { DUE_SET, deliveriesSet } from './deliveries.js';
import { EventBus } from '../events/bus.js';
import { ChangeWriter } from '../events/change-writer.js';
import { INTENT_SET } from '../events/outbox.js';
import { mergeTransactions } from '../storage/index-calls.js';
import { ToolCallLog, toolCallCheck } from '../toolcalls/tool-call-log.js';
import { webhookParts } from './test-helpers.js';

const at = (ms: number) => new Date(ms).toISOString();

describe('EventOutbox', () => {
  it('stages nothing when no webhook of the account subscribes', async () => {
    const p = webhookParts();
    (await p.webhooks.create('acct', { url: 'https://h.example.com/', events: ['server.deleted'] }))._unsafeUnwrap();
    (await p.webhooks.create('other', { url: 'https://h.example.com/', events: ['server.created'] }))._unsafeUnwrap();
    const staged = (await p.outbox.stage('acct', 'server.created', {}, at(p.now()), { key: 'server:srv_x' }))._unsafeUnwrap();
    expect(staged).toBeUndefined();
    expect((await p.index.count(INTENT_SET))._unsafeUnwrap()).toBe(0);
  });

  it('records an intent first; the publish transaction makes the deliveries due and listed', async () => {
    const p = webhookParts();
    const hook = (await p.webhooks.create('acct', { url: 'https://h.example.com/', events: ['server.created'] }))._unsafeUnwrap();
    const staged = (await p.outbox.stage('acct', 'server.created', { n: 1 }, at(p.now()), { key: 'server:srv_x' }))._unsafeUnwrap();
    expect(staged).toBeDefined();
    expect((await p.index.count(INTENT_SET))._unsafeUnwrap()).toBe(1);
    expect((await p.index.count(DUE_SET))._unsafeUnwrap()).toBe(0);
    expect((await p.index.count(deliveriesSet(hook.id)))._unsafeUnwrap()).toBe(0);
    (await p.index.commit(mergeTransactions({ add: [{ set: 'servers', member: 'srv_x', score: 1 }] }, staged?.publish)))._unsafeUnwrap();
    staged?.published();
    expect((await p.index.count(INTENT_SET))._unsafeUnwrap()).toBe(0);
    expect((await p.index.count(DUE_SET))._unsafeUnwrap()).toBe(1);
    expect((await p.index.count(deliveriesSet(hook.id)))._unsafeUnwrap()).toBe(1);
    expect(p.wakes()).toBe(1);
  });

  it('recovery publishes an intent whose change landed, once it is older than the grace', async () => {
    const p = webhookParts();
    (await p.webhooks.create('acct', { url: 'https://h.example.com/', events: ['server.updated'] }))._unsafeUnwrap();
    await p.outbox.stage('acct', 'server.updated', {}, at(p.now()), { key: 'server:srv_y', match: { updated_at: 'v2' } });
    // The process died after writing the change, before its index commit.
    (await p.records.set('server:srv_y', { updated_at: 'v2' }))._unsafeUnwrap();
    expect((await p.outbox.recover())._unsafeUnwrap()).toBe(0);
    p.clock.now += 60_001;
    expect((await p.outbox.recover())._unsafeUnwrap()).toBe(1);
    expect((await p.index.count(INTENT_SET))._unsafeUnwrap()).toBe(0);
    expect((await p.index.count(DUE_SET))._unsafeUnwrap()).toBe(1);
  });

  it('recovery drops an intent whose change never landed, and its records', async () => {
    const p = webhookParts();
    (await p.webhooks.create('acct', { url: 'https://h.example.com/', events: ['server.updated', 'server.deleted'] }))._unsafeUnwrap();
    const updated = (await p.outbox.stage('acct', 'server.updated', {}, at(p.now()), { key: 'server:srv_z', match: { updated_at: 'v3' } }))._unsafeUnwrap();
    (await p.records.set('server:srv_z', { updated_at: 'v2' }))._unsafeUnwrap();
    // A delete that did land: the record is gone.
    await p.outbox.stage('acct', 'server.deleted', {}, at(p.now()), { key: 'server:srv_gone', absent: true });
    p.clock.now += 60_001;
    expect((await p.outbox.recover())._unsafeUnwrap()).toBe(1);
    expect((await p.index.count(INTENT_SET))._unsafeUnwrap()).toBe(0);
    expect((await p.index.count(DUE_SET))._unsafeUnwrap()).toBe(1);
    const dropped = updated?.event.deliveries[0]?.id as string;
    expect((await p.deliveries.get(dropped))._unsafeUnwrap()).toBeUndefined();
  });

  it('tool_call.failed: the seam for the tool-call log, recovered by the call record\'s key', async () => {
    const p = webhookParts();
    (await p.webhooks.create('acct', { url: 'https://h.example.com/', events: ['tool_call.failed'] }))._unsafeUnwrap();
    const call = {
      id: 'call_000000000000000000000001', server_id: 'srv_1', server_name: 's', tool: 'echo', status: 'error' as const,
      duration_ms: 5, attempts: 1, error: { code: 'UPSTREAM_TIMEOUT', message: 'x' }, created_at: at(p.now()),
    };
    const staged = (await p.outbox.stage('acct', 'tool_call.failed', { tool_call: call }, call.created_at, toolCallCheck(call.id)))._unsafeUnwrap();
    expect(staged).toBeDefined();
    // The log appends the record (its own commit, without the publish, as if the process died before merging it).
    (await new ToolCallLog(p.records, p.index, new ChangeWriter(new EventBus(() => {}), undefined)).append('acct', call))._unsafeUnwrap();
    p.clock.now += 60_001;
    expect((await p.outbox.recover())._unsafeUnwrap()).toBe(1);
    expect((await p.index.count(DUE_SET))._unsafeUnwrap()).toBe(1);
  });

  it('abandon forgets a staged event', async () => {
    const p = webhookParts();
    (await p.webhooks.create('acct', { url: 'https://h.example.com/', events: ['server.created'] }))._unsafeUnwrap();
    const staged = (await p.outbox.stage('acct', 'server.created', {}, at(p.now()), { key: 'server:srv_a' }))._unsafeUnwrap();
    (await staged!.abandon())._unsafeUnwrap();
    expect((await p.index.count(INTENT_SET))._unsafeUnwrap()).toBe(0);
    expect((await p.deliveries.get(staged!.event.deliveries[0]!.id))._unsafeUnwrap()).toBeUndefined();
  });

  it('names deliveries after event and webhook: the same id whoever fans out', async () => {
    const p = webhookParts();
    (await p.webhooks.create('acct', { url: 'https://h.example.com/', events: ['server.created'] }))._unsafeUnwrap();
    const staged = (await p.outbox.stage('acct', 'server.created', {}, at(p.now()), { key: 'k' }))._unsafeUnwrap();
    const { deliveryId } = await import('./deliveries.js');
    const [d] = staged!.event.deliveries;
    expect(d!.id).toBe(deliveryId(staged!.event.id, d!.webhook_id));
    expect(d!.id).toMatch(/^dlv_[0-9A-Za-z]{24}$/);
  });
});
