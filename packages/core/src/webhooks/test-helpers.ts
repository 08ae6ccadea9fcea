import { SecretBox } from '../util/secret-box.js';
import Keyv from 'keyv';
import { IndexCalls } from '../storage/index-calls.js';
import { MemoryIndexStore } from '../storage/memory-index-store.js';
import { RecordStore } from '../storage/records.js';
import { DeliveryLog } from './deliveries.js';
import { EventOutbox } from '../events/outbox.js';
import { webhookRecipients } from './recipients.js';
import { retryPolicy, type RetryOptions } from './retry.js';
import { WebhookValidator } from './schema.js';
import type { SendInput, SendOutcome } from './sender.js';
import { WebhookStore } from './subscriptions.js';
import { DeliveryWorker } from './worker.js';

/** The webhook pieces over memory stores, a clock the test moves, and a sender that answers what the test says. */
export function webhookParts(options: { retry?: RetryOptions; leaseMs?: number } = {}) {
  const clock = { now: Date.parse('2026-11-22T10:00:00.000Z') };
  const now = () => clock.now;
  const records = new RecordStore(new Keyv({ throwOnErrors: true }), 'test:');
  const index = new IndexCalls(new MemoryIndexStore({ now }));
  const webhooks = new WebhookStore({ records, index, validator: new WebhookValidator({ allowPrivateNetworks: true }), now, secrets: new SecretBox() });
  const deliveries = new DeliveryLog(records, index, 86_400_000);
  let wakes = 0;
  const recipients = webhookRecipients(webhooks, deliveries);
  const outbox = new EventOutbox({ records, index, recipients, now, graceMs: 60_000, retentionMs: 86_400_000, wake: () => (wakes += 1) });
  const sent: SendInput[] = [];
  const answers: (Partial<SendOutcome> | ((input: SendInput) => Promise<SendOutcome>))[] = [];
  const send = async (input: SendInput): Promise<SendOutcome> => {
    sent.push(input);
    const next = answers.shift() ?? { statusCode: 200 };
    if (typeof next === 'function') return next(input);
    const statusCode = next.statusCode ?? 200;
    const ok = statusCode !== null && statusCode >= 200 && statusCode < 300;
    return { statusCode, durationMs: 3, retryAfter: undefined, error: ok ? null : { code: 'UNEXPECTED_STATUS', message: 'x' }, ...next };
  };
  const errors: unknown[] = [];
  const worker = (id?: string) => {
    const w = new DeliveryWorker({
      records,
      index,
      webhooks,
      deliveries,
      outbox,
      send,
      retry: retryPolicy({ jitter: 0, ...options.retry }),
      timeoutMs: 10_000,
      leaseMs: options.leaseMs ?? 60_000,
      pollIntervalMs: 1000,
      concurrency: 4,
      now,
      onError: (e) => errors.push(e),
    });
    if (id !== undefined) Object.defineProperty(w, 'id', { value: id });
    return w;
  };
  return { clock, now, records, index, webhooks, deliveries, outbox, sent, answers, errors, worker, wakes: () => wakes };
}
