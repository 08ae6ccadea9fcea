import { ok, okAsync, type ResultAsync } from 'neverthrow';
import { z } from 'zod';
import type { FleetError, RecordedFailure } from '../errors/fleet-error.js';
import { isoTimeSchema } from '../util/iso-time.js';
import type { EventSource } from '../events/bus.js';
import type { RecordStore } from '../storage/records.js';
import { KeyedMutex } from '../util/keyed-mutex.js';
import { kept } from '../util/key-memo.js';
import { okWith, type Ran, chain, chainMap, toAsync } from '../util/result.js';
import { HEALTH_VALUES, type Health } from '../registry/schema.js';
import { breakerViewSchema } from './breaker.js';
import { addDigest, type LatencyDigest, percentiles, withSample } from './latency-digest.js';
import { type Pending, REASON_OF, STATE_REASONS, type StateReason } from './states.js';

/** One request the service made to a server: a probe, or (with tool calls) a call. */
export interface Attempt {
  kind: 'probe' | 'call';
  ok: boolean;
  /** When it ended, Unix ms. */
  at: number;
  /** Whole milliseconds. */
  responseTimeMs: number;
  error: RecordedFailure | null;
  /** Probes: the protocol revision family that answered, remembered for the next probe. */
  era?: string | undefined;
}

/** The state a server holds after a probe, and what decided it (docs/health.md). */
export interface HeldState {
  status: Health;
  reason: StateReason;
  /** A different state the latest probes observed, not yet held for `health.announceAfter` probes. */
  pending: Pending | undefined;
}

const pendingSchema = z
  .strictObject({
    status: z.enum(HEALTH_VALUES),
    state_reason: z.enum(STATE_REASONS),
    probes: z.int().describe('Probes in a row that observed it so far.'),
  })
  .nullable()
  .describe('A state the latest probes observed that the server does not hold yet (health.announceAfter), or null.');

/** A `RecordedFailure` as a health record carries it. */
const recordedFailureSchema = z.strictObject({
  code: z.string().describe('A code of the error table (docs/errors.md).'),
  message: z.string(),
  /** The error's `details.hint`, when it has one. */
  hint: z.string().optional(),
}) satisfies z.ZodType<RecordedFailure>;

/** The health record of docs/http-api.md "Health". */
export const healthRecordSchema = z.strictObject({
  status: z.enum(HEALTH_VALUES).describe("The state the server holds: its `health` (docs/health.md)."),
  state_reason: z.enum(STATE_REASONS).describe('The rule that decided `status` (docs/health.md, "States").'),
  pending: pendingSchema,
  response_time: z.number(),
  last_check: isoTimeSchema,
  uptime: z.string().describe('A percentage, e.g. "99.5%".'),
  error_rate: z.string().describe('A percentage, e.g. "0.5%".'),
  error: recordedFailureSchema.nullable(),
  breaker: breakerViewSchema,
});

export type HealthRecord = z.output<typeof healthRecordSchema>;

/** p50 and p95 of response times in ms, within 10% above the true value, with how many samples; null without any. */
const latencySchema = z.strictObject({ p50: z.int(), p95: z.int(), count: z.int() }).nullable();

const latencyPairSchema = z.strictObject({ probe: latencySchema, call: latencySchema });

/** One five-minute bucket of `GET /servers/{id}/health/history`: what the service saw of the server then. */
export const healthBucketSchema = z.strictObject({
  /** Start of the five minutes, ISO 8601. */
  start: isoTimeSchema,
  probes: z.int(),
  /** Probes that succeeded. */
  healthy: z.int(),
  /** Requests of any kind (probes and tool calls). */
  requests: z.int(),
  failures: z.int(),
  /** The state the server held after the last probe of these five minutes; null when none probed it. */
  status: z.enum(HEALTH_VALUES).nullable(),
  /** Response times of the probes and of the tool calls of these five minutes. */
  latency: latencyPairSchema,
});

export type HealthBucket = z.output<typeof healthBucketSchema>;

/** The last 24 hours of a server: uptime and error rate as in its health record, and the buckets they come from. */
export const healthHistorySchema = z.strictObject({
  /** The state the server holds after its latest probe (`unknown` before the first), and the rule that decided it. */
  status: z.enum(HEALTH_VALUES),
  state_reason: z.enum(STATE_REASONS),
  uptime: z.string(),
  error_rate: z.string(),
  /** p50/p95 of probe and call times over the last hour and the last 24 hours. */
  latency: z.strictObject({ last_hour: latencyPairSchema, last_day: latencyPairSchema }),
  breaker: breakerViewSchema,
  /** Oldest first; five minutes each; only those in which something happened. */
  buckets: z.array(healthBucketSchema),
});

export type HealthHistory = z.output<typeof healthHistorySchema>;

/** Counts of one five-minute bucket, and its latency digests (bounded: see latency-digest.ts). */
interface Bucket {
  probes: number;
  probesOk: number;
  requests: number;
  failures: number;
  /** The held state after the bucket's last probe. */
  status?: Health;
  probeMs?: LatencyDigest;
  callMs?: LatencyDigest;
}

export interface LastProbe {
  ok: boolean;
  era?: string | undefined;
  response_time: number;
  last_check: string;
  error: RecordedFailure | null;
  /** Absent in records written before states had reasons: the state then follows `ok`. */
  status?: Health;
  reason?: StateReason;
  pending?: Pending | undefined;
}

const BUCKET_MS = 5 * 60_000;
const DAY_MS = 24 * 60 * 60_000;
/** Buckets are kept a little longer than the day they describe, then expire in storage. */
const BUCKET_TTL_MS = DAY_MS + 2 * BUCKET_MS;

const bucketKey = (serverId: string, index: number) => `health:${serverId}:b:${index}`;
const lastKey = (serverId: string) => `health:${serverId}:last`;

/**
 * A new bucket: `found` (the stored one, or nothing yet), never changed itself, with one more attempt counted. Its
 * counts are copied, and the digest the attempt changes; the other digest is the stored one's, which nothing changes
 * (a count copies a digest before it adds to it), so the new bucket holds the same as a deep copy would.
 */
function withAttempt(found: Bucket | undefined, attempt: Attempt, held: HeldState | undefined): Bucket {
  const bucket = found === undefined ? { probes: 0, probesOk: 0, requests: 0, failures: 0 } : { ...found };
  bucket.requests += 1;
  if (!attempt.ok) bucket.failures += 1;
  if (attempt.kind === 'probe') {
    bucket.probes += 1;
    if (attempt.ok) bucket.probesOk += 1;
    bucket.probeMs = withSample(bucket.probeMs === undefined ? undefined : { ...bucket.probeMs }, attempt.responseTimeMs);
    if (held !== undefined) bucket.status = held.status;
  } else {
    bucket.callMs = withSample(bucket.callMs === undefined ? undefined : { ...bucket.callMs }, attempt.responseTimeMs);
  }
  return bucket;
}

/** The held state of a last-probe record written before states had reasons. */
function heldOf(last: LastProbe): { status: Health; reason: StateReason } {
  if (last.status !== undefined) return { status: last.status, reason: last.reason ?? REASON_OF[last.status] };
  return last.ok ? { status: 'healthy', reason: 'probe_ok' } : { status: 'unhealthy', reason: 'probe_failed' };
}

const pendingView = (pending: Pending | undefined) => (pending === undefined ? null : { status: pending.status, state_reason: pending.reason, probes: pending.probes });

/** `0.995` → `"99.5%"`: up to two decimals, no trailing zeros. */
export function formatPercent(share: number): string {
  return `${Number((share * 100).toFixed(2))}%`;
}

/**
 * What the service saw of each server over the last 24 hours, in five-minute buckets: a health request reads one
 * `getMany` of 289 small records, whatever the probe rate. Updates of one server are serialized in this process;
 * two processes probing one server at the same instant can lose one count (the monitor's lease keeps that rare).
 */
export class HealthLog {
  private readonly mutex = new KeyedMutex();
  /** The key of each server's bucket of the last count (`bucketKeyOf`); bounded as `kept` bounds it. */
  private readonly bucketKeys = new Map<string, { index: number; key: string }>();

  constructor(
    private readonly records: RecordStore,
    private readonly now: () => number,
  ) {}

  /**
   * Counts an attempt; a probe also becomes the server's latest, with the state the server holds after it (`held`).
   * One count of a server at a time in this process; at once over the fleet's own memory when no other count of it
   * is under way.
   */
  record(serverId: string, attempt: Attempt, held?: HeldState): Ran<void, FleetError> {
    return this.mutex.exclusive(serverId, () => {
      const key = this.bucketKeyOf(serverId, Math.floor(attempt.at / BUCKET_MS));
      // The bucket is read as stored (`shared`, no copy) and a new one written in its place, handed over: it shares
      // with the stored one only a digest that neither changes (`withAttempt`).
      const counted = chain(this.records.get<Bucket>(key, true), (found) => this.records.set(key, withAttempt(found, attempt, held), BUCKET_TTL_MS, true));
      if (attempt.kind !== 'probe') return counted;
      // A probe that failed learns nothing of the era: keep the one that last answered (the only case read back).
      return chain(counted, () =>
        chain(attempt.era !== undefined ? ok(attempt.era) : this.eraOf(serverId), (knownEra) =>
          this.records.set(lastKey(serverId), {
            ok: attempt.ok,
            era: knownEra,
            response_time: attempt.responseTimeMs,
            last_check: new Date(attempt.at).toISOString(),
            error: attempt.error,
            ...(held === undefined ? {} : { status: held.status, reason: held.reason, pending: held.pending }),
          } satisfies LastProbe),
        ),
      );
    });
  }

  /**
   * `bucketKey(serverId, index)`, the same string for every count of a server within one five minutes: the store looks
   * it up twice per count (read, then write), and a string made afresh must be hashed again each time.
   */
  private bucketKeyOf(serverId: string, index: number): string {
    const last = kept(this.bucketKeys, serverId, () => ({ index, key: bucketKey(serverId, index) }));
    if (last.index !== index) {
      last.index = index;
      last.key = bucketKey(serverId, index);
    }
    return last.key;
  }

  /** The protocol era the server last answered with, if any. */
  eraOf(serverId: string): Ran<string | undefined, FleetError> {
    return chainMap(this.last(serverId), (last) => last?.era);
  }

  /** The server's latest probe and the state it left, if it was ever probed. */
  last(serverId: string): Ran<LastProbe | undefined, FleetError> {
    return this.records.get<LastProbe>(lastKey(serverId), true);
  }

  /** Requests and failures of the last `windowMs`, in whole five-minute buckets (the current one included). */
  window(serverId: string, windowMs: number): Ran<{ requests: number; failures: number }, FleetError> {
    const newest = Math.floor(this.now() / BUCKET_MS);
    const keys: string[] = [];
    for (let index = newest - Math.max(1, Math.ceil(windowMs / BUCKET_MS)) + 1; index <= newest; index++) keys.push(bucketKey(serverId, index));
    return chainMap(this.records.getMany<Bucket>(keys, true), (found) => {
      const sum = { requests: 0, failures: 0 };
      for (const bucket of found) {
        sum.requests += bucket?.requests ?? 0;
        sum.failures += bucket?.failures ?? 0;
      }
      return sum;
    });
  }

  /** The health record after the latest probe (without its breaker, which the service adds), or `undefined` before the first. */
  read(serverId: string): ResultAsync<Omit<HealthRecord, 'breaker'> | undefined, FleetError> {
    return toAsync(this.records.get<LastProbe>(lastKey(serverId))).andThen((last) => {
      if (last === undefined) return okAsync(undefined);
      return this.history(serverId).andThen(
        okWith(({ uptime, error_rate }) => {
          const held = heldOf(last);
          return {
            status: held.status,
            state_reason: held.reason,
            pending: pendingView(last.pending),
            response_time: last.response_time,
            last_check: last.last_check,
            uptime,
            error_rate,
            error: last.error,
          } satisfies Omit<HealthRecord, 'breaker'>;
        }),
      );
    });
  }

  /**
   * The last 24 hours in five-minute buckets, with the uptime, error rate and latency percentiles they add up to, and
   * the state after the latest probe (without the breaker, which the service adds).
   */
  history(serverId: string): ResultAsync<Omit<HealthHistory, 'breaker'>, FleetError> {
    const now = this.now();
    const newest = Math.floor(now / BUCKET_MS);
    const oldest = Math.floor((now - DAY_MS) / BUCKET_MS);
    const hourFrom = Math.floor((now - 3_600_000) / BUCKET_MS) + 1;
    const keys: string[] = [lastKey(serverId)];
    for (let index = oldest; index <= newest; index++) keys.push(bucketKey(serverId, index));
    return toAsync(this.records.getMany<Bucket | LastProbe>(keys, true)).andThen(okWith(([lastFound, ...found]) => {
      const sum = { probes: 0, probesOk: 0, requests: 0, failures: 0 };
      const day = { probe: {} as LatencyDigest, call: {} as LatencyDigest };
      const hour = { probe: {} as LatencyDigest, call: {} as LatencyDigest };
      const buckets: HealthBucket[] = [];
      (found as (Bucket | undefined)[]).forEach((bucket, i) => {
        if (bucket === undefined) return;
        sum.probes += bucket.probes;
        sum.probesOk += bucket.probesOk;
        sum.requests += bucket.requests;
        sum.failures += bucket.failures;
        addDigest(day.probe, bucket.probeMs);
        addDigest(day.call, bucket.callMs);
        if (oldest + i >= hourFrom) {
          addDigest(hour.probe, bucket.probeMs);
          addDigest(hour.call, bucket.callMs);
        }
        const start = new Date((oldest + i) * BUCKET_MS).toISOString();
        buckets.push({
          start,
          probes: bucket.probes,
          healthy: bucket.probesOk,
          requests: bucket.requests,
          failures: bucket.failures,
          status: bucket.status ?? null,
          latency: { probe: percentiles(bucket.probeMs ?? {}), call: percentiles(bucket.callMs ?? {}) },
        });
      });
      const held = lastFound === undefined ? { status: 'unknown' as const, reason: 'not_probed' as const } : heldOf(lastFound as LastProbe);
      return {
        status: held.status,
        state_reason: held.reason,
        uptime: formatPercent(sum.probes === 0 ? 0 : sum.probesOk / sum.probes),
        error_rate: formatPercent(sum.requests === 0 ? 0 : sum.failures / sum.requests),
        latency: {
          last_hour: { probe: percentiles(hour.probe), call: percentiles(hour.call) },
          last_day: { probe: percentiles(day.probe), call: percentiles(day.call) },
        },
        buckets,
      };
    }));
  }

  /** docs/http-api.md "Server": a deleted server's health history goes with it (its buckets would expire within a day anyway). */
  follow(events: EventSource): void {
    events.on('server.deleted', ({ server }) => {
      void this.forget(server.id);
    });
  }

  /** Forgets a server's history (on delete). */
  forget(serverId: string): ResultAsync<void, FleetError> {
    const now = this.now();
    const keys = [lastKey(serverId)];
    for (let index = Math.floor((now - BUCKET_TTL_MS) / BUCKET_MS); index <= Math.floor(now / BUCKET_MS); index++) keys.push(bucketKey(serverId, index));
    return this.mutex.exclusive(serverId, () => toAsync(this.records.deleteMany(keys)));
  }
}
