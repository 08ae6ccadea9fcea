import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import type { StdioServerConfig } from '../registry/schema.js';
import { FleetError } from '../errors/fleet-error.js';
import { backoffDelay } from '../util/backoff.js';
import { KeyedMutex } from '../util/keyed-mutex.js';
import { checkOption, nonNegativeNumber, positiveInteger } from '../util/options.js';

/**
 * Why the supervisor refused or lost a process, as `FleetError` codes: `DESTINATION_NOT_ALLOWED`,
 * `UPSTREAM_UNREACHABLE` and `UPSTREAM_PROTOCOL_ERROR` are the codes of docs/http-api.md "Health"; `STDIO_CAPACITY` is the
 * per-account cap. Messages never quote an env value or anything the process wrote.
 */
export type StdioErrorCode = 'DESTINATION_NOT_ALLOWED' | 'UPSTREAM_UNREACHABLE' | 'UPSTREAM_PROTOCOL_ERROR' | 'STDIO_CAPACITY';

/** The part of a stdio server's configuration that decides which process runs. */
export type StdioProcessConfig = Pick<StdioServerConfig, 'command' | 'args' | 'env' | 'working_directory'>;

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

export interface StdioSupervisorOptions {
  /** Commands that may be spawned, compared exactly with the server's `command`. Empty refuses every spawn. @default [] */
  commands?: readonly string[];
  /** Live processes one account may have at once. @default 5 */
  maxProcessesPerAccount?: number;
  /**
   * A process nobody has acquired or written to for this long is stopped. Keep it at least as long as the longest
   * server `timeout`, or a slow call may lose its process. `0` never stops an idle process. @default 300000
   */
  idleTimeoutMs?: number;
  /**
   * Backoff after crashes in a row: spawns of that server are refused until it has passed.
   * @default { initialMs: 1000, maxMs: 60000, windowMs: 10000 }
   */
  crashBackoff?: CrashBackoffOptions;
  /** Time between SIGTERM and SIGKILL to the process group. @default 2000 */
  killGraceMs?: number;
  /**
   * After SIGKILL, how long to wait for the group to be gone (killed grandchildren are reaped by init, not by us).
   * @default 2000
   */
  reapTimeoutMs?: number;
  /** The `PATH` every child gets; a server's own `PATH` in `env` is overridden. @default process.env.PATH */
  path?: string;
  /** Bytes of each process's latest stderr kept for diagnostics (never logged). @default 4096 */
  stderrBytes?: number;
}

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

export interface StdioSupervisor {
  /**
   * The live process of a server: the running one when its configuration is unchanged, else a new one (a changed
   * configuration stops the old process first). Refuses with a `FleetError`: `DESTINATION_NOT_ALLOWED` (command off
   * the allowlist), `UPSTREAM_UNREACHABLE` (spawn failed, crash backoff in effect, supervisor closed),
   * `STDIO_CAPACITY` (the account has its maximum of live processes).
   */
  acquire(account: string, serverId: string, config: StdioProcessConfig): Promise<StdioChannel>;
  /** Ends the server's whole process group (SIGTERM, then SIGKILL after the grace) and forgets its crash history. */
  stop(serverId: string): Promise<void>;
  /** Stops every process and refuses further acquires. */
  close(): Promise<void>;
  /** The processes the supervisor holds, for diagnostics. */
  list(account?: string): StdioProcessInfo[];
}

interface CrashRecord {
  identity: string;
  failures: number;
  retryAt: number;
}

const WINDOWS = process.platform === 'win32';
/** setTimeout's largest delay; a longer idle timeout is re-armed in steps. */
const MAX_TIMER_MS = 2_147_483_647;
/** After the group is gone, how long to let stdout and stderr deliver what is left in their pipes. */
const DRAIN_MS = 100;

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Polls `done` until it holds or `timeoutMs` passes; true if it held. */
async function waitUntil(done: () => boolean, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  let delay = 5;
  while (!done()) {
    const left = deadline - Date.now();
    if (left <= 0) return false;
    await sleep(Math.min(delay, left));
    delay = Math.min(delay * 2, 50);
  }
  return true;
}

/** True when no process, zombies included, is left in the group. */
function groupGone(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
    return false;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'ESRCH';
  }
}

/** What decides the process: a hash, so that a changed env value restarts it without the value being kept twice. */
function identityOf(account: string, config: StdioProcessConfig): string {
  const env = Object.entries(config.env ?? {}).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  const key = JSON.stringify([account, config.command, config.args ?? [], env, config.working_directory ?? null]);
  return createHash('sha256').update(key).digest('hex');
}

function errnoOf(error: unknown): string {
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  return typeof code === 'string' && /^[A-Z0-9_]+$/.test(code) ? ` (${code})` : '';
}

const OWNER = 'createStdioSupervisor';
const nonNegative = (name: string, value: number | undefined, fallback: number) => checkOption(name, value ?? fallback, nonNegativeNumber, OWNER);

class ManagedProcess implements StdioChannel {
  state: StdioProcessInfo['state'] = 'starting';
  stopReason: StdioExitReason | undefined;
  lastActivity: number;
  idleTimer: NodeJS.Timeout | undefined;
  leaderExit: { code: number | null; signal: NodeJS.Signals | null } | undefined;
  /** stdout and stderr: both must be drained before the exit is told, or their last bytes could be missed. */
  openStreams = 2;
  cleanedUp = false;
  /** The group cleanup, started once; resolves when the process is forgotten. */
  cleanup: Promise<void> | undefined;
  readonly exited: Promise<StdioExit>;
  private exit: StdioExit | undefined;
  private resolveExited!: (exit: StdioExit) => void;
  private readonly dataListeners = new Set<(chunk: Buffer) => void>();
  private readonly exitListeners = new Set<(exit: StdioExit) => void>();
  private readonly stderrChunks: Buffer[] = [];
  private stderrSize = 0;

  constructor(
    readonly account: string,
    readonly serverId: string,
    readonly identity: string,
    readonly child: ChildProcessWithoutNullStreams,
    readonly startedAt: number,
    private readonly stderrBytes: number,
  ) {
    this.lastActivity = startedAt;
    this.exited = new Promise((resolve) => {
      this.resolveExited = resolve;
    });
  }

  get pid(): number {
    return this.child.pid ?? -1;
  }

  get alive(): boolean {
    return this.state === 'live';
  }

  touch(): void {
    this.lastActivity = Date.now();
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
    return Buffer.concat(this.stderrChunks).toString('utf8');
  }

  emitData(chunk: Buffer): void {
    for (const listener of [...this.dataListeners]) listener(chunk);
  }

  keepStderr(chunk: Buffer): void {
    if (this.stderrBytes === 0) return;
    const kept = chunk.length > this.stderrBytes ? chunk.subarray(chunk.length - this.stderrBytes) : chunk;
    this.stderrChunks.push(kept);
    this.stderrSize += kept.length;
    while (this.stderrSize > this.stderrBytes) {
      const first = this.stderrChunks[0] as Buffer;
      const excess = this.stderrSize - this.stderrBytes;
      if (first.length <= excess) {
        this.stderrChunks.shift();
        this.stderrSize -= first.length;
      } else {
        this.stderrChunks[0] = first.subarray(excess);
        this.stderrSize -= excess;
      }
    }
  }

  /** Tells the listeners once the leader has exited and its output is drained (or the cleanup gave up waiting). */
  notifyExitIfDone(): void {
    if (this.exit !== undefined) return;
    const drained = this.leaderExit !== undefined && this.openStreams === 0;
    if (!drained && !this.cleanedUp) return;
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

class Supervisor implements StdioSupervisor {
  private readonly commands: ReadonlySet<string>;
  private readonly maxPerAccount: number;
  private readonly idleTimeoutMs: number;
  private readonly backoffInitialMs: number;
  private readonly backoffMaxMs: number;
  private readonly crashWindowMs: number;
  private readonly killGraceMs: number;
  private readonly reapTimeoutMs: number;
  private readonly path: string | undefined;
  private readonly stderrBytes: number;

  private readonly processes = new Map<string, ManagedProcess>();
  private readonly crashes = new Map<string, CrashRecord>();
  private readonly mutex = new KeyedMutex();
  private readonly inflight = new Set<Promise<unknown>>();
  private closed = false;
  private closing: Promise<void> | undefined;
  private exitHookInstalled = false;

  constructor(options: StdioSupervisorOptions) {
    this.commands = new Set(options.commands ?? []);
    this.maxPerAccount = checkOption('maxProcessesPerAccount', options.maxProcessesPerAccount ?? 5, positiveInteger, OWNER);
    this.idleTimeoutMs = nonNegative('idleTimeoutMs', options.idleTimeoutMs, 300_000);
    this.backoffInitialMs = nonNegative('crashBackoff.initialMs', options.crashBackoff?.initialMs, 1000);
    this.backoffMaxMs = Math.max(this.backoffInitialMs, nonNegative('crashBackoff.maxMs', options.crashBackoff?.maxMs, 60_000));
    this.crashWindowMs = nonNegative('crashBackoff.windowMs', options.crashBackoff?.windowMs, 10_000);
    this.killGraceMs = nonNegative('killGraceMs', options.killGraceMs, 2000);
    this.reapTimeoutMs = nonNegative('reapTimeoutMs', options.reapTimeoutMs, 2000);
    this.path = options.path ?? process.env.PATH;
    this.stderrBytes = Math.floor(nonNegative('stderrBytes', options.stderrBytes, 4096));
  }

  acquire(account: string, serverId: string, config: StdioProcessConfig): Promise<StdioChannel> {
    if (this.closed) return Promise.reject(this.closedError());
    const task = this.mutex.run(serverId, () => this.acquireLocked(account, serverId, config));
    this.inflight.add(task);
    const forget = () => this.inflight.delete(task);
    task.then(forget, forget);
    return task;
  }

  stop(serverId: string): Promise<void> {
    return this.mutex.run(serverId, async () => {
      const current = this.processes.get(serverId);
      if (current !== undefined) await this.terminate(current, 'stopped');
      this.crashes.delete(serverId);
    });
  }

  close(): Promise<void> {
    this.closed = true;
    this.closing ??= (async () => {
      // An acquire already past its closed check may still spawn: let it finish, then stop what it started.
      await Promise.allSettled([...this.inflight]);
      await Promise.all([...this.processes.values()].map((proc) => this.terminate(proc, 'closed')));
      this.crashes.clear();
    })();
    return this.closing;
  }

  list(account?: string): StdioProcessInfo[] {
    return [...this.processes.values()].filter((proc) => account === undefined || proc.account === account).map((proc) => proc.info());
  }

  private async acquireLocked(account: string, serverId: string, config: StdioProcessConfig): Promise<StdioChannel> {
    if (this.closed) throw this.closedError();
    if (!this.commands.has(config.command)) {
      throw new FleetError('DESTINATION_NOT_ALLOWED', {
        message: this.commands.size === 0 ? 'Stdio servers are disabled on this service.' : 'The command is not on the allowlist of stdio commands.',
      });
    }
    const identity = identityOf(account, config);
    const current = this.processes.get(serverId);
    if (current !== undefined) {
      if (current.state === 'live' && current.identity === identity) {
        current.touch();
        return current;
      }
      await this.terminate(current, 'restarted');
      if (this.closed) throw this.closedError();
    }

    const crash = this.crashes.get(serverId);
    if (crash !== undefined && crash.identity !== identity) this.crashes.delete(serverId);
    else if (crash !== undefined && Date.now() < crash.retryAt) {
      const retryAfterMs = crash.retryAt - Date.now();
      throw new FleetError('UPSTREAM_UNREACHABLE', {
        message: `The stdio server keeps crashing; the next start is allowed in ${retryAfterMs} ms.`,
        retryAfterMs,
      });
    }

    let live = 0;
    for (const proc of this.processes.values()) if (proc.account === account) live += 1;
    if (live >= this.maxPerAccount) {
      throw new FleetError('STDIO_CAPACITY', { message: `This account already has ${this.maxPerAccount} live stdio server processes.` });
    }
    return this.spawnProcess(account, serverId, config, identity);
  }

  private async spawnProcess(account: string, serverId: string, config: StdioProcessConfig, identity: string): Promise<ManagedProcess> {
    // Only the server's env and PATH: nothing of the host's environment reaches the child.
    const env: Record<string, string> = { ...config.env };
    delete env.PATH;
    if (this.path !== undefined) env.PATH = this.path;

    let child: ChildProcessWithoutNullStreams;
    try {
      child = spawn(config.command, config.args ?? [], {
        shell: false,
        // Its own process group (and session), so that one signal to -pid reaches every descendant.
        detached: !WINDOWS,
        stdio: ['pipe', 'pipe', 'pipe'],
        cwd: config.working_directory,
        env,
        windowsHide: true,
      });
    } catch (cause) {
      this.recordCrash(serverId, identity);
      throw new FleetError('UPSTREAM_UNREACHABLE', { message: `The stdio server could not be started${errnoOf(cause)}.`, cause });
    }

    const proc = new ManagedProcess(account, serverId, identity, child, Date.now(), this.stderrBytes);
    this.processes.set(serverId, proc);
    this.installExitHook();
    // Errors after the start (EPIPE when the server dies mid-write, a failed kill) must never crash the host.
    const ignore = () => {};
    child.stdin.on('error', ignore);
    child.stdout.on('error', ignore);
    child.stderr.on('error', ignore);
    child.stdout.on('data', (chunk: Buffer) => proc.emitData(chunk));
    const closed = () => {
      proc.openStreams -= 1;
      proc.notifyExitIfDone();
    };
    child.stdout.on('close', closed);
    child.stderr.on('close', closed);
    // Drained always, or a chatty server would block on a full pipe.
    child.stderr.on('data', (chunk: Buffer) => proc.keepStderr(chunk));

    child.on('error', ignore);
    child.on('exit', (code, signal) => this.onLeaderExit(proc, code, signal));
    const failure = await new Promise<Error | undefined>((resolve) => {
      child.once('spawn', () => resolve(undefined));
      child.once('error', resolve);
    });
    if (failure !== undefined) {
      this.recordCrash(serverId, identity);
      proc.state = 'exited';
      proc.cleanedUp = true;
      child.stdin.destroy();
      child.stdout.destroy();
      child.stderr.destroy();
      this.forget(proc);
      proc.notifyExitIfDone();
      throw new FleetError('UPSTREAM_UNREACHABLE', { message: `The stdio server could not be started${errnoOf(failure)}.`, cause: failure });
    }

    proc.state = 'live';
    this.armIdle(proc, this.idleTimeoutMs);
    return proc;
  }

  private onLeaderExit(proc: ManagedProcess, code: number | null, signal: NodeJS.Signals | null): void {
    proc.leaderExit = { code, signal };
    clearTimeout(proc.idleTimer);
    if (proc.stopReason === undefined) {
      if (Date.now() - proc.startedAt < this.crashWindowMs) this.recordCrash(proc.serverId, proc.identity);
      else this.crashes.delete(proc.serverId);
    }
    if (proc.state !== 'stopping') proc.state = 'exited';
    // What the leader started is still in its group: end it too, so that no orphan outlives a crash.
    void this.terminate(proc);
    proc.notifyExitIfDone();
  }

  /** Starts (once) the end of a process group; resolves when it is gone and forgotten. */
  private terminate(proc: ManagedProcess, reason?: StdioExitReason): Promise<void> {
    if (reason !== undefined && proc.stopReason === undefined && proc.leaderExit === undefined) proc.stopReason = reason;
    proc.cleanup ??= this.endGroup(proc);
    return proc.cleanup;
  }

  private async endGroup(proc: ManagedProcess): Promise<void> {
    if (proc.leaderExit === undefined) proc.state = 'stopping';
    clearTimeout(proc.idleTimer);
    const gone = () => proc.leaderExit !== undefined && (WINDOWS || groupGone(proc.pid));
    try {
      // MCP's stdio shutdown closes stdin first; a server that exits on EOF is then gone before the signal matters.
      proc.child.stdin.end();
    } catch {
      // already closed
    }
    this.signalGroup(proc, 'SIGTERM');
    if (!(await waitUntil(gone, this.killGraceMs))) {
      this.signalGroup(proc, 'SIGKILL');
      await waitUntil(gone, this.reapTimeoutMs);
    }
    await waitUntil(() => proc.openStreams === 0, DRAIN_MS);
    proc.state = 'exited';
    proc.cleanedUp = true;
    proc.child.stdin.destroy();
    proc.child.stdout.destroy();
    proc.child.stderr.destroy();
    this.forget(proc);
    proc.notifyExitIfDone();
  }

  private signalGroup(proc: ManagedProcess, signal: NodeJS.Signals): void {
    if (proc.pid <= 0) return;
    if (!WINDOWS) {
      try {
        process.kill(-proc.pid, signal);
        return;
      } catch {
        // ESRCH: the group is gone. Otherwise fall through to the leader alone.
      }
    }
    if (proc.leaderExit === undefined) proc.child.kill(signal);
  }

  private armIdle(proc: ManagedProcess, delay: number): void {
    if (this.idleTimeoutMs <= 0) return;
    proc.idleTimer = setTimeout(() => {
      if (proc.state !== 'live') return;
      const idleFor = Date.now() - proc.lastActivity;
      if (idleFor >= this.idleTimeoutMs) void this.terminate(proc, 'idle');
      else this.armIdle(proc, this.idleTimeoutMs - idleFor);
    }, Math.min(delay, MAX_TIMER_MS));
    // An idle timer alone never keeps the host alive.
    proc.idleTimer.unref();
  }

  private recordCrash(serverId: string, identity: string): void {
    const previous = this.crashes.get(serverId);
    const failures = previous?.identity === identity ? previous.failures + 1 : 1;
    // No jitter: one supervisor waits on its own process, there is no crowd to spread.
    const delay = backoffDelay(failures, { baseMs: this.backoffInitialMs, maxMs: this.backoffMaxMs, factor: 2, jitter: [1, 1] });
    this.crashes.set(serverId, { identity, failures, retryAt: Date.now() + delay });
  }

  private forget(proc: ManagedProcess): void {
    if (this.processes.get(proc.serverId) === proc) this.processes.delete(proc.serverId);
    if (this.processes.size === 0 && this.exitHookInstalled) {
      process.removeListener('exit', this.killAllNow);
      this.exitHookInstalled = false;
    }
  }

  private installExitHook(): void {
    if (this.exitHookInstalled) return;
    process.on('exit', this.killAllNow);
    this.exitHookInstalled = true;
  }

  /** When the host exits without `close()`: no time to wait, so SIGKILL every group at once. */
  private readonly killAllNow = (): void => {
    for (const proc of this.processes.values()) {
      if (proc.pid <= 0) continue;
      try {
        if (WINDOWS) proc.child.kill('SIGKILL');
        else process.kill(-proc.pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
  };

  private closedError(): FleetError {
    return new FleetError('UPSTREAM_UNREACHABLE', { message: 'The stdio supervisor is closed.' });
  }
}

/**
 * Runs stdio MCP servers as child processes: only allowlisted commands, no shell, the server's env plus `PATH`,
 * one process per server reused while its configuration is unchanged, stopped when idle, with crash-loop backoff
 * and a per-account cap. Every process leads its own process group, and the whole group is ended on stop.
 */
export function createStdioSupervisor(options: StdioSupervisorOptions = {}): StdioSupervisor {
  return new Supervisor(options);
}
