import type { ChildProcessWithoutNullStreams } from 'node:child_process';
import { createHash } from 'node:crypto';
import type { StdioServerConfig } from '../registry/schema.js';
import { ERROR_HINTS } from '../errors/codes.js';
import { FleetError, isFleetError } from '../errors/fleet-error.js';
import { KeyedMutex } from '../util/keyed-mutex.js';
import { checkOption, nonNegativeNumber, positiveInteger } from '../util/options.js';
import { CrashBackoff, type CrashBackoffOptions } from './crash-backoff.js';
import { ManagedProcess, type StdioChannel, type StdioExitReason, type StdioProcessInfo } from './managed-process.js';
import { childEnv, DEFAULT_STDIO_PATH, isAllowedCommand, type StdioCommandRule } from '../registry/stdio-policy.js';
import { accessIssue } from './access.js';
import { Containment, type ContainmentKind, killUid, sweepUid } from './containment.js';
import { endGroup, sigkillGroup, spawnGroupLeader } from './process-group.js';
import type { StdioUser } from './stdio-users.js';

export type { CrashBackoffOptions } from './crash-backoff.js';
export type { ContainmentKind } from './containment.js';
export type { StdioChannel, StdioExit, StdioExitReason, StdioProcessInfo } from './managed-process.js';

/**
 * Why the supervisor refused or lost a process, as `FleetError` codes: `DESTINATION_NOT_ALLOWED`,
 * `UPSTREAM_UNREACHABLE` and `UPSTREAM_PROTOCOL_ERROR` are the codes of docs/http-api.md "Health"; `STDIO_CAPACITY` is the
 * per-account cap. Messages never quote an env value; what the process wrote to stderr appears only as the last lines
 * of a process that ended on its own, with the server's env values scrubbed (`ManagedProcess.exitSummary`).
 */
export type StdioErrorCode = 'DESTINATION_NOT_ALLOWED' | 'UPSTREAM_UNREACHABLE' | 'UPSTREAM_PROTOCOL_ERROR' | 'STDIO_CAPACITY';

/** The part of a stdio server's configuration that decides which process runs. */
export type StdioProcessConfig = Pick<StdioServerConfig, 'command' | 'args' | 'env' | 'working_directory'>;

export interface StdioSupervisorOptions {
  /**
   * Commands that may be spawned, compared exactly with the server's `command`; an entry may pin the arguments
   * (`{ command, args, extraArgs }`). Empty refuses every spawn. @default []
   */
  commands?: readonly StdioCommandRule[];
  /**
   * One user every child runs as (`setuid`/`setgid` at spawn), so that a child cannot read the service's memory,
   * environment (`/proc/<ppid>/environ`), store files or keys; `userOf` gives each account its own instead. Only a
   * process running as root can switch. @default none: children run as the service's own user
   */
  user?: { uid: number; gid: number };
  /**
   * The user each account's children run as, with its private home (`StdioUsers.userOf`); replaces `user`. A
   * rejection (a FleetError) refuses the spawn. @default `user` for every account, without a home
   */
  userOf?: (account: string) => Promise<StdioUser>;
  /**
   * The containments the supervisor may use for each process's tree, tried in this order at the first spawn (the
   * first this host supports is used; see `containment`). @default ['cgroup', 'pid-namespace', 'process-group']
   */
  containment?: readonly ContainmentKind[];
  /** Told once, at the first spawn, which containment runs and why others were passed over. @default none */
  onContainment?: (kind: ContainmentKind, description: string) => void;
  /**
   * Rewrites the command line of every child after the allowlist check, to run it inside a sandbox of the
   * embedder's (`bwrap`, `nsjail`, `firejail`…). @default none
   */
  wrap?: (command: string, args: readonly string[]) => { command: string; args: readonly string[] };
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
  /**
   * The `PATH` every child gets; a server's own `PATH` in `env` is overridden. Fixed, never the service's own (which
   * would reveal its home and tools). @default DEFAULT_STDIO_PATH, `/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin`
   */
  path?: string;
  /** Bytes of each process's latest stderr kept for diagnostics (never logged). @default 4096 */
  stderrBytes?: number;
  /**
   * The clock of crash backoff, idle time and `startedAt`, in Unix ms. Timers and the kill grace stay on real time.
   * @default Date.now
   */
  now?: () => number;
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
  /** How many processes it holds (`list().length`, without building their descriptions): for gauges. */
  readonly size: number;
  /** What holds each process's tree on this host (chosen at the first spawn, or when this is first read). */
  readonly containment: ContainmentKind;
}

/** setTimeout's largest delay; a longer idle timeout is re-armed in steps. */
const MAX_TIMER_MS = 2_147_483_647;

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

function startFailure(cause: unknown): FleetError {
  return new FleetError('UPSTREAM_UNREACHABLE', { message: `The stdio server could not be started${errnoOf(cause)}.`, cause });
}

class Supervisor implements StdioSupervisor {
  private readonly commands: readonly StdioCommandRule[];
  private readonly userOf: (account: string) => Promise<StdioUser | undefined>;
  private readonly allowedCells: readonly ContainmentKind[] | undefined;
  private readonly onContainment: StdioSupervisorOptions['onContainment'];
  /** Chosen at the first spawn, so that a fleet that never runs a stdio server makes no cgroup. */
  private chosenCells: Containment | undefined;
  /** Uids of one account alone that ran a process here: swept at close when the containment is the group alone. */
  private readonly ownUids = new Set<number>();
  private readonly wrap: StdioSupervisorOptions['wrap'];
  private readonly maxPerAccount: number;
  private readonly idleTimeoutMs: number;
  private readonly group: { killGraceMs: number; reapTimeoutMs: number };
  private readonly path: string | undefined;
  private readonly stderrBytes: number;
  private readonly now: () => number;
  private readonly backoff: CrashBackoff;

  private readonly processes = new Map<string, ManagedProcess>();
  private readonly mutex = new KeyedMutex();
  private readonly inflight = new Set<Promise<unknown>>();
  private closed = false;
  private closing: Promise<void> | undefined;
  private exitHookInstalled = false;

  constructor(options: StdioSupervisorOptions) {
    this.commands = [...(options.commands ?? [])];
    const shared = options.user === undefined ? undefined : { ...options.user, home: undefined, label: `uid ${options.user.uid}`, ownUid: false };
    this.userOf = options.userOf ?? (() => Promise.resolve(shared));
    this.allowedCells = options.containment;
    this.onContainment = options.onContainment;
    this.wrap = options.wrap;
    this.maxPerAccount = checkOption('maxProcessesPerAccount', options.maxProcessesPerAccount ?? 5, positiveInteger, OWNER);
    this.idleTimeoutMs = nonNegative('idleTimeoutMs', options.idleTimeoutMs, 300_000);
    const initialMs = nonNegative('crashBackoff.initialMs', options.crashBackoff?.initialMs, 1000);
    this.now = options.now ?? Date.now;
    this.backoff = new CrashBackoff(
      {
        initialMs,
        maxMs: Math.max(initialMs, nonNegative('crashBackoff.maxMs', options.crashBackoff?.maxMs, 60_000)),
        windowMs: nonNegative('crashBackoff.windowMs', options.crashBackoff?.windowMs, 10_000),
      },
      this.now,
    );
    this.group = {
      killGraceMs: nonNegative('killGraceMs', options.killGraceMs, 2000),
      reapTimeoutMs: nonNegative('reapTimeoutMs', options.reapTimeoutMs, 2000),
    };
    this.path = options.path ?? DEFAULT_STDIO_PATH;
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
      this.backoff.forget(serverId);
    });
  }

  close(): Promise<void> {
    this.closed = true;
    this.closing ??= (async () => {
      // An acquire already past its closed check may still spawn: let it finish, then stop what it started.
      await Promise.allSettled([...this.inflight]);
      await Promise.all([...this.processes.values()].map((proc) => this.terminate(proc, 'closed')));
      this.backoff.clear();
      if (this.chosenCells?.kind === 'process-group') await Promise.all([...this.ownUids].map((uid) => sweepUid(uid, this.group.reapTimeoutMs)));
      this.chosenCells?.close();
    })();
    return this.closing;
  }

  get containment(): ContainmentKind {
    return this.cells.kind;
  }

  private get cells(): Containment {
    if (this.chosenCells === undefined) {
      this.chosenCells = new Containment(this.allowedCells);
      this.onContainment?.(this.chosenCells.kind, this.chosenCells.describe());
    }
    return this.chosenCells;
  }

  get size(): number {
    return this.processes.size;
  }

  list(account?: string): StdioProcessInfo[] {
    return [...this.processes.values()].filter((proc) => account === undefined || proc.account === account).map((proc) => proc.info());
  }

  private async acquireLocked(account: string, serverId: string, config: StdioProcessConfig): Promise<StdioChannel> {
    if (this.closed) throw this.closedError();
    if (!isAllowedCommand(this.commands, config.command, config.args)) {
      throw new FleetError('DESTINATION_NOT_ALLOWED', {
        message: this.commands.length === 0 ? 'Stdio servers are disabled on this service.' : 'The command is not on the allowlist of stdio commands.',
        details: { hint: this.commands.length === 0 ? ERROR_HINTS.stdioDisabled : ERROR_HINTS.stdioCommand },
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

    const backingOff = this.backoff.refusal(serverId, identity);
    if (backingOff !== undefined) throw backingOff;

    const user = await this.userOf(account).catch((error: unknown) => {
      // A refusal of the account's user (a shared user held by another account) is this server's failure to start.
      throw isFleetError(error) && error.code === 'INVALID_REQUEST' ? new FleetError('UPSTREAM_UNREACHABLE', { message: error.message, details: error.details }) : error;
    });
    if (this.closed) throw this.closedError();
    // Checked again at spawn: permissions may have changed since the create, and a crash loop hides EACCES.
    const blocked = accessIssue(config, user, this.path);
    if (blocked !== undefined) {
      throw new FleetError('UPSTREAM_UNREACHABLE', { message: `The stdio server cannot start: ${blocked.issue}.` });
    }
    // Counted after the last wait, so that spawns of the account's other servers cannot pass the cap together.
    let live = 0;
    for (const proc of this.processes.values()) if (proc.account === account) live += 1;
    if (live >= this.maxPerAccount) {
      throw new FleetError('STDIO_CAPACITY', { message: `This account already has ${this.maxPerAccount} live stdio server processes.` });
    }
    return this.spawnProcess(account, serverId, config, identity, user);
  }

  private async spawnProcess(account: string, serverId: string, config: StdioProcessConfig, identity: string, user: StdioUser | undefined): Promise<ManagedProcess> {
    let child: ChildProcessWithoutNullStreams;
    let cell: ReturnType<Containment['cell']>;
    try {
      const line = this.wrap?.(config.command, config.args ?? []) ?? { command: config.command, args: config.args ?? [] };
      cell = this.cells.cell(line.command, line.args, user);
      const env = childEnv(config.env, this.path, user?.home);
      child = spawnGroupLeader(cell.line.command, cell.line.args, { cwd: config.working_directory, env, user: cell.line.spawnAs });
    } catch (cause) {
      this.backoff.recordCrash(serverId, identity);
      throw startFailure(cause);
    }

    const proc = new ManagedProcess(account, serverId, identity, child, this.now, this.stderrBytes, Object.values(config.env ?? {}));
    proc.cell = cell;
    proc.user = user;
    if (user?.ownUid === true) this.ownUids.add(user.uid);
    this.processes.set(serverId, proc);
    this.installExitHook();
    child.on('exit', (code, signal) => this.onLeaderExit(proc, code, signal));
    const failure = await proc.started();
    if (failure !== undefined) {
      this.backoff.recordCrash(serverId, identity);
      this.release(proc);
      cell.dispose();
      throw startFailure(failure);
    }

    proc.state = 'live';
    this.armIdle(proc, this.idleTimeoutMs);
    return proc;
  }

  private onLeaderExit(proc: ManagedProcess, code: number | null, signal: NodeJS.Signals | null): void {
    proc.leaderExit = { code, signal };
    clearTimeout(proc.idleTimer);
    // Exit code 0 is a server that chose to end (some serve one exchange and leave): never a crash.
    if (proc.stopReason === undefined && code === 0 && signal === null) this.backoff.forget(proc.serverId);
    else if (proc.stopReason === undefined) this.backoff.exited(proc.serverId, proc.identity, proc.startedAt, () => proc.exitSummary());
    if (proc.state !== 'stopping') proc.state = 'exited';
    // What the leader started is still in its group: end it too, so that no orphan outlives a crash.
    void this.terminate(proc);
    proc.notifyExitIfDone();
  }

  /** Starts (once) the end of a process group; resolves when it is gone and forgotten. */
  private terminate(proc: ManagedProcess, reason?: StdioExitReason): Promise<void> {
    if (reason !== undefined && proc.stopReason === undefined && !proc.leaderExited) proc.stopReason = reason;
    proc.cleanup ??= (async () => {
      if (!proc.leaderExited) proc.state = 'stopping';
      clearTimeout(proc.idleTimer);
      await endGroup(proc, this.group);
      proc.cell?.dispose();
      await this.sweepAfter(proc);
      this.release(proc);
    })();
    return proc.cleanup;
  }

  /** The process is over: its pipes are closed, the supervisor forgets it, and its users are told. */
  private release(proc: ManagedProcess): void {
    proc.release();
    if (this.processes.get(proc.serverId) === proc) this.processes.delete(proc.serverId);
    if (this.processes.size === 0 && this.exitHookInstalled) {
      process.removeListener('exit', this.killAllOnExit);
      this.exitHookInstalled = false;
    }
    proc.notifyExitIfDone();
  }

  /**
   * The group alone cannot hold a `setsid` grandchild: once an account whose uid is its own has no process left here,
   * every process of that uid goes.
   */
  private async sweepAfter(proc: ManagedProcess): Promise<void> {
    const uid = proc.user?.ownUid === true ? proc.user.uid : undefined;
    if (this.chosenCells?.kind !== 'process-group' || uid === undefined) return;
    for (const other of this.processes.values()) if (other !== proc && other.account === proc.account) return;
    await sweepUid(uid, this.group.reapTimeoutMs);
  }

  private armIdle(proc: ManagedProcess, delay: number): void {
    if (this.idleTimeoutMs <= 0) return;
    proc.idleTimer = setTimeout(() => {
      if (proc.state !== 'live') return;
      const idleFor = this.now() - proc.lastActivity;
      if (idleFor >= this.idleTimeoutMs) void this.terminate(proc, 'idle');
      else this.armIdle(proc, this.idleTimeoutMs - idleFor);
    }, Math.min(delay, MAX_TIMER_MS));
    // An idle timer alone never keeps the host alive.
    proc.idleTimer.unref();
  }

  private installExitHook(): void {
    if (this.exitHookInstalled) return;
    process.on('exit', this.killAllOnExit);
    this.exitHookInstalled = true;
  }

  /** The process 'exit' hook, when the host exits without `close()`: no time to wait, so SIGKILL every group at once. */
  private readonly killAllOnExit = (): void => {
    for (const proc of this.processes.values()) sigkillGroup(proc);
    if (this.chosenCells?.kind === 'process-group') for (const uid of this.ownUids) killUid(uid);
  };

  private closedError(): FleetError {
    return new FleetError('UPSTREAM_UNREACHABLE', { message: 'The stdio supervisor is closed.' });
  }
}

/**
 * Runs stdio MCP servers as child processes: only allowlisted commands, no shell, the server's env plus `PATH`,
 * one process per server reused while its configuration is unchanged, stopped when idle, with crash-loop backoff
 * and a per-account cap. Every process runs as its account's user (`userOf`), leads its own process group, and is
 * held whole by the containment (a cgroup, a PID namespace, or the group plus a sweep by uid), ended whole on stop.
 */
export function createStdioSupervisor(options: StdioSupervisorOptions = {}): StdioSupervisor {
  return new Supervisor(options);
}
