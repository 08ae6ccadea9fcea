import type { ServerRegistry } from '../registry/registry.js';
import type { HealthService } from './health-service.js';
import { checkOption, integerIn, numberIn, positiveInteger } from '../util/options.js';

/**
 * Where leases are taken: one counter of limit 1 per server and interval, consumed atomically. Any `RateLimitStore`
 * is one (the fleet passes the rate limiter's), so processes that share counters share leases.
 */
export interface LeaseStore {
  consume(counters: readonly { key: string; limit: number }[], expiresAt: number): Promise<{ allowed: boolean }>;
}

export interface HealthMonitorOptions {
  /** Time between two rounds over every server, in ms. @default 60000 */
  intervalMs?: number;
  /** Probes running at once in this process. @default 4 */
  concurrency?: number;
  /** Each round starts up to this share of `intervalMs` early or late, so processes and servers spread out. @default 0.1 */
  jitter?: number;
  /**
   * Where the per-interval leases are taken, so that with several processes each server is probed by one of them
   * per interval: share one store between processes (the Redis one). @default the rate limiter's store, else memory
   */
  leases?: LeaseStore;
}

export interface HealthMonitorDeps {
  registry: ServerRegistry;
  health: HealthService;
  leases: LeaseStore;
  now: () => number;
  onError: (error: unknown) => void;
}

const PAGE = 100;

/**
 * Probes every server of every account once per interval. A lease is one counter of limit 1 per server and
 * interval in the atomic counter store: the first process to take it probes, the others skip, and the counter
 * expires with its interval.
 */
export class HealthMonitor {
  private readonly intervalMs: number;
  private readonly concurrency: number;
  private readonly jitter: number;
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<number> | undefined;
  private stopped = true;

  constructor(
    private readonly deps: HealthMonitorDeps,
    options: HealthMonitorOptions,
  ) {
    this.intervalMs = checkOption('monitor.intervalMs', options.intervalMs ?? 60_000, integerIn(1000));
    this.concurrency = checkOption('monitor.concurrency', options.concurrency ?? 4, positiveInteger);
    this.jitter = checkOption('monitor.jitter', options.jitter ?? 0.1, numberIn(0, 0.5));
  }

  start(): void {
    if (!this.stopped) return;
    this.stopped = false;
    this.schedule();
  }

  /** Stops scheduling and waits for the round in progress. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.running?.catch(() => 0);
  }

  /** One round now: probes each server whose lease for this interval this process wins. Resolves to how many. */
  round(): Promise<number> {
    const run = this.probeAll().finally(() => {
      if (this.running === run) this.running = undefined;
    });
    this.running = run;
    return run;
  }

  private schedule(): void {
    const spread = this.intervalMs * this.jitter * (Math.random() * 2 - 1);
    this.timer = setTimeout(() => {
      void this.round()
        .catch(this.deps.onError)
        .finally(() => {
          if (!this.stopped) this.schedule();
        });
    }, Math.max(0, this.intervalMs + spread));
    // The monitor never keeps the host process alive on its own.
    this.timer.unref();
  }

  private async probeAll(): Promise<number> {
    const interval = Math.floor(this.deps.now() / this.intervalMs);
    const expiresAt = (interval + 1) * this.intervalMs;
    let probed = 0;
    for (let offset = 0; !this.stoppedMidRound(); offset += PAGE) {
      const page = await this.deps.registry.everyServer(offset, PAGE);
      if (page.isErr()) throw page.error;
      const servers = page.value;
      const queue = [...servers];
      const worker = async () => {
        for (let server = queue.shift(); server !== undefined; server = queue.shift()) {
          const lease = await this.deps.leases.consume([{ key: `monitor:${server.id}:${interval}`, limit: 1 }], expiresAt);
          if (!lease.allowed) continue;
          const checked = await this.deps.health.check(server.account, server.id);
          // A server deleted meanwhile is simply gone; anything else is the embedder's to hear about.
          if (checked.isErr() && checked.error.code !== 'SERVER_NOT_FOUND') this.deps.onError(checked.error);
          else if (checked.isOk()) probed += 1;
        }
      };
      await Promise.all(Array.from({ length: Math.min(this.concurrency, queue.length) }, worker));
      if (servers.length < PAGE) break;
    }
    return probed;
  }

  /** A stop() during a round lets the probes under way finish and starts no new page. */
  private stoppedMidRound(): boolean {
    return this.stopped && this.timer !== undefined;
  }
}
