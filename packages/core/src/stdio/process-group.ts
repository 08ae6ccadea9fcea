import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { performance } from 'node:perf_hooks';
import type { Cell } from './containment.js';

/**
 * A stdio server runs as the leader of its own process group, so that one signal reaches everything it started:
 * ending the group ends its grandchildren too, and none outlives the server.
 */

const WINDOWS = process.platform === 'win32';
/** After the group is gone, how long to let stdout and stderr deliver what is left in their pipes. */
const DRAIN_MS = 100;

/** What ending a group needs to know of its leader; `ManagedProcess` is one. */
export interface GroupLeader {
  readonly child: ChildProcessWithoutNullStreams;
  /** The leader's pid, which is also the group's id; `<= 0` when the spawn never got one. */
  readonly pid: number;
  /** True once the leader itself has exited (its group may live on). */
  readonly leaderExited: boolean;
  /** True once stdout and stderr are closed. */
  readonly drained: boolean;
  /** What holds the whole tree beyond the group (a cgroup): signalled with it, and waited for. */
  readonly cell?: Cell | undefined;
}

export interface EndGroupOptions {
  /** Time between SIGTERM and SIGKILL. */
  killGraceMs: number;
  /** After SIGKILL, how long to wait for the group to be gone (killed grandchildren are reaped by init, not by us). */
  reapTimeoutMs: number;
}

/** Spawns `command` as the leader of a new process group (and session), without a shell, with exactly `env`. */
export function spawnGroupLeader(
  command: string,
  args: readonly string[],
  options: { cwd: string | undefined; env: Record<string, string>; user?: { uid: number; gid: number } | undefined },
): ChildProcessWithoutNullStreams {
  return spawn(command, args, {
    ...(options.user !== undefined && { uid: options.user.uid, gid: options.user.gid }),
    shell: false,
    // Its own process group (and session), so that one signal to -pid reaches every descendant.
    detached: !WINDOWS,
    stdio: ['pipe', 'pipe', 'pipe'],
    cwd: options.cwd,
    env: options.env,
    windowsHide: true,
  });
}

/**
 * Ends a group: closes the leader's stdin, SIGTERM to the group, SIGKILL once `killGraceMs` has passed, then waits
 * for the group to be gone and the pipes to drain. Resolves when it is over; it gives up waiting, never hangs.
 */
export async function endGroup(leader: GroupLeader, options: EndGroupOptions): Promise<void> {
  const gone = () => leader.leaderExited && (WINDOWS || groupGone(leader.pid)) && (leader.cell?.empty() ?? true);
  try {
    // MCP's stdio shutdown closes stdin first; a server that exits on EOF is then gone before the signal matters.
    leader.child.stdin.end();
  } catch {
    // already closed
  }
  signalGroup(leader, 'SIGTERM');
  if (!(await waitUntil(gone, options.killGraceMs))) {
    signalGroup(leader, 'SIGKILL');
    await waitUntil(gone, options.reapTimeoutMs);
  }
  await waitUntil(() => leader.drained, DRAIN_MS);
}

/** SIGKILL to the whole group, without waiting for it to go: what the process 'exit' hook can still do. */
export function sigkillGroup(leader: GroupLeader): void {
  if (leader.pid <= 0) return;
  try {
    if (WINDOWS) leader.child.kill('SIGKILL');
    else process.kill(-leader.pid, 'SIGKILL');
  } catch {
    // already gone
  }
  leader.cell?.signal('SIGKILL');
}

function signalGroup(leader: GroupLeader, signal: NodeJS.Signals): void {
  // What left the group (a `setsid` grandchild) is still in the cell.
  leader.cell?.signal(signal);
  if (leader.pid <= 0) return;
  if (!WINDOWS) {
    try {
      process.kill(-leader.pid, signal);
      return;
    } catch {
      // ESRCH: the group is gone. Otherwise fall through to the leader alone.
    }
  }
  if (!leader.leaderExited) leader.child.kill(signal);
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

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * Polls `done` until it holds or `timeoutMs` passes; true if it held. The grace and the reap are timer durations,
 * so they run on the monotonic clock like the timers themselves, never on the supervisor's injected `now`.
 */
async function waitUntil(done: () => boolean, timeoutMs: number): Promise<boolean> {
  const deadline = performance.now() + timeoutMs;
  let delay = 5;
  while (!done()) {
    const left = deadline - performance.now();
    if (left <= 0) return false;
    await sleep(Math.min(delay, left));
    delay = Math.min(delay * 2, 50);
  }
  return true;
}
