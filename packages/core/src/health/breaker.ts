import { ok } from 'neverthrow';
import { z } from 'zod';
import type { FleetError } from '../errors/fleet-error.js';
import type { EventSource } from '../events/bus.js';
import type { RecordStore } from '../storage/records.js';
import { isoTimeSchema } from '../util/iso-time.js';
import { chain, chainMap, portCall, type Ran } from '../util/result.js';
import type { LeaseStore } from './monitor.js';
import type { ResolvedHealth } from './states.js';

/** A server's breaker as the store keeps it; absent: closed, no failure. */
interface BreakerRecord {
  /** Failures in a row since the last success. */
  failures: number;
  /** Times it opened since it last closed: the backoff doubles with each. */
  opens: number;
  /** Unix ms; `null` while closed. */
  opened_at: number | null;
  /** When a half-open probe may go, Unix ms; `null` while closed. */
  retry_at: number | null;
}

export const BREAKER_STATES = ['closed', 'open', 'half_open'] as const;

/** The breaker in a health record and the health history (docs/health.md, "The circuit breaker"). */
export const breakerViewSchema = z.strictObject({
  state: z.enum(BREAKER_STATES).describe('`open`: tool calls fail fast with 503 UPSTREAM_UNAVAILABLE; `half_open`: the next call first probes the server.'),
  consecutive_failures: z.int(),
  opened_at: isoTimeSchema.nullable(),
  retry_at: isoTimeSchema.nullable().describe('When a half-open probe may go (open), or went due (half_open).'),
});

export type BreakerView = z.output<typeof breakerViewSchema>;

/** Whether a call may go: at once, after a probe of the server (half-open, this caller won the trial), or not before `retryAt`. */
export type Admission = { go: true; trial: boolean } | { go: false; retryAt: number };

const GO: Admission = { go: true, trial: false };
const TRIAL: Admission = { go: true, trial: true };
/** A breaker read this recently, closed, is not read again before a call: a closed breaker costs a call nothing. */
const SYNC_MS = 1000;
/** How long a won half-open trial keeps the others failing fast. */
const TRIAL_MS = 30_000;
/** A breaker record outlives its server by at most a day. */
const RECORD_TTL_MS = 86_400_000;
/** At most this many servers' breakers are cached in a process; then the cache starts over. */
const MAX_CACHED = 10_000;

const breakerKey = (serverId: string) => `breaker:${serverId}`;

/**
 * The circuit breaker of every server, shared through the store's records (one record per server that failed) and
 * leases (one half-open probe across processes). After `failures` failures in a row (probes, or calls that did not
 * reach a working server) it opens: calls fail fast until `retry_at`; then one caller probes the server (half-open),
 * and one success of a probe or a call closes it for every process. A failed half-open probe opens it again for twice
 * as long, up to `maxBackoffMs`.
 *
 * Each process reads a server's record at most once a second while it is closed, and before every call while it is
 * open (so a recovery that another process saw stops the fail-fast at once). Writes are last-writer-wins: two
 * processes failing at the same instant may count one failure; a close lost to a concurrent failure is healed by the
 * next half-open probe.
 */
export class CircuitBreaker {
  private readonly cache = new Map<string, { record: BreakerRecord | undefined; readAt: number }>();

  constructor(
    private readonly records: RecordStore,
    private readonly leases: LeaseStore,
    private readonly options: ResolvedHealth['breaker'],
    private readonly now: () => number,
  ) {}

  /** Whether a call to the server may go now. */
  admit(serverId: string): Ran<Admission, FleetError> {
    if (this.options === undefined) return ok(GO);
    const cached = this.cache.get(serverId);
    if (cached !== undefined && cached.record === undefined && this.now() - cached.readAt < SYNC_MS) return ok(GO);
    return chain(this.read(serverId), (record) => {
      if (record?.retry_at === null || record?.retry_at === undefined) return ok(GO);
      const now = this.now();
      if (now < record.retry_at) return ok({ go: false, retryAt: record.retry_at });
      // Half-open: one caller over every process probes; the others keep failing fast meanwhile.
      return chainMap(
        portCall(() => this.leases.consume([{ key: `breaker:${serverId}:trial:${record.retry_at}`, limit: 1 }], now + TRIAL_MS)),
        (lease): Admission => (lease.allowed ? TRIAL : { go: false, retryAt: now + 1000 }),
      );
    });
  }

  /** A success (the server answered) or a failure (it did not, as MCP) of a probe or a call. */
  record(serverId: string, succeeded: boolean): Ran<void, FleetError> {
    if (this.options === undefined) return ok(undefined);
    if (succeeded) {
      const cached = this.cache.get(serverId);
      // Known clean (read before this call): nothing to write, the common case.
      if (cached !== undefined && cached.record === undefined) return ok(undefined);
      this.remember(serverId, undefined);
      return this.records.delete(breakerKey(serverId));
    }
    const { failures, backoffMs, maxBackoffMs } = this.options;
    return chain(this.read(serverId), (found) => {
      const now = this.now();
      const record: BreakerRecord = found === undefined ? { failures: 0, opens: 0, opened_at: null, retry_at: null } : { ...found };
      record.failures += 1;
      // Closed and past the threshold, or a failed half-open probe: open (again), each time for twice as long.
      if (record.failures >= failures && (record.retry_at === null || now >= record.retry_at)) {
        record.opens += 1;
        record.opened_at = now;
        record.retry_at = now + Math.min(maxBackoffMs, backoffMs * 2 ** Math.min(30, record.opens - 1));
      }
      this.remember(serverId, record);
      return this.records.set(breakerKey(serverId), record, RECORD_TTL_MS);
    });
  }

  /** The breaker as the health record shows it. */
  view(serverId: string): Ran<BreakerView, FleetError> {
    return chainMap(this.options === undefined ? ok(undefined) : this.read(serverId), (record): BreakerView => {
      if (record === undefined) return { state: 'closed', consecutive_failures: 0, opened_at: null, retry_at: null };
      const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());
      const state = record.retry_at === null ? 'closed' : this.now() < record.retry_at ? 'open' : 'half_open';
      return { state, consecutive_failures: record.failures, opened_at: iso(record.opened_at), retry_at: iso(record.retry_at) };
    });
  }

  /** A deleted server's breaker goes with it. */
  follow(events: EventSource): void {
    events.on('server.deleted', ({ server }) => {
      this.cache.delete(server.id);
      void this.records.delete(breakerKey(server.id));
    });
  }

  private read(serverId: string): Ran<BreakerRecord | undefined, FleetError> {
    return chainMap(this.records.get<BreakerRecord>(breakerKey(serverId), true), (record) => {
      this.remember(serverId, record);
      return record;
    });
  }

  private remember(serverId: string, record: BreakerRecord | undefined): void {
    if (this.cache.size >= MAX_CACHED && !this.cache.has(serverId)) this.cache.clear();
    this.cache.set(serverId, { record, readAt: this.now() });
  }
}
