import { errAsync, ok, okAsync, ResultAsync } from 'neverthrow';
import { FleetError } from '../errors/fleet-error.js';
import type { ServerRegistry } from '../registry/registry.js';
import type { ServerRecord } from '../registry/views.js';
import type { UpstreamFailure } from '../errors/fleet-error.js';
import type { HealthHistory, HealthLog, HealthRecord } from './health-log.js';
import { probeChannel } from '../trace/channels.js';
import { publishProbe } from '../trace/publish.js';
import { both, chain, toAsync } from '../util/result.js';
import type { CircuitBreaker } from './breaker.js';
import { hold, observe, REASON_OF, type ResolvedHealth } from './states.js';

/** What one probe found. A prober never throws: every failure is an outcome with an upstream error code. */
export interface ProbeOutcome {
  ok: boolean;
  /** The protocol revision family that answered (`2025` or `2026-07-28`), remembered for the next probe. */
  era: string | undefined;
  responseTimeMs: number;
  error: UpstreamFailure | null;
}

/** Probes one server now, over its transport, with its authentication, within its `timeout`. */
export type Prober = (server: ServerRecord, rememberedEra: string | undefined) => Promise<ProbeOutcome>;

export interface HealthServiceDeps {
  registry: ServerRegistry;
  log: HealthLog;
  prober: Prober;
  breaker: CircuitBreaker;
  /** The state rules' thresholds (`health` option). */
  thresholds: ResolvedHealth;
  now: () => number;
}

/** Runs probes, records them, and moves the server's `health` (the registry announces the change). */
export class HealthService {
  constructor(private readonly deps: HealthServiceDeps) {}

  /**
   * Probes the server now and answers its health record (the probe itself counted): the state it observes
   * (`health/states.ts`), held once it has held for `announceAfter` probes (the registry then announces the change),
   * and the breaker told of the outcome.
   */
  check(account: string, id: string): ResultAsync<HealthRecord, FleetError> {
    const { registry, log, breaker, thresholds } = this.deps;
    // The probe connects: the one place here that opens the server's secrets.
    return toAsync(registry.getRevealed(account, id)).andThen((server) =>
      toAsync(log.last(id)).andThen((last) =>
        this.probe(server, last?.era).andThen((outcome) => {
          const at = this.deps.now();
          const attempt = { kind: 'probe', ok: outcome.ok, at, responseTimeMs: outcome.responseTimeMs, error: outcome.error, era: outcome.era } as const;
          // A server that answers but refuses our credentials is not broken: it is not a failure the breaker counts.
          const reached = outcome.ok || outcome.error?.code !== 'UPSTREAM_AUTH_FAILED';
          return toAsync(
            chain(both(log.window(id, thresholds.errorRateWindowMs), reached ? breaker.record(id, outcome.ok) : ok(undefined)), ([window]) => {
              const observed = observe({ probe: attempt, window: { requests: window.requests + 1, failures: window.failures + (outcome.ok ? 0 : 1) } }, thresholds);
              const decided = hold(server.health, observed, last?.pending, thresholds.announceAfter);
              const heldReason = last?.status === server.health && last.reason !== undefined ? last.reason : REASON_OF[server.health];
              const held = decided.announce || observed.status === server.health ? { ...observed, pending: undefined } : { status: server.health, reason: heldReason, pending: decided.pending };
              return chain(log.record(id, attempt, held), () =>
                // A change of health is written with its `server.health_changed` event.
                decided.announce ? registry.setHealth(account, id, observed.status, outcome.error, observed.reason) : okAsync(server),
              );
            }),
          )
            .andThen(() => this.read(id))
            // The probe was written just above: only a store that loses writes could answer nothing.
            .andThen((record) => (record === undefined ? errAsync(new FleetError('INTERNAL_ERROR')) : okAsync(record)));
        }),
      ),
    );
  }

  /** The health record after the latest probe, with the breaker, without probing; `undefined` before the first probe. */
  private read(id: string): ResultAsync<HealthRecord | undefined, FleetError> {
    return this.deps.log.read(id).andThen((record) => toAsync(this.deps.breaker.view(id)).map((breaker) => (record === undefined ? undefined : { ...record, breaker })));
  }

  /** The server's last 24 hours (`GET /servers/{id}/health/history`), without probing it. */
  history(account: string, id: string): ResultAsync<HealthHistory, FleetError> {
    const { registry, log, breaker } = this.deps;
    return toAsync(registry.get(account, id)).andThen(() => log.history(id).andThen((history) => toAsync(breaker.view(id)).map((view) => ({ ...history, breaker: view }))));
  }

  private probe(server: ServerRecord, era: string | undefined): ResultAsync<ProbeOutcome, FleetError> {
    const started = this.deps.now();
    const outcome = this.deps.prober(server, era).catch(
      (): ProbeOutcome => ({
        ok: false,
        era,
        responseTimeMs: Math.max(0, Math.round(this.deps.now() - started)),
        // A prober bug must not become a 500 that hides the server's state; it is a failed probe.
        error: { code: 'UPSTREAM_PROTOCOL_ERROR', message: 'The probe failed unexpectedly.' },
      }),
    );
    return ResultAsync.fromSafePromise(probeChannel.hasSubscribers ? outcome.then((done) => publishProbe(server, done)) : outcome);
  }
}
