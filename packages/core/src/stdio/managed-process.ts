import type { ChildProcessWithoutNullStreams } from 'node:child_process';
import { FleetError } from '../errors/fleet-error.js';
import type { Cell } from './containment.js';
import type { GroupLeader } from './process-group.js';
import type { StdioUser } from './stdio-users.js';
import { redact } from '../util/redact.js';

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
  /**
   * How the process ended, for an error: its exit code or signal and the last lines of its stderr (bounded, the
   * server's env values replaced by `[redacted]`); `undefined` while it runs.
   */
  exitSummary(): string | undefined;
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
  /** What holds the process's tree (a cgroup, a PID namespace, or its group alone). */
  cell: Cell | undefined;
  /** Who it runs as. */
  user: StdioUser | undefined;
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
    /** The server's env values: never quoted by `exitSummary`. */
    private readonly secrets: readonly string[] = [],
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

  exitSummary(): string | undefined {
    const exit = this.leaderExit;
    if (exit === undefined) return undefined;
    const how = exit.signal !== null ? `was ended by ${exit.signal}` : `exited with code ${exit.code}`;
    const lines = lastLines(scrub(this.stderr.text(), this.secrets));
    return lines === '' ? `it ${how} and wrote nothing to stderr` : `it ${how}; the last lines of its stderr: ${lines}`;
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

/** Lines of stderr quoted in an error at most, and their characters at most. */
const SUMMARY_LINES = 8;
const SUMMARY_CHARS = 1000;

/** Env values shorter than this are not scrubbed: replacing every "1" or "on" would garble the text, not hide a secret. */
const MIN_SECRET_LENGTH = 4;

/** The text with every secret (of at least MIN_SECRET_LENGTH) replaced by `[redacted]`. */
export function scrub(text: string, secrets: readonly string[]): string {
  return redact(text, secrets.filter((s) => s.length >= MIN_SECRET_LENGTH), '[redacted]');
}

/** The last non-empty lines, control characters dropped, joined by " | ", at most SUMMARY_CHARS from the end. */
function lastLines(text: string): string {
  const lines = text
    .split(/\r?\n/)
    .map((line) => line.replace(/[\u0000-\u001f\u007f]/g, '').trim())
    .filter((line) => line !== '')
    .slice(-SUMMARY_LINES);
  const joined = lines.join(' | ');
  return joined.length > SUMMARY_CHARS ? `…${joined.slice(joined.length - SUMMARY_CHARS)}` : joined;
}
