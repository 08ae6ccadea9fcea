import { accessSync, constants, existsSync, mkdirSync, readFileSync, readdirSync, readlinkSync, rmdirSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';

/**
 * How a stdio server's whole process tree is held, so that nothing it starts outlives its delete, the cap or the
 * service's shutdown: not even a grandchild that left the process group with `setsid`.
 *
 * - `cgroup`: a cgroup v2 of its own per process (found from /proc/self/mountinfo); the child joins it before it
 *   runs its program, and `cgroup.kill` ends everything in it at once.
 * - `pid-namespace`: the child is pid 1 of a PID namespace of its own (`unshare --pid --fork --kill-child`); when it
 *   ends, the kernel ends every process of the namespace.
 * - `process-group`: the process group alone (a `setsid` grandchild escapes it), plus, once an account has no live
 *   process left, a sweep of every process of that account's own uid.
 */
export type ContainmentKind = 'cgroup' | 'pid-namespace' | 'process-group';

export const CONTAINMENT_KINDS: readonly ContainmentKind[] = ['cgroup', 'pid-namespace', 'process-group'];

/** A command line, and the user Node's `spawn` must switch to (when the containment does not switch itself). */
export interface SpawnLine {
  command: string;
  args: readonly string[];
  spawnAs: { uid: number; gid: number } | undefined;
}

/** The containment of one process: how to spawn it, and how to end what it leaves. */
export interface Cell {
  readonly line: SpawnLine;
  /** True when nothing of the process's tree is left (always true where the containment cannot tell). */
  empty(): boolean;
  /** Sends `signal` to every process the containment holds (the process group is signalled apart). */
  signal(signal: NodeJS.Signals): void;
  /** Removes what the containment made (the cgroup folder); after the tree is gone. */
  dispose(): void;
}

const TOOL_FOLDERS = ['/usr/bin', '/bin', '/usr/sbin', '/sbin', '/usr/local/bin'];

function tool(name: string): string | undefined {
  for (const folder of TOOL_FOLDERS) {
    const path = join(folder, name);
    try {
      accessSync(path, constants.X_OK);
      return path;
    } catch {
      // not there
    }
  }
  return undefined;
}

/** The mount point of the cgroup v2 hierarchy (a hybrid host mounts it at /sys/fs/cgroup/unified), or undefined. */
export function cgroup2Mount(mountinfo = '/proc/self/mountinfo'): string | undefined {
  let text: string;
  try {
    text = readFileSync(mountinfo, 'utf8');
  } catch {
    return undefined;
  }
  for (const line of text.split('\n')) {
    // id parent major:minor root mountpoint options [optional...] - fstype source superoptions
    const [before, after] = line.split(' - ');
    if (after === undefined || before === undefined || after.split(' ')[0] !== 'cgroup2') continue;
    const point = before.split(' ')[4];
    if (point !== undefined) return point.replace(/\\([0-7]{3})/g, (_, octal: string) => String.fromCharCode(Number.parseInt(octal, 8)));
  }
  return undefined;
}

/** This process's own cgroup v2 path (`0::/…` in /proc/self/cgroup), or `/`. */
function ownCgroup(): string {
  try {
    const line = readFileSync('/proc/self/cgroup', 'utf8')
      .split('\n')
      .find((l) => l.startsWith('0::'));
    return line?.slice(3) || '/';
  } catch {
    return '/';
  }
}

function quietly(action: () => void): void {
  try {
    action();
  } catch {
    // already gone, or not ours to change
  }
}

/** Pids listed in a cgroup's `cgroup.procs`. */
function procsOf(folder: string): number[] {
  try {
    return readFileSync(join(folder, 'cgroup.procs'), 'utf8')
      .split('\n')
      .filter((l) => l !== '')
      .map(Number);
  } catch {
    return [];
  }
}

/**
 * The containment this service can use, chosen once at start from the kinds allowed, in their order: what is tried,
 * and why one was passed over, is in `notes`.
 */
export class Containment {
  readonly kind: ContainmentKind;
  /** Why the kinds before `kind` were passed over, for the log line at start. */
  readonly notes: string[] = [];
  /** The cgroup folder holding one cgroup per process (`cgroup`). */
  private readonly cgroupRoot: string | undefined;
  private readonly sh: string | undefined;
  private readonly setpriv: string | undefined;
  private readonly unshare: string | undefined;
  private cells = 0;
  /** Folders of services gone without `close()`, whose processes were killed but not yet reaped: removed at `close`. */
  private readonly stale: string[] = [];

  constructor(allowed: readonly ContainmentKind[] = CONTAINMENT_KINDS) {
    const root = process.getuid?.() === 0;
    this.sh = tool('sh');
    this.setpriv = tool('setpriv');
    this.unshare = tool('unshare');
    let kind: ContainmentKind | undefined;
    let cgroupRoot: string | undefined;
    for (const candidate of allowed) {
      if (process.platform !== 'linux' && candidate !== 'process-group') {
        this.notes.push(`${candidate}: Linux only`);
        continue;
      }
      if (candidate === 'cgroup') {
        cgroupRoot = this.makeCgroupRoot(root);
        if (cgroupRoot !== undefined) {
          kind = candidate;
          break;
        }
      } else if (candidate === 'pid-namespace') {
        if (!root) this.notes.push('pid-namespace: needs root');
        else if (this.unshare === undefined) this.notes.push('pid-namespace: unshare (util-linux) not found');
        else {
          kind = candidate;
          break;
        }
      } else {
        kind = candidate;
        break;
      }
    }
    this.kind = kind ?? 'process-group';
    this.cgroupRoot = cgroupRoot;
  }

  /** A folder of our own in the cgroup v2 hierarchy, where children may be moved, or undefined (with a note). */
  private makeCgroupRoot(root: boolean): string | undefined {
    const mount = cgroup2Mount();
    if (mount === undefined) {
      this.notes.push('cgroup: no cgroup v2 hierarchy is mounted');
      return undefined;
    }
    if (this.sh === undefined || (root && this.setpriv === undefined)) {
      this.notes.push('cgroup: sh or setpriv (util-linux) not found');
      return undefined;
    }
    // Named by the PID namespace too: a pid means something only there, and the hierarchy may be shared with other
    // namespaces (containers), whose folders are never touched.
    const name = `mcp-fleet-stdio-${PID_NAMESPACE}-${process.pid}-${randomBytes(3).toString('hex')}`;
    // Beside this process's own cgroup when we may write there (a delegated subtree), else at the hierarchy's root.
    for (const parent of [...new Set([join(mount, ownCgroup()), mount])]) {
      this.stale.push(...removeStale(parent));
      const folder = join(parent, name);
      try {
        mkdirSync(folder);
      } catch {
        continue;
      }
      try {
        accessSync(join(folder, 'cgroup.kill'), constants.W_OK);
        accessSync(join(parent, 'cgroup.procs'), constants.W_OK);
        return folder;
      } catch {
        quietly(() => rmdirSync(folder));
      }
    }
    this.notes.push(`cgroup: cannot create a cgroup with cgroup.kill under ${mount}`);
    return undefined;
  }

  /** What the start log says: the kind, and where. */
  describe(): string {
    const where = this.kind === 'cgroup' ? ` (${this.cgroupRoot})` : '';
    const passed = this.notes.length === 0 ? '' : `; passed over: ${this.notes.join('; ')}`;
    return `${this.kind}${where}${passed}`;
  }

  /** The containment of one new process running `command args` as `user` (`undefined`: the service's own user). */
  cell(command: string, args: readonly string[], user: { uid: number; gid: number } | undefined): Cell {
    const switchUser = user !== undefined && user.uid !== process.getuid?.();
    if (this.kind === 'cgroup' && this.cgroupRoot !== undefined && this.sh !== undefined) {
      const folder = join(this.cgroupRoot, `p${++this.cells}`);
      mkdirSync(folder);
      // The child joins its cgroup before its program runs (as root, still able to), then drops to its user: nothing
      // it starts is ever outside. Arguments, not a script built from them: nothing of the server's is parsed by sh.
      const drop = switchUser && this.setpriv !== undefined ? [this.setpriv, `--reuid=${user.uid}`, `--regid=${user.gid}`, '--clear-groups', '--'] : [];
      const line: SpawnLine = {
        command: this.sh,
        // `unset PWD`: dash exports one, and the child's environment is exactly what the supervisor gave.
        args: ['-c', 'echo $$ > "$0" || exit 126; unset PWD; exec "$@"', join(folder, 'cgroup.procs'), ...drop, command, ...args],
        spawnAs: undefined,
      };
      return {
        line,
        empty: () => !existsSync(folder) || !/^populated 1$/m.test(readFileSync(join(folder, 'cgroup.events'), 'utf8')),
        signal: (signal) => {
          if (signal === 'SIGKILL') quietly(() => writeFileSync(join(folder, 'cgroup.kill'), '1'));
          else for (const pid of procsOf(folder)) quietly(() => process.kill(pid, signal));
        },
        dispose: () => quietly(() => rmdirSync(folder)),
      };
    }
    if (this.kind === 'pid-namespace' && this.unshare !== undefined) {
      const drop = switchUser ? [`--setgid=${user.gid}`, `--setuid=${user.uid}`] : [];
      // --kill-child: if unshare dies, its child (pid 1 of the namespace) is killed, and with it the whole namespace.
      return {
        line: { command: this.unshare, args: ['--pid', '--fork', '--kill-child', ...drop, '--', command, ...args], spawnAs: undefined },
        empty: () => true,
        signal: () => {},
        dispose: () => {},
      };
    }
    return {
      line: { command, args, spawnAs: switchUser ? user : undefined },
      empty: () => true,
      signal: () => {},
      dispose: () => {},
    };
  }

  /** Removes the service's cgroup folder once every cell is gone, and what is left of stale ones. */
  close(): void {
    for (const folder of this.stale.splice(0)) removeFolder(folder);
    if (this.cgroupRoot !== undefined) removeFolder(this.cgroupRoot);
  }
}

/** This process's PID namespace (the inode of /proc/self/ns/pid), or `0` where it cannot be read. */
const PID_NAMESPACE = (() => {
  try {
    return /\[(\d+)\]/.exec(readlinkSync('/proc/self/ns/pid'))?.[1] ?? '0';
  } catch {
    return '0';
  }
})();

/**
 * The folders a service left behind when it exited without `close()` (or was killed): whatever still runs there
 * outlived its service, so it is ended (`cgroup.kill`), and the empty folders go. Only folders of a pid that no
 * longer exists in this PID namespace.
 */
function removeStale(parent: string): string[] {
  const left: string[] = [];
  for (const entry of readdirSafe(parent)) {
    const owner = new RegExp(`^mcp-fleet-stdio-${PID_NAMESPACE}-(\\d+)-[0-9a-f]+$`).exec(entry)?.[1];
    if (owner === undefined || alive(Number(owner))) continue;
    const folder = join(parent, entry);
    quietly(() => writeFileSync(join(folder, 'cgroup.kill'), '1'));
    if (!removeFolder(folder)) left.push(folder);
  }
  return left;
}

/** Removes a cgroup folder and its cells; false while a process is still in one (a killed one not yet reaped). */
function removeFolder(folder: string): boolean {
  for (const cell of readdirSafe(folder)) quietly(() => rmdirSync(join(folder, cell)));
  quietly(() => rmdirSync(folder));
  return !existsSync(folder);
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code !== 'ESRCH';
  }
}

function readdirSafe(folder: string): string[] {
  try {
    return readdirSync(folder, { withFileTypes: true })
      .filter((e) => e.isDirectory())
      .map((e) => e.name);
  } catch {
    return [];
  }
}

/** Pids of the live (not zombie) processes whose real uid is `uid`, from /proc; none elsewhere. */
function pidsOfUid(uid: number): number[] {
  let entries: string[];
  try {
    entries = readdirSync('/proc');
  } catch {
    return [];
  }
  const pids: number[] = [];
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue;
    let status: string;
    try {
      status = readFileSync(`/proc/${entry}/status`, 'utf8');
    } catch {
      continue;
    }
    // A zombie holds nothing any more; its parent (init, for an orphan) reaps it.
    if (Number(/^Uid:\s+(\d+)/m.exec(status)?.[1]) === uid && /^State:\s+Z/m.test(status) === false) pids.push(Number(entry));
  }
  return pids;
}

/**
 * SIGKILL to every process whose real uid is `uid`, once; how many there were. Alone, for a host that is exiting
 * (nothing can be awaited then); `sweepUid` repeats it until none is left.
 */
export function killUid(uid: number): number {
  const pids = pidsOfUid(uid);
  for (const pid of pids) quietly(() => process.kill(pid, 'SIGKILL'));
  return pids.length;
}

/**
 * `killUid` until no process of `uid` is left or `timeoutMs` has passed: the last resort of the `process-group`
 * containment, for a uid that only one account's stdio processes use. True when none is left.
 */
export async function sweepUid(uid: number, timeoutMs: number): Promise<boolean> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    if (killUid(uid) === 0) return true;
    if (performance.now() >= deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
