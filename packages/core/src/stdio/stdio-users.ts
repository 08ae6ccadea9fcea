import { chmodSync, chownSync, lstatSync, mkdirSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { errAsync, okAsync, ResultAsync } from 'neverthrow';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FleetError, invalidRequest, isFleetError, toFleetError } from '../errors/fleet-error.js';
import { accessIssue, pathIssue } from './access.js';
import type { IndexCalls } from '../storage/index-calls.js';
import type { RecordStore } from '../storage/records.js';
import type { Ran } from '../util/result.js';

/** Who an account's stdio children run as, and their private home (0700, theirs). */
export interface StdioUser {
  uid: number;
  gid: number;
  /** `HOME` of the children: npm's and uv's caches go there. `undefined` when no folder for homes is known. */
  home: string | undefined;
  /** How messages name this user: `uid 200042 (this account's stdio user)`. */
  label: string;
  /** True when no other account runs as this uid (then every process of it may be swept). */
  ownUid: boolean;
}

/**
 * - `per-account`: the service runs as root; each account draws a uid (and the gid of the same number) of its own
 *   from `from`–`to`, claimed in the IndexStore so that every process sharing the store, and every restart, agrees.
 * - `shared`: every child runs as one user (`user`; `undefined`: the service's own). With `allowMany` false, the
 *   first account to run a stdio server keeps them: another account's are refused (they could read each other).
 */
export type StdioUserMode =
  | { kind: 'per-account'; from: number; to: number }
  | { kind: 'shared'; user: { uid: number; gid: number } | undefined; allowMany: boolean };

export interface StdioUsersDeps {
  index: IndexCalls;
  records: RecordStore;
  mode: StdioUserMode;
  /** The folder holding one home per stdio user. @default none: children get no `HOME` */
  homes?: string | undefined;
}

/** How far one account's draw looks for a free uid before it gives up (each step is one claim). */
const MAX_PROBES = 256;

const claimKey = (uid: number) => `stdio-uid:${uid}`;
const recordKey = (account: string) => `stdio-user:${encodeURIComponent(account)}`;
const SHARED_CLAIM = 'stdio-user:shared';

export const SHARED_USER_HINT =
  'Run the service as root so that each account gets a uid of its own (stdio.uids), or set stdio.sharedUser: true to let several accounts share one user (their stdio servers can then read each other’s environment and signal each other).';

/** The first uid an account tries: spread by its name, so that draws of different accounts rarely meet. */
function firstProbe(account: string, size: number): number {
  return createHash('sha256').update(account).digest().readUInt32BE(0) % size;
}

/**
 * Hands each account its stdio user. A uid once claimed stays the account's for good (its home and cache are kept),
 * so that no later account inherits files a previous one left. An account's draw always follows the same sequence of
 * uids, so a draw interrupted between its claim and its record finds its own claim again.
 */
export class StdioUsers {
  private readonly known = new Map<string, StdioUser>();
  private readonly pending = new Map<string, Promise<StdioUser>>();

  constructor(private readonly deps: StdioUsersDeps) {}

  get mode(): StdioUserMode {
    return this.deps.mode;
  }

  /** The account's stdio user, drawn and its home made on first use. Rejects with a FleetError that says what to change. */
  userOf(account: string): Promise<StdioUser> {
    const known = this.known.get(account);
    if (known !== undefined) return Promise.resolve(known);
    let pending = this.pending.get(account);
    if (pending === undefined) {
      pending = this.resolve(account).finally(() => this.pending.delete(account));
      this.pending.set(account, pending);
    }
    return pending;
  }

  private async resolve(account: string): Promise<StdioUser> {
    const { mode } = this.deps;
    let user: StdioUser;
    if (mode.kind === 'shared') {
      if (!mode.allowMany) await this.holdShared(account);
      const uid = mode.user?.uid ?? process.getuid?.() ?? 0;
      const gid = mode.user?.gid ?? process.getgid?.() ?? 0;
      user = { uid, gid, home: this.home(uid, gid), label: `uid ${uid} (the user every stdio server runs as)`, ownUid: false };
    } else {
      const uid = await this.draw(account, mode.from, mode.to);
      user = { uid, gid: uid, home: this.home(uid, uid), label: `uid ${uid} (this account’s stdio user)`, ownUid: true };
    }
    this.known.set(account, user);
    return user;
  }

  private async holdShared(account: string): Promise<void> {
    const outcome = await unwrap(this.deps.index.commit({ claims: [{ key: SHARED_CLAIM, owner: account }] }));
    if (outcome.ok) return;
    throw new FleetError('INVALID_REQUEST', {
      message: `Stdio servers on this service run as one user and belong to another account already. ${SHARED_USER_HINT}`,
      details: { field: 'command', hint: SHARED_USER_HINT },
    });
  }

  private async draw(account: string, from: number, to: number): Promise<number> {
    const stored = await unwrap(this.deps.records.get<{ uid: number }>(recordKey(account)));
    if (stored !== undefined && Number.isInteger(stored.uid)) {
      const claim = await unwrap(this.deps.index.claimOf(claimKey(stored.uid)));
      if (claim?.owner === account) return stored.uid;
    }
    const size = to - from + 1;
    const start = firstProbe(account, size);
    for (let step = 0; step < Math.min(size, MAX_PROBES); step++) {
      const uid = from + ((start + step) % size);
      const outcome = await unwrap(this.deps.index.commit({ claims: [{ key: claimKey(uid), owner: account }] }));
      if (!outcome.ok) continue;
      await unwrap(this.deps.records.set(recordKey(account), { uid }));
      return uid;
    }
    throw new FleetError('STDIO_CAPACITY', {
      message: `No free uid for this account's stdio servers in stdio.uids (${from}–${to}): widen the range (reference server: MCP_FLEET_STDIO_UIDS).`,
    });
  }

  /** The user's private home, made on first use: 0700, owned by the user; undefined without a folder for homes. */
  private home(uid: number, gid: number): string | undefined {
    const { homes } = this.deps;
    if (homes === undefined) return undefined;
    const root = process.getuid?.() === 0;
    ensureFolder(homes, 0o711, 'stdio.homes');
    const home = join(homes, String(uid));
    try {
      mkdirSync(home, { mode: 0o700 });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw homeError(home, error);
    }
    const stat = lstatSync(home);
    if (!stat.isDirectory()) throw homeError(home, undefined);
    if (root && (stat.uid !== uid || stat.gid !== gid)) chownSync(home, uid, gid);
    if ((stat.mode & 0o777) !== 0o700) chmodSync(home, 0o700);
    // A home under a folder the user cannot pass (a store folder of mode 0700, /root) would fail every start.
    const blocked = pathIssue(home, { uid, gid, label: `uid ${uid}` }, 'search');
    if (blocked !== undefined) {
      throw new FleetError('UPSTREAM_UNREACHABLE', {
        message: `The home of a stdio user cannot be reached by that user (${blocked}): set stdio.homes to a folder every stdio user can pass (reference server: MCP_FLEET_STDIO_HOMES).`,
      });
    }
    return home;
  }
}

function homeError(path: string, cause: unknown): FleetError {
  return new FleetError('UPSTREAM_UNREACHABLE', {
    message: `The home folder of a stdio user (${path}) could not be made: check the stdio.homes option (reference server: MCP_FLEET_STDIO_HOMES).`,
    cause,
  });
}

/**
 * Makes the folder (and its parents) when missing; refuses one that is not a folder, a link, another user's, or
 * writable by others, since the homes inside it would then be another user's to swap.
 */
function ensureFolder(folder: string, mode: number, option: string): void {
  mkdirSync(folder, { recursive: true, mode });
  const stat = lstatSync(folder);
  const ours = stat.uid === (process.getuid?.() ?? stat.uid);
  if (!stat.isDirectory() || !ours || (stat.mode & 0o022) !== 0) {
    throw new FleetError('UPSTREAM_UNREACHABLE', {
      message: `The folder of stdio homes (${folder}) must be a folder of this service's user, writable by it alone: fix it or set ${option} (reference server: MCP_FLEET_STDIO_HOMES).`,
    });
  }
  if ((stat.mode & 0o777) !== mode) chmodSync(folder, mode);
}

/** A ResultAsync's value, or its FleetError thrown: the supervisor works in promises. */
async function unwrap<T>(result: Ran<T, FleetError>): Promise<T> {
  const settled = await result;
  if (settled.isErr()) throw settled.error;
  return settled.value;
}

/** The folder of stdio homes when `stdio.homes` is not set. */
export const defaultHomes = () => join(tmpdir(), 'mcp-fleet-stdio-homes');

/** What the start warns of when several accounts may share one stdio user; `undefined` when they cannot. */
export function sharedUserWarning(mode: StdioUserMode): string | undefined {
  if (mode.kind !== 'shared' || !mode.allowMany) return undefined;
  const who = mode.user === undefined ? "the service's own user" : `uid ${mode.user.uid}`;
  return `mcp-fleet: stdio.sharedUser is on: the stdio servers of every account run as ${who}, so one tenant's server can read another's environment (its env secrets, through /proc/<pid>/environ) and signal its processes. Run the service as root (each account then gets a uid of its own from stdio.uids) to isolate them.`;
}

/**
 * The create and update check of a stdio server (400): the account's stdio user (drawn now) can reach the command,
 * its script and its working folder. A path that is not there yet passes (it may be deployed after the server is
 * registered); the spawn refuses it then, by name. One that is there and closed to the user is refused now.
 */
export function stdioAccessCheck(users: StdioUsers, path: string) {
  return (account: string, config: { command: string; args?: readonly string[] | undefined; working_directory?: string | undefined }): ResultAsync<void, FleetError> =>
    ResultAsync.fromPromise(users.userOf(account), (error) => (isFleetError(error) ? error : toFleetError(error))).andThen((user) => {
      const blocked = accessIssue(config, user, path);
      return blocked === undefined || blocked.kind === 'missing' ? okAsync(undefined) : errAsync(invalidRequest([{ field: blocked.field, issue: blocked.issue }]));
    });
}
