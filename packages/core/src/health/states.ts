import type { RecordedFailure } from '../errors/fleet-error.js';
import type { Health } from '../registry/schema.js';
import { checkOption, integerIn, numberIn, positiveInteger } from '../util/options.js';

/** The thresholds that turn probes and calls into a health state, and the circuit breaker's (docs/health.md). */
export interface HealthOptions {
  /** A probe slower than this makes the server `degraded` (rule `slow_probe`), in ms. @default 2000 */
  degradedLatencyMs?: number;
  /**
   * A share of failed requests (probes and tool calls) above this, over `errorRateWindowMs`, makes the server
   * `degraded` (rule `error_rate`): one call in three failing is 0.33. @default 0.1
   */
  degradedErrorRate?: number;
  /** How far back the error rate of the `error_rate` rule looks, in ms, counted in whole five-minute buckets. @default 900000 (15 min) */
  errorRateWindowMs?: number;
  /** Fewer requests than this in the window decide nothing by error rate. @default 3 */
  errorRateMinRequests?: number;
  /**
   * Probes in a row that must observe a new state before the server's `health` changes and `server.health_changed`
   * is announced (the first probe of a server, from `unknown`, is announced at once). 1 announces every change.
   * @default 2
   */
  announceAfter?: number;
  /** The circuit breaker of each server, shared through the store; `false` turns it off. @default {} */
  breaker?: BreakerOptions | false;
}

export interface BreakerOptions {
  /** Failures in a row (probes or calls that did not reach a working server) that open the breaker. @default 5 */
  failures?: number;
  /** How long the breaker stays open the first time before a half-open probe, in ms; doubles each time it reopens. @default 30000 */
  backoffMs?: number;
  /** The cap of that wait, in ms. @default 600000 (10 min) */
  maxBackoffMs?: number;
}

export interface ResolvedHealth {
  degradedLatencyMs: number;
  degradedErrorRate: number;
  errorRateWindowMs: number;
  errorRateMinRequests: number;
  announceAfter: number;
  /** `undefined`: no breaker. */
  breaker: Required<BreakerOptions> | undefined;
}

export function resolveHealth(options: HealthOptions = {}): ResolvedHealth {
  const breaker = options.breaker === false ? undefined : (options.breaker ?? {});
  const backoffMs = breaker === undefined ? 0 : checkOption('health.breaker.backoffMs', breaker.backoffMs ?? 30_000, integerIn(1));
  return {
    degradedLatencyMs: checkOption('health.degradedLatencyMs', options.degradedLatencyMs ?? 2000, integerIn(1)),
    degradedErrorRate: checkOption('health.degradedErrorRate', options.degradedErrorRate ?? 0.1, numberIn(0, 1, { belowMax: true })),
    errorRateWindowMs: checkOption('health.errorRateWindowMs', options.errorRateWindowMs ?? 900_000, integerIn(300_000, 86_400_000)),
    errorRateMinRequests: checkOption('health.errorRateMinRequests', options.errorRateMinRequests ?? 3, positiveInteger),
    announceAfter: checkOption('health.announceAfter', options.announceAfter ?? 2, integerIn(1, 100)),
    breaker:
      breaker === undefined
        ? undefined
        : {
            failures: checkOption('health.breaker.failures', breaker.failures ?? 5, integerIn(1, 1000)),
            backoffMs,
            maxBackoffMs: checkOption('health.breaker.maxBackoffMs', breaker.maxBackoffMs ?? 600_000, integerIn(backoffMs)),
          },
  };
}

/** The rule that decided a state (`state_reason`), in the order they are tried. */
export const STATE_REASONS = ['not_probed', 'auth_rejected', 'probe_failed', 'slow_probe', 'error_rate', 'probe_ok'] as const;
export type StateReason = (typeof STATE_REASONS)[number];

/** The rule a held state comes from when nothing else says (a state set directly, a record written before reasons). */
export const REASON_OF: Record<Health, StateReason> = { unknown: 'not_probed', healthy: 'probe_ok', degraded: 'error_rate', unhealthy: 'probe_failed', auth_failed: 'auth_rejected' };

export interface Observation {
  status: Health;
  reason: StateReason;
}

/** What the state rules read: the probe just made, and the requests of the error-rate window (that probe counted). */
export interface StateInputs {
  probe: { ok: boolean; responseTimeMs: number; error: RecordedFailure | null };
  window: { requests: number; failures: number };
}

/**
 * The state a probe observes, by the first rule that holds: the server refused our credentials (`auth_rejected`:
 * `auth_failed`); it did not answer as MCP (`probe_failed`: `unhealthy`); it answered slower than `degradedLatencyMs`
 * (`slow_probe`) or failed more than `degradedErrorRate` of the window's requests (`error_rate`): `degraded`;
 * otherwise `healthy` (`probe_ok`).
 */
export function observe({ probe, window }: StateInputs, thresholds: ResolvedHealth): Observation {
  if (!probe.ok) return probe.error?.code === 'UPSTREAM_AUTH_FAILED' ? { status: 'auth_failed', reason: 'auth_rejected' } : { status: 'unhealthy', reason: 'probe_failed' };
  if (probe.responseTimeMs > thresholds.degradedLatencyMs) return { status: 'degraded', reason: 'slow_probe' };
  if (window.requests >= thresholds.errorRateMinRequests && window.failures / window.requests > thresholds.degradedErrorRate) return { status: 'degraded', reason: 'error_rate' };
  return { status: 'healthy', reason: 'probe_ok' };
}

/** A state observed but not yet held for `announceAfter` probes. */
export interface Pending {
  status: Health;
  reason: StateReason;
  probes: number;
}

/**
 * Anti-flap: whether `observed` becomes the server's announced state now, given the state it holds and what the
 * previous probes observed. From `unknown` at once; otherwise after `announceAfter` probes in a row observed it.
 */
export function hold(held: Health, observed: Observation, pending: Pending | undefined, announceAfter: number): { announce: boolean; pending: Pending | undefined } {
  if (observed.status === held) return { announce: false, pending: undefined };
  const probes = (pending?.status === observed.status ? pending.probes : 0) + 1;
  if (held === 'unknown' || probes >= announceAfter) return { announce: true, pending: undefined };
  return { announce: false, pending: { status: observed.status, reason: observed.reason, probes } };
}
