import type { ServerRegistry } from '../registry/registry.js';
import type { ServerRecord } from '../registry/views.js';
import type { HealthService } from './health-service.js';
import { checkOption, integerIn, numberIn, positiveInteger } from '../util/options.js';

/**
 * Where leases are taken: one counter of limit 1 per server and interval, consumed atomically. Any `RateLimitStore`
 * is one; the fleet passes its store's `leases`, so processes that share a store share leases.
 */
export interface LeaseStore {
  consume(counters: readonly { key: string; limit: number }[], expiresAt: number): { allowed: boolean } | Promise<{ allowed: boolean }>;
}

export interface HealthMonitorOptions {
  /** Time between two rounds over every server, in ms. @default 60000 */
  intervalMs?: number;
  /** Probes running at once in this process. @default 4 */
  concurrency?: number;
  /**
   * Each round starts up to this share of `intervalMs` after its interval window opens (a window is `intervalMs`
   * long, from the epoch), so processes and servers spread out while every round has a window of its own: two rounds
   * are `intervalMs` apart, give or take this share. @default 0.1
   */
  jitter?: number;
}

/**
 * When the round after `now` is due: in the next interval window, `random` (in [0, 1)) of the jitter share after it
 * opens. Answers the delay and the window, which names the round's leases. A round scheduled from inside window `w`
 * runs in `w + 1`, so no two rounds of a process share a window (and its leases), whatever the jitter drew.
 */
export function nextRound(now: number, intervalMs: number, jitter: number, random: number): { delayMs: number; window: number } {
  const window = Math.floor(now / intervalMs) + 1;
  return { delayMs: window * intervalMs + Math.floor(intervalMs * jitter * random) - now, window };
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
  /** At most this many lanes probe servers of one account, so that its slow servers cannot hold up everyone else's. */
  private readonly accountLanes: number;
  private timer: NodeJS.Timeout | undefined;
  private readonly rounds = new Set<Promise<number>>();
  private stopped = true;
  /** Lanes: the probes in flight in this process, whatever round started them, by server id with its account. */
  private readonly probing = new Map<string, string>();
  private readonly lanesOf = new Map<string, number>();
  private waiting: (() => void)[] = [];

  constructor(
    private readonly deps: HealthMonitorDeps,
    options: HealthMonitorOptions,
  ) {
    this.intervalMs = checkOption('monitor.intervalMs', options.intervalMs ?? 60_000, integerIn(1000));
    this.concurrency = checkOption('monitor.concurrency', options.concurrency ?? 4, positiveInteger);
    this.jitter = checkOption('monitor.jitter', options.jitter ?? 0.1, numberIn(0, 0.5));
    this.accountLanes = Math.max(1, Math.floor(this.concurrency / 2));
  }

  start(): void {
    if (!this.stopped) return;
    this.stopped = false;
    this.schedule();
  }

  /** Stops scheduling and waits for the rounds in progress. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await Promise.all([...this.rounds].map((round) => round.catch(() => 0)));
  }

  /**
   * One round now: probes each server whose lease for this interval this process wins, skipping those whose probe of
   * an earlier round is still under way. Resolves to how many it probed, once its probes are done.
   */
  round(window?: number): Promise<number> {
    const run: Promise<number> = this.probeAll(window ?? Math.floor(this.deps.now() / this.intervalMs)).finally(() => this.rounds.delete(run));
    this.rounds.add(run);
    return run;
  }

  private schedule(): void {
    const { delayMs, window } = nextRound(this.deps.now(), this.intervalMs, this.jitter, Math.random());
    this.timer = setTimeout(() => {
      // The next round is due on time whatever this one waits for: a slow server holds a lane, never the schedule.
      // Its leases are those of the window it was scheduled in, or of the one it runs in if the timer fired after
      // that window closed (`probe`).
      void this.round(window).catch(this.deps.onError);
      if (!this.stopped) this.schedule();
    }, Math.max(0, delayMs));
    // The monitor never keeps the host process alive on its own.
    this.timer.unref();
  }

  /**
   * Starts probes on free lanes, in the order of the servers, never more than half the lanes for one account, and
   * each as soon as a lane is free; reads the servers a page at a time, as the lanes need them.
   */
  private async probeAll(interval: number): Promise<number> {
    let probed = 0;
    const mine = new Set<Promise<void>>();
    const pending: ServerRecord[] = [];
    let offset = 0;
    let exhausted = false;
    while (!this.stoppedMidRound()) {
      if (!exhausted && pending.length < this.concurrency) {
        const page = await this.deps.registry.everyServer(offset, PAGE);
        if (page.isErr()) throw page.error;
        offset += PAGE;
        exhausted = page.value.length < PAGE;
        pending.push(...page.value.filter((server) => !this.probing.has(server.id)));
      }
      for (let i = 0; i < pending.length && this.probing.size < this.concurrency; ) {
        const server = pending[i] as ServerRecord;
        if ((this.lanesOf.get(server.account) ?? 0) >= this.accountLanes || this.probing.has(server.id)) {
          i += 1;
          continue;
        }
        pending.splice(i, 1);
        const probe: Promise<void> = this.probe(server, interval)
          .then((done) => {
            if (done) probed += 1;
          })
          .finally(() => mine.delete(probe));
        mine.add(probe);
      }
      if (pending.length === 0 && exhausted) break;
      // Lanes full, or what is left waits for its account's lanes: wait for any lane to free up.
      if (this.probing.size > 0 && (pending.length > 0 || exhausted)) await new Promise<void>((resolve) => this.waiting.push(resolve));
    }
    await Promise.all([...mine]);
    return probed;
  }

  /**
   * One server's probe on a lane, if this process wins its lease. True when it probed. The lease is the round's
   * window's, or the window the clock is in when that one has closed (a timer that fired late on a loaded machine, a
   * round longer than its interval): a lease of a closed window would expire as it is taken, so another process
   * could take it again, and the probe would not count for the window it really runs in.
   */
  private async probe(server: ServerRecord, interval: number): Promise<boolean> {
    this.probing.set(server.id, server.account);
    this.lanesOf.set(server.account, (this.lanesOf.get(server.account) ?? 0) + 1);
    try {
      const window = Math.max(interval, Math.floor(this.deps.now() / this.intervalMs));
      const lease = await this.deps.leases.consume([{ key: `monitor:${server.id}:${window}`, limit: 1 }], (window + 1) * this.intervalMs);
      if (!lease.allowed) return false;
      const checked = await this.deps.health.check(server.account, server.id);
      // A server deleted meanwhile is simply gone; anything else is the embedder's to hear about.
      if (checked.isErr() && checked.error.code !== 'SERVER_NOT_FOUND') this.deps.onError(checked.error);
      return checked.isOk();
    } catch (error) {
      this.deps.onError(error);
      return false;
    } finally {
      this.probing.delete(server.id);
      const lanes = (this.lanesOf.get(server.account) ?? 1) - 1;
      if (lanes === 0) this.lanesOf.delete(server.account);
      else this.lanesOf.set(server.account, lanes);
      for (const wake of this.waiting.splice(0)) wake();
    }
  }

  /** A stop() during a round lets the probes under way finish and starts no new one. */
  private stoppedMidRound(): boolean {
    return this.stopped && this.timer !== undefined;
  }
}
