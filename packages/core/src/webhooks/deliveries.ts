import { z } from 'zod';
import { isoTimeSchema } from '../util/iso-time.js';
import { createHash } from 'node:crypto';
import { okAsync, type ResultAsync } from 'neverthrow';
import type { FleetError } from '../errors/fleet-error.js';
import type { IndexCalls } from '../storage/index-calls.js';
import { readPage } from '../storage/read-page.js';
import type { RecordStore } from '../storage/records.js';
import { ID_PREFIXES } from '../util/ids.js';
import { type Page, type PageQuery, pagination } from '../util/pagination.js';
import { okWith, type Ran, chainMap, toAsync } from '../util/result.js';

/** One try at sending a delivery. Response bodies are never read into it. */
export const deliveryAttemptSchema = z.strictObject({
  /** 1-based. */
  attempt: z.int().min(1),
  /** When the attempt started. */
  at: isoTimeSchema,
  /** The receiver's status code; `null` when no answer came (refused, timed out, not allowed). */
  status_code: z.int().nullable(),
  duration_ms: z.number(),
  /** `null` on a 2xx; else `{ code, message }` (see docs/webhooks.md). */
  error: z.strictObject({ code: z.string(), message: z.string() }).nullable(),
});

export type DeliveryAttempt = z.output<typeof deliveryAttemptSchema>;

export const DELIVERY_STATUSES = ['pending', 'delivered', 'failed', 'cancelled'] as const;
export type DeliveryStatus = (typeof DELIVERY_STATUSES)[number];

/** A delivery as responses show it. */
export const deliveryViewSchema = z.strictObject({
  id: z.string(),
  webhook_id: z.string(),
  event_id: z.string(),
  event_type: z.string(),
  status: z.enum(DELIVERY_STATUSES),
  attempts: z.array(deliveryAttemptSchema),
  /** When the next attempt is due; `null` once the delivery is settled. */
  next_attempt_at: isoTimeSchema.nullable(),
  created_at: isoTimeSchema,
});

export type DeliveryView = z.output<typeof deliveryViewSchema>;

export interface DeliveryRecord extends DeliveryView {
  account: string;
}

const DELIVERY_KEY = 'webhook-delivery:';
export const deliveryKey = (id: string) => `${DELIVERY_KEY}${id}`;
export const deliveriesSet = (webhookId: string) => `webhook-deliveries:${webhookId}`;
/** Deliveries waiting for an attempt: members `{due ms, zero-padded}:{dlv}`, scored by the due time. */
export const DUE_SET = 'webhook-due';

const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/**
 * The delivery of one event to one webhook: derived, not random, so that whoever fans the event out (the process that
 * made the change, or a recovering one) names it the same, and the receiver sees one id on every retry.
 */
export function deliveryId(eventId: string, webhookId: string): string {
  const digest = createHash('sha256').update(`${eventId}:${webhookId}`).digest();
  let out = '';
  for (let i = 0; i < 24; i++) out += ALPHABET[(digest[i] as number) % 62];
  return ID_PREFIXES.delivery + out;
}

export function dueMember(dueMs: number, id: string): string {
  return `${String(Math.max(0, Math.floor(dueMs))).padStart(15, '0')}:${id}`;
}

export function parseDueMember(member: string): { dueMs: number; id: string } | undefined {
  const colon = member.indexOf(':');
  const dueMs = Number(member.slice(0, colon));
  return colon > 0 && Number.isFinite(dueMs) ? { dueMs, id: member.slice(colon + 1) } : undefined;
}

export function toDeliveryView({ account: _account, ...view }: DeliveryRecord): DeliveryView {
  return view;
}

/** The delivery log: one record per delivery with every attempt, listed per webhook newest first. */
export class DeliveryLog {
  constructor(
    private readonly records: RecordStore,
    private readonly index: IndexCalls,
    /** Settled deliveries expire this long after they settle. */
    private readonly retentionMs: number,
  ) {}

  get(id: string): ResultAsync<DeliveryRecord | undefined, FleetError> {
    return toAsync(this.records.get<DeliveryRecord>(deliveryKey(id)));
  }

  getMany(ids: readonly string[]): ResultAsync<(DeliveryRecord | undefined)[], FleetError> {
    return toAsync(this.records.getMany<DeliveryRecord>(ids.map(deliveryKey)));
  }

  /** Writes a delivery; a settled one gets the retention as its time to live. */
  save(record: DeliveryRecord): Ran<void, FleetError> {
    return this.records.set(deliveryKey(record.id), record, record.status === 'pending' ? undefined : this.retentionMs);
  }

  /** Deliveries not yet delivered nor given up (the due set, retries waiting included): one store call. */
  pending(): Ran<number, FleetError> {
    return this.index.count(DUE_SET);
  }

  list(webhookId: string, query: PageQuery): ResultAsync<Page<DeliveryView>, FleetError> {
    const set = deliveriesSet(webhookId);
    return toAsync(readPage<DeliveryRecord>(this.index, this.records, set, query, deliveryKey, { order: 'desc', keyPrefix: DELIVERY_KEY })).andThen(({ ids, found, total }) => {
      const data = found.filter((d): d is DeliveryRecord => d !== undefined).map(toDeliveryView);
      // Records past their retention are gone: drop their listing entries so totals stay true.
      const expired = ids.filter((_, i) => found[i] === undefined);
      const page = { data, pagination: pagination(query, total - expired.length) };
      if (expired.length === 0) return okAsync(page);
      return toAsync(this.index.commit({ remove: expired.map((member) => ({ set, member })) }))
        .andThen(okWith(() => page))
        .orElse(() => okAsync(page));
    });
  }
}
