import { FleetError } from '../errors/fleet-error.js';
import { backoffDelay } from '../util/backoff.js';

export interface CrashBackoffOptions {
  /** Wait after the first crash before the next spawn. @default 1000 */
  initialMs?: number;
  /** Longest wait; it doubles with each crash in a row up to this. @default 60000 */
  maxMs?: number;
  /**
   * A process that exits on its own sooner than this after its start counts as a crash, as does a failed spawn.
   * @default 10000
   */
  windowMs?: number;
}

interface CrashRecord {
  /** The configuration that crashed: another one starts afresh. */
  identity: string;
  failures: number;
  retryAt: number;
  /** How the last attempt ended (`ManagedProcess.exitSummary`), for the refusal's message. */
  detail: (() => string | undefined) | undefined;
}

/**
 * Crash-loop backoff per server: after crashes in a row, spawns of that server are refused until a wait has passed
 * that doubles with each crash, up to `maxMs`. A changed configuration, or a process that ran longer than the
 * window, ends the history.
 */
export class CrashBackoff {
  private readonly crashes = new Map<string, CrashRecord>();

  constructor(
    private readonly settings: Required<CrashBackoffOptions>,
    private readonly now: () => number,
  ) {}

  /** Why a spawn of this configuration must wait now, or `undefined` when it may go ahead. */
  refusal(serverId: string, identity: string): FleetError | undefined {
    const crash = this.crashes.get(serverId);
    if (crash === undefined) return undefined;
    if (crash.identity !== identity) {
      this.crashes.delete(serverId);
      return undefined;
    }
    const retryAfterMs = crash.retryAt - this.now();
    if (retryAfterMs <= 0) return undefined;
    const detail = crash.detail?.();
    const last = detail === undefined ? '' : ` (last start: ${detail})`;
    return new FleetError('UPSTREAM_UNREACHABLE', {
      message: `The stdio server keeps crashing${last}; the next start is allowed in ${retryAfterMs} ms.`,
      retryAfterMs,
    });
  }

  /** A failed spawn, or an exit inside the window; `detail` says how it ended (read when a refusal is written, once stderr is drained). */
  recordCrash(serverId: string, identity: string, detail?: () => string | undefined): void {
    const previous = this.crashes.get(serverId);
    const failures = previous?.identity === identity ? previous.failures + 1 : 1;
    // No jitter: one supervisor waits on its own process, there is no crowd to spread.
    const delay = backoffDelay(failures, { baseMs: this.settings.initialMs, maxMs: this.settings.maxMs, factor: 2, jitter: [1, 1] });
    this.crashes.set(serverId, { identity, failures, retryAt: this.now() + delay, detail });
  }

  /** A process that exited on its own: a crash if it ran shorter than the window, else the end of the history. */
  exited(serverId: string, identity: string, startedAt: number, detail?: () => string | undefined): void {
    if (this.now() - startedAt < this.settings.windowMs) this.recordCrash(serverId, identity, detail);
    else this.forget(serverId);
  }

  forget(serverId: string): void {
    this.crashes.delete(serverId);
  }

  clear(): void {
    this.crashes.clear();
  }
}
