import type { ChildProcessWithoutNullStreams } from 'node:child_process';
import { FleetError } from '../errors/fleet-error.js';
import type { GroupLeader } from './process-group.js';

/** How a process ended. `exited`: on its own; the others: the supervisor stopped it. */
export type StdioExitReason = 'exited' | 'stopped' | 'idle' | 'restarted' | 'closed';

export interface StdioExit {
  code: number | null;
  signal: NodeJS.Signals | null;
  reason: StdioExitReason;
}

/** One live server process, shared by everyone who acquires that server. The supervisor owns its lifetime. */
export interface StdioChannel {
  readonly account: string;
  readonly serverId: string;
  readonly pid: number;
  /** Unix ms. */
  readonly startedAt: number;
  /** True until the supervisor starts stopping it or it exits. */
  readonly alive: boolean;
  /** Writes to the process's stdin; resolves once handed to the OS. Counts as activity for the idle timeout. */
  write(data: string | Uint8Array): Promise<void>;
  /** Every chunk the process writes to stdout, as it comes (no framing). Returns the unsubscribe function. */
  onData(listener: (chunk: Buffer) => void): () => void;
  /** Called once when the process has exited and its stdout is drained; at once if it already has. */
  onExit(listener: (exit: StdioExit) => void): () => void;
  /** Resolves as `onExit` fires. */
  readonly exited: Promise<StdioExit>;
  /** The latest bytes of stderr, for diagnostics. May quote anything the process printed: do not show it to callers. */
  stderrTail(): string;
}

export interface StdioProcessInfo {
  account: string;
  serverId: string;
  pid: number;
  startedAt: number;
  state: 'starting' | 'live' | 'stopping' | 'exited';
}

/**
 * A spawned server process as its users see it (a `StdioChannel`): its stdout fanned out to listeners, the latest
 * bytes of its stderr, and one exit told once both pipes are drained. The supervisor decides when it ends.
 */
export class ManagedProcess implements StdioChannel, GroupLeader {
  state: StdioProcessInfo['state'] = 'starting';
  stopReason: StdioExitReason | undefined;
  lastActivity: number;
  idleTimer: NodeJS.Timeout | undefined;
  leaderExit: { code: number | null; signal: NodeJS.Signals | null } | undefined;
  /** The group cleanup, started once; resolves when the process is forgotten. */
  cleanup: Promise<void> | undefined;
  readonly startedAt: number;
  readonly exited: Promise<StdioExit>;
  /** stdout and stderr: both must be drained before the exit is told, or their last bytes could be missed. */
  private openStreams = 2;
  private released = false;
  private exit: StdioExit | undefined;
  private resolveExited!: (exit: StdioExit) => void;
  private readonly dataListeners = new Set<(chunk: Buffer) => void>();
  private readonly exitListeners = new Set<(exit: StdioExit) => void>();
  private readonly stderr: StderrTail;

  constructor(
    readonly account: string,
    readonly serverId: string,
    readonly identity: string,
    readonly child: ChildProcessWithoutNullStreams,
    private readonly now: () => number,
    stderrBytes: number,
  ) {
    this.startedAt = now();
    this.lastActivity = this.startedAt;
    this.stderr = new StderrTail(stderrBytes);
    this.exited = new Promise((resolve) => {
      this.resolveExited = resolve;
    });
    // Errors after the start (EPIPE when the server dies mid-write, a failed kill) must never crash the host.
    const ignore = () => {};
    child.stdin.on('error', ignore);
    child.stdout.on('error', ignore);
    child.stderr.on('error', ignore);
    child.stdout.on('data', (chunk: Buffer) => {
      for (const listener of [...this.dataListeners]) listener(chunk);
    });
    const closed = () => {
      this.openStreams -= 1;
      this.notifyExitIfDone();
    };
    child.stdout.on('close', closed);
    child.stderr.on('close', closed);
    // Drained always, or a chatty server would block on a full pipe.
    child.stderr.on('data', (chunk: Buffer) => this.stderr.keep(chunk));
    child.on('error', ignore);
  }

  get pid(): number {
    return this.child.pid ?? -1;
  }

  get alive(): boolean {
    return this.state === 'live';
  }

  get leaderExited(): boolean {
    return this.leaderExit !== undefined;
  }

  get drained(): boolean {
    return this.openStreams === 0;
  }

  /** Resolves with the spawn's failure (ENOENT, a bad cwd), or `undefined` once the process runs. */
  started(): Promise<Error | undefined> {
    return new Promise((resolve) => {
      this.child.once('spawn', () => resolve(undefined));
      this.child.once('error', resolve);
    });
  }

  touch(): void {
    this.lastActivity = this.now();
  }

  write(data: string | Uint8Array): Promise<void> {
    if (this.state !== 'live') return Promise.reject(new FleetError('UPSTREAM_UNREACHABLE', { message: 'The stdio server is not running.' }));
    this.touch();
    return new Promise((resolve, reject) => {
      this.child.stdin.write(data, (error) => {
        if (error) reject(new FleetError('UPSTREAM_UNREACHABLE', { message: 'Writing to the stdio server failed.', cause: error }));
        else resolve();
      });
    });
  }

  onData(listener: (chunk: Buffer) => void): () => void {
    this.dataListeners.add(listener);
    return () => this.dataListeners.delete(listener);
  }

  onExit(listener: (exit: StdioExit) => void): () => void {
    const exit = this.exit;
    if (exit !== undefined) {
      queueMicrotask(() => listener(exit));
      return () => {};
    }
    this.exitListeners.add(listener);
    return () => this.exitListeners.delete(listener);
  }

  stderrTail(): string {
    return this.stderr.text();
  }

  /** The end of the process: its pipes are closed and its exit is told, drained or not (the cleanup stopped waiting). */
  release(): void {
    this.state = 'exited';
    this.released = true;
    this.child.stdin.destroy();
    this.child.stdout.destroy();
    this.child.stderr.destroy();
  }

  /** Tells the listeners once the leader has exited and its output is drained (or the process was released). */
  notifyExitIfDone(): void {
    if (this.exit !== undefined) return;
    if (!(this.leaderExited && this.drained) && !this.released) return;
    const exit: StdioExit = {
      code: this.leaderExit?.code ?? null,
      signal: this.leaderExit?.signal ?? null,
      reason: this.stopReason ?? 'exited',
    };
    this.exit = exit;
    this.dataListeners.clear();
    const listeners = [...this.exitListeners];
    this.exitListeners.clear();
    this.resolveExited(exit);
    for (const listener of listeners) listener(exit);
  }

  info(): StdioProcessInfo {
    return { account: this.account, serverId: this.serverId, pid: this.pid, startedAt: this.startedAt, state: this.state };
  }
}

/** The latest `limit` bytes of a stream, kept as the chunks came (a ring of chunks, trimmed from the front). */
class StderrTail {
  private readonly chunks: Buffer[] = [];
  private size = 0;

  constructor(private readonly limit: number) {}

  keep(chunk: Buffer): void {
    if (this.limit === 0) return;
    const kept = chunk.length > this.limit ? chunk.subarray(chunk.length - this.limit) : chunk;
    this.chunks.push(kept);
    this.size += kept.length;
    while (this.size > this.limit) {
      const first = this.chunks[0] as Buffer;
      const excess = this.size - this.limit;
      if (first.length <= excess) {
        this.chunks.shift();
        this.size -= first.length;
      } else {
        this.chunks[0] = first.subarray(excess);
        this.size -= excess;
      }
    }
  }

  text(): string {
    return Buffer.concat(this.chunks).toString('utf8');
  }
}
