import { errAsync, okAsync, ResultAsync } from 'neverthrow';
import { FleetError } from '../errors/fleet-error.js';
import type { ServerRegistry } from '../registry/registry.js';
import type { ServerRecord } from '../registry/views.js';
import type { UpstreamFailure } from '../errors/fleet-error.js';
import type { HealthHistory, HealthLog, HealthRecord } from './health-log.js';
import { probeChannel } from '../trace/channels.js';
import { publishProbe } from '../trace/publish.js';
import { toAsync } from '../util/result.js';

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
  now: () => number;
}

/** Runs probes, records them, and moves the server's `health` (the registry announces the change). */
export class HealthService {
  constructor(private readonly deps: HealthServiceDeps) {}

  /** Probes the server now and answers its health record (the probe itself counted). */
  check(account: string, id: string): ResultAsync<HealthRecord, FleetError> {
    const { registry, log } = this.deps;
    // The probe connects: the one place here that opens the server's secrets.
    return toAsync(registry.getRevealed(account, id)).andThen((server) =>
      toAsync(log.eraOf(id)).andThen((era) =>
        this.probe(server, era).andThen((outcome) =>
          toAsync(log.record(id, { kind: 'probe', ok: outcome.ok, at: this.deps.now(), responseTimeMs: outcome.responseTimeMs, error: outcome.error, era: outcome.era }))
            // A change of health is written with its `server.health_changed` event.
            .andThen(() => registry.setHealth(account, id, outcome.ok ? 'healthy' : 'unhealthy', outcome.error))
            .andThen(() => log.read(id))
            // The probe was written just above: only a store that loses writes could answer nothing.
            .andThen((record) => (record === undefined ? errAsync(new FleetError('INTERNAL_ERROR')) : okAsync(record))),
        ),
      ),
    );
  }

  /** The server's last 24 hours (`GET /servers/{id}/health/history`), without probing it. */
  history(account: string, id: string): ResultAsync<HealthHistory, FleetError> {
    const { registry, log } = this.deps;
    return toAsync(registry.get(account, id)).andThen(() => log.history(id));
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
