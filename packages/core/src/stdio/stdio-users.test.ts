import { chmodSync, mkdirSync, mkdtempSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createFleet } from '../fleet.js';
import { IndexCalls } from '../storage/index-calls.js';
import { MemoryIndexStore } from '../storage/memory-index-store.js';
import { createMemoryStorage, RecordStore } from '../storage/records.js';
import { accessIssue } from './access.js';
import { sharedUserWarning, type StdioUserMode, StdioUsers } from './stdio-users.js';

/** Two `StdioUsers` over one store: two processes sharing it, or one process before and after a restart. */
function store() {
  return { index: new IndexCalls(new MemoryIndexStore()), records: new RecordStore(createMemoryStorage(), 'mcp-fleet:') };
}
const rejection = (promise: Promise<unknown>) => promise.then(() => expect.unreachable('resolved'), (error: unknown) => error as { code: string; message: string });

describe('StdioUsers: a uid per account, claimed in the store', () => {
  const mode: StdioUserMode = { kind: 'per-account', from: 300_000, to: 300_009 };

  it('gives two accounts two uids from the range, and the same uid to an account in every process sharing the store', async () => {
    const shared = store();
    const one = new StdioUsers({ ...shared, mode });
    const a = await one.userOf('acct_a');
    const b = await one.userOf('acct_b');
    expect(a.uid).not.toBe(b.uid);
    for (const user of [a, b]) {
      expect(user.uid).toBeGreaterThanOrEqual(300_000);
      expect(user.uid).toBeLessThanOrEqual(300_009);
      expect(user.gid).toBe(user.uid);
      expect(user.ownUid).toBe(true);
    }
    const other = new StdioUsers({ ...shared, mode });
    expect((await other.userOf('acct_b')).uid).toBe(b.uid);
    expect((await other.userOf('acct_a')).uid).toBe(a.uid);
  });

  it('concurrent draws of one account give one uid; a draw whose record was lost finds its own claim again', async () => {
    const shared = store();
    const [x, y] = await Promise.all([new StdioUsers({ ...shared, mode }).userOf('acct_c'), new StdioUsers({ ...shared, mode }).userOf('acct_c')]);
    expect(x.uid).toBe(y.uid);
    (await shared.records.delete('stdio-user:acct_c'))._unsafeUnwrap();
    expect((await new StdioUsers({ ...shared, mode }).userOf('acct_c')).uid).toBe(x.uid);
  });

  it('a full range refuses the next account with STDIO_CAPACITY naming stdio.uids', async () => {
    const users = new StdioUsers({ ...store(), mode: { kind: 'per-account', from: 300_100, to: 300_101 } });
    await users.userOf('acct_1');
    await users.userOf('acct_2');
    const error = await rejection(users.userOf('acct_3'));
    expect(error.code).toBe('STDIO_CAPACITY');
    expect(error.message).toContain('stdio.uids (300100–300101)');
  });

  it.runIf(process.getuid?.() === 0)('makes each user a private home: 0700, owned by its uid, below a 0711 folder', async () => {
    const parent = mkdtempSync(join(tmpdir(), 'mcp-fleet-homes-test-'));
    chmodSync(parent, 0o755);
    const homes = join(parent, 'homes');
    const user = await new StdioUsers({ ...store(), mode, homes }).userOf('acct_home');
    const stat = statSync(user.home as string);
    expect(stat.mode & 0o777).toBe(0o700);
    expect([stat.uid, stat.gid]).toEqual([user.uid, user.gid]);
    expect(statSync(homes).mode & 0o777).toBe(0o711);
  });

  it.runIf(process.getuid?.() === 0)('refuses homes below a folder the user cannot pass, naming stdio.homes', async () => {
    const privateFolder = mkdtempSync(join(tmpdir(), 'mcp-fleet-homes-private-'));
    chmodSync(privateFolder, 0o700);
    const error = await rejection(new StdioUsers({ ...store(), mode, homes: join(privateFolder, 'homes') }).userOf('acct_blocked'));
    expect(error.message).toContain(`the folder ${privateFolder} (mode 0700, owner uid 0) does not let`);
    expect(error.message).toContain('set stdio.homes');
  });
});

describe('StdioUsers: one shared user', () => {
  it('serves the first account and refuses the next with what to set, unless sharedUser', async () => {
    const shared = store();
    const users = new StdioUsers({ ...shared, mode: { kind: 'shared', user: undefined, allowMany: false } });
    expect((await users.userOf('acct_first')).uid).toBe(process.getuid?.());
    // Another process sharing the store agrees.
    const error = await rejection(new StdioUsers({ ...shared, mode: { kind: 'shared', user: undefined, allowMany: false } }).userOf('acct_second'));
    expect(error.code).toBe('INVALID_REQUEST');
    expect(error.message).toContain('stdio.sharedUser: true');
    expect(error.message).not.toContain('acct_first');
    const open = new StdioUsers({ ...store(), mode: { kind: 'shared', user: undefined, allowMany: true } });
    await open.userOf('acct_first');
    expect((await open.userOf('acct_second')).ownUid).toBe(false);
  });

  it('warns, naming the risk, only when several accounts may share the user', () => {
    expect(sharedUserWarning({ kind: 'shared', user: undefined, allowMany: true })).toMatch(/can read another's environment \(its env secrets.*signal its processes/);
    expect(sharedUserWarning({ kind: 'shared', user: undefined, allowMany: false })).toBeUndefined();
    expect(sharedUserWarning({ kind: 'per-account', from: 1, to: 2 })).toBeUndefined();
  });
});

describe('accessIssue: what the child’s user can reach', () => {
  const user = { uid: 4_000_000_001, gid: 4_000_000_001, home: undefined, label: 'uid 4000000001 (test)', ownUid: true };

  it.runIf(process.getuid?.() === 0)('names the folder that stops a script, a script it may not read, and a working folder it may not enter', () => {
    const root = mkdtempSync(join(tmpdir(), 'mcp-fleet-access-'));
    chmodSync(root, 0o755);
    const closed = join(root, 'closed');
    mkdirSync(closed, { mode: 0o700 });
    writeFileSync(join(closed, 's.js'), '');
    expect(accessIssue({ command: process.execPath, args: [join(closed, 's.js')] }, user, '/usr/bin')).toEqual({
      field: 'args',
      issue: `the folder ${closed} (mode 0700, owner uid 0) does not let uid 4000000001 (test) reach ${join(closed, 's.js')}: allow it (chmod o+x ${closed}) or move the files to a folder that user can read`,
      kind: 'denied',
    });
    const unreadable = join(root, 'secret.js');
    writeFileSync(unreadable, '', { mode: 0o600 });
    expect(accessIssue({ command: process.execPath, args: ['--inspect=0', 'secret.js'], working_directory: root }, user, '/usr/bin')?.issue).toBe(
      `${unreadable} (mode 0600, owner uid 0) cannot be read by uid 4000000001 (test): allow it (chmod o+r ${unreadable}) or move it to a folder that user can read`,
    );
    expect(accessIssue({ command: process.execPath, working_directory: closed }, user, '/usr/bin')?.field).toBe('working_directory');
    // A package name is not a path: npx finds it, not the file system.
    expect(accessIssue({ command: process.execPath, args: ['-y', '@acme/server'] }, user, '/usr/bin')).toBeUndefined();
  });

  it('a bare command not on the children’s PATH names stdio.path; a path not there yet is `missing` (create lets it pass, spawn refuses it)', () => {
    expect(accessIssue({ command: 'no-such-command-here' }, undefined, '/usr/bin:/bin')).toEqual({
      field: 'command',
      issue: 'no-such-command-here is not found on the PATH stdio servers get (/usr/bin:/bin): give its full path, or set stdio.path (reference server: MCP_FLEET_STDIO_PATH)',
      kind: 'missing',
    });
    expect(accessIssue({ command: 'node', working_directory: '/srv/not-deployed-yet' }, undefined, '/usr/bin:/bin')).toEqual({
      field: 'working_directory',
      issue: '/srv/not-deployed-yet does not exist',
      kind: 'missing',
    });
  });
});

describe('options', () => {
  it('stdio.uids must be a range of uids', () => {
    expect(() => createFleet({ stdio: { commands: ['node'], uids: { from: 0, to: 10 } } })).toThrow('stdio.uids.from must be an integer from 1');
    expect(() => createFleet({ stdio: { commands: ['node'], uids: { from: 500, to: 400 } } })).toThrow('stdio.uids.to must be an integer from 500');
  });
});
