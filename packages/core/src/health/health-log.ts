import { ok, okAsync, type ResultAsync } from 'neverthrow';
import { z } from 'zod';
import { type FleetError, type RecordedFailure, recordedFailureSchema } from '../errors/fleet-error.js';
import { isoTimeSchema } from '../util/iso-time.js';
import type { EventSource } from '../events/bus.js';
import type { RecordStore } from '../storage/records.js';
import { KeyedMutex } from '../util/keyed-mutex.js';
import { okWith, type Ran, chain, chainMap, toAsync } from '../util/result.js';

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

/** The health record of docs/http-api.md "Health". */
export const healthRecordSchema = z.strictObject({
  status: z.enum(['healthy', 'unhealthy']),
  response_time: z.number(),
  last_check: isoTimeSchema,
  uptime: z.string().describe('A percentage, e.g. "99.5%".'),
  error_rate: z.string().describe('A percentage, e.g. "0.5%".'),
  error: recordedFailureSchema.nullable(),
});

export type HealthRecord = z.output<typeof healthRecordSchema>;

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
});

export type HealthBucket = z.output<typeof healthBucketSchema>;

/** The last 24 hours of a server: uptime and error rate as in its health record, and the buckets they come from. */
export const healthHistorySchema = z.strictObject({
  uptime: z.string(),
  error_rate: z.string(),
  /** Oldest first; five minutes each; only those in which something happened. */
  buckets: z.array(healthBucketSchema),
});

export type HealthHistory = z.output<typeof healthHistorySchema>;

/** Counts of one five-minute bucket. */
interface Bucket {
  probes: number;
  probesOk: number;
  requests: number;
  failures: number;
}

interface LastProbe {
  ok: boolean;
  era?: string | undefined;
  response_time: number;
  last_check: string;
  error: RecordedFailure | null;
}

const BUCKET_MS = 5 * 60_000;
const DAY_MS = 24 * 60 * 60_000;
/** Buckets are kept a little longer than the day they describe, then expire in storage. */
const BUCKET_TTL_MS = DAY_MS + 2 * BUCKET_MS;

const bucketKey = (serverId: string, index: number) => `health:${serverId}:b:${index}`;
const lastKey = (serverId: string) => `health:${serverId}:last`;

/** `0.995` → `"99.5%"`: up to two decimals, no trailing zeros. */
/** `found` (a copy, or nothing yet) with one more attempt counted. */
function withAttempt(found: Bucket | undefined, attempt: Attempt): Bucket {
  const bucket = found ?? { probes: 0, probesOk: 0, requests: 0, failures: 0 };
  bucket.requests += 1;
  if (!attempt.ok) bucket.failures += 1;
  if (attempt.kind === 'probe') {
    bucket.probes += 1;
    if (attempt.ok) bucket.probesOk += 1;
  }
  return bucket;
}

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

  constructor(
    private readonly records: RecordStore,
    private readonly now: () => number,
  ) {}

  /**
   * Counts an attempt; a probe also becomes the server's latest. One count of a server at a time in this process; at
   * once over the fleet's own memory when no other count of it is under way.
   */
  record(serverId: string, attempt: Attempt): Ran<void, FleetError> {
    return this.mutex.exclusive(serverId, () => {
      const key = bucketKey(serverId, Math.floor(attempt.at / BUCKET_MS));
      // The bucket read is a copy of its own: counted in place and handed over.
      const counted = chain(this.records.get<Bucket>(key), (found) => this.records.set(key, withAttempt(found, attempt), BUCKET_TTL_MS, true));
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
          } satisfies LastProbe),
        ),
      );
    });
  }

  /** The protocol era the server last answered with, if any. */
  eraOf(serverId: string): Ran<string | undefined, FleetError> {
    return chainMap(this.records.get<LastProbe>(lastKey(serverId), true), (last) => last?.era);
  }

  /** The health record after the latest probe, or `undefined` before the first. */
  read(serverId: string): ResultAsync<HealthRecord | undefined, FleetError> {
    return toAsync(this.records.get<LastProbe>(lastKey(serverId))).andThen((last) => {
      if (last === undefined) return okAsync(undefined);
      return this.history(serverId).andThen(
        okWith(({ uptime, error_rate }) =>
          ({
            status: last.ok ? 'healthy' : 'unhealthy',
            response_time: last.response_time,
            last_check: last.last_check,
            uptime,
            error_rate,
            error: last.error,
          }) satisfies HealthRecord),
      );
    });
  }

  /** The last 24 hours in five-minute buckets, with the uptime and error rate they add up to. */
  history(serverId: string): ResultAsync<HealthHistory, FleetError> {
    const now = this.now();
    const newest = Math.floor(now / BUCKET_MS);
    const oldest = Math.floor((now - DAY_MS) / BUCKET_MS);
    const keys: string[] = [];
    for (let index = oldest; index <= newest; index++) keys.push(bucketKey(serverId, index));
    return toAsync(this.records.getMany<Bucket>(keys)).andThen(okWith((found) => {
      const sum = { probes: 0, probesOk: 0, requests: 0, failures: 0 };
      const buckets: HealthBucket[] = [];
      found.forEach((bucket, i) => {
        if (bucket === undefined) return;
        sum.probes += bucket.probes;
        sum.probesOk += bucket.probesOk;
        sum.requests += bucket.requests;
        sum.failures += bucket.failures;
        const start = new Date((oldest + i) * BUCKET_MS).toISOString();
        buckets.push({ start, probes: bucket.probes, healthy: bucket.probesOk, requests: bucket.requests, failures: bucket.failures });
      });
      return {
        uptime: formatPercent(sum.probes === 0 ? 0 : sum.probesOk / sum.probes),
        error_rate: formatPercent(sum.requests === 0 ? 0 : sum.failures / sum.requests),
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
