/**
 * Tenants' stdio children against each other, for real (root only: switching users needs it): each runs as its
 * account's own uid, cannot read or signal the other's process, and nothing it starts (a `setsid` grandchild
 * included) outlives its server's delete, restart or the service's shutdown, under each containment.
 */
import { execFileSync, spawn } from 'node:child_process';
import { chmodSync, cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createFleet, type Fleet } from '../fleet.js';
import type { ServerInput } from '../registry/schema.js';
import { CONTAINMENT_KINDS, type ContainmentKind, cgroup2Mount } from './containment.js';
import { createStdioSupervisor, type StdioSupervisor } from './supervisor.js';
import type { StdioUser } from './stdio-users.js';
import { eventually, fixture, NODE, nextLine } from './test-helpers.js';

const ROOT = process.getuid?.() === 0;

/** Pids of every process whose real uid is `uid`. */
function processesOf(uid: number): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const real = /^Uid:\s+(\d+)/m.exec(readFileSync(`/proc/${entry}/status`, 'utf8'))?.[1];
      // A zombie has left everything but its entry: it is gone for our purpose (its parent, init, reaps it).
      const state = /^State:\s+(\S)/m.exec(readFileSync(`/proc/${entry}/status`, 'utf8'))?.[1];
      if (Number(real) === uid && state !== 'Z') pids.push(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  return pids;
}

const textOf = (result: unknown) => ((result as { content: { text: string }[] }).content[0] as { text: string }).text;

const fleets: Fleet[] = [];
const supervisors: StdioSupervisor[] = [];
afterEach(async () => {
  await Promise.all([...fleets.splice(0).map((f) => f.close()), ...supervisors.splice(0).map((s) => s.close())]);
});

describe.runIf(ROOT)('two tenants through the fleet', () => {
  async function tenant(f: Fleet, account: string, secret: string) {
    const body = { name: `own-${secret}`, type: 'stdio', command: NODE, args: [fixture('echo-server.mjs')], env: { TENANT_SECRET: secret } } as ServerInput;
    const id = (await f.servers.create(account, body))._unsafeUnwrap().id;
    let called = (await f.tools.call(account, id, 'echo', { escape: true }))._unsafeUnwrap();
    // A slot of the cap frees once the stopped process's pipes have drained, a moment after it is gone.
    for (let tries = 0; called.error?.message.includes('live stdio server processes') && tries < 20; tries++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      called = (await f.tools.call(account, id, 'echo', { escape: true }))._unsafeUnwrap();
    }
    if (called.result == null) throw new Error(JSON.stringify(called.error));
    const escaped = JSON.parse(textOf(called.result)) as { pid: number; uid: number; grandchild: number };
    return { id, ...escaped };
  }

  it("each runs as its account's uid: neither reads the other's environ nor signals it, and a setsid grandchild ends with its server", async () => {
    const logged: { level: string; fields: Record<string, unknown>; message: string }[] = [];
    const line = (level: string) => (fields: Record<string, unknown>, message: string) => logged.push({ level, fields, message });
    const f = createFleet({ stdio: { commands: [NODE] }, logger: { info: line('info'), warn: line('warn'), error: line('error') } });
    fleets.push(f);
    const a = await tenant(f, 'acct_tenant_a', 'secret-of-tenant-a');
    const b = await tenant(f, 'acct_tenant_b', 'secret-of-tenant-b');
    // The log says which containment holds the trees: on a host with a writable cgroup v2 hierarchy, a cgroup.
    const containment = logged.filter((entry) => entry.message.startsWith('mcp-fleet: stdio containment: '));
    expect(containment).toHaveLength(1);
    if (cgroup2Mount() !== undefined) {
      expect(containment[0]).toMatchObject({ level: 'info', fields: { containment: 'cgroup' } });
      expect(containment[0]?.message).toMatch(new RegExp(`^mcp-fleet: stdio containment: cgroup \\(${cgroup2Mount()}/.*mcp-fleet-stdio-\\d+-${process.pid}-`));
    }
    expect(a.uid).not.toBe(b.uid);
    for (const uid of [a.uid, b.uid]) expect(uid).toBeGreaterThanOrEqual(200_000);
    expect(processesOf(a.uid)).toEqual(expect.arrayContaining([a.pid, a.grandchild]));

    for (const [attacker, victim] of [
      [a, b],
      [b, a],
    ] as const) {
      for (const target of [victim.pid, victim.grandchild]) {
        const outcome = (await f.tools.call(attacker === a ? 'acct_tenant_a' : 'acct_tenant_b', attacker.id, 'echo', { attack: target }))._unsafeUnwrap();
        expect(JSON.parse(textOf(outcome.result))).toEqual({ environ: 'EACCES', signal: 'EPERM' });
      }
    }

    // Delete: A's server and its escaped grandchild are gone; B's are untouched.
    (await f.servers.delete('acct_tenant_a', a.id))._unsafeUnwrap();
    await eventually(() => processesOf(a.uid).length === 0, 8000, "tenant A's processes gone after delete");
    expect(processesOf(b.uid)).toEqual(expect.arrayContaining([b.pid, b.grandchild]));

    // Shutdown: B's too.
    await f.close();
    expect(processesOf(b.uid)).toEqual([]);
  });

  it('a restart (changed configuration) and the per-account cap leave no grandchild behind', async () => {
    const f = createFleet({ stdio: { commands: [NODE], maxProcessesPerAccount: 1 } });
    fleets.push(f);
    const a = await tenant(f, 'acct_tenant_c', 'secret-c');
    (await f.servers.update('acct_tenant_c', a.id, { env: { TENANT_SECRET: 'changed' } }))._unsafeUnwrap();
    await eventually(() => !processesOf(a.uid).includes(a.grandchild), 8000, 'grandchild gone after the restart');
    // The cap counts what the account runs: once the first server is deleted a second one may start, and nothing of
    // the first remains beside it to exceed the cap.
    (await f.servers.delete('acct_tenant_c', a.id))._unsafeUnwrap();
    await eventually(() => processesOf(a.uid).length === 0, 8000, 'nothing of the first server left');
    const second = await tenant(f, 'acct_tenant_c', 'secret-c2');
    await eventually(() => processesOf(a.uid).length === 2, 8000, 'only the second server and its grandchild');
    expect(processesOf(a.uid).sort()).toEqual([second.pid, second.grandchild].sort());
  });
});

describe.runIf(ROOT)('each containment ends a setsid grandchild', () => {
  const users: Record<string, StdioUser> = {
    acct_x: { uid: 266_001, gid: 266_001, home: undefined, label: 'uid 266001', ownUid: true },
    acct_y: { uid: 266_002, gid: 266_002, home: undefined, label: 'uid 266002', ownUid: true },
  };

  async function escape(stdio: StdioSupervisor, account: string, serverId: string) {
    const channel = await stdio.acquire(account, serverId, { command: NODE, args: [fixture('echo-server.mjs')] });
    await channel.write(`${JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'echo', arguments: { escape: true } } })}\n`);
    const reply = JSON.parse(await nextLine(channel)) as { result: { content: { text: string }[] } };
    return JSON.parse(textOf(reply.result)) as { pid: number; uid: number; grandchild: number };
  }

  it.each(CONTAINMENT_KINDS.map((kind) => [kind]))('%s: on stop and on close', async (kind: ContainmentKind) => {
    const stdio = createStdioSupervisor({ commands: [NODE], killGraceMs: 300, containment: [kind], userOf: (account) => Promise.resolve(users[account] as StdioUser) });
    supervisors.push(stdio);
    const x = await escape(stdio, 'acct_x', 'srv_x');
    expect(stdio.containment).toBe(kind);
    expect(x.uid).toBe(266_001);
    await escape(stdio, 'acct_y', 'srv_y');
    expect(processesOf(266_001)).toHaveLength(2);
    await stdio.stop('srv_x');
    await eventually(() => processesOf(266_001).length === 0, 5000, 'x gone after stop');
    expect(processesOf(266_002)).toHaveLength(2);
    await stdio.close();
    expect(processesOf(266_002)).toEqual([]);
  });
});

describe.runIf(ROOT)("npx -y as an account's own user", () => {
  const version = (JSON.parse(readFileSync(fileURLToPath(new URL('../../../../node_modules/@modelcontextprotocol/server-everything/package.json', import.meta.url)), 'utf8')) as { version: string }).version;
  const pkg = `@modelcontextprotocol/server-everything@${version}`;
  /** An npm cache holding the package and its dependencies: filled from the registry once, offline afterwards. */
  const cache = join(tmpdir(), 'mcp-fleet-test-npm-cache');
  let warm: string | undefined;

  beforeAll(() => {
    const prefix = mkdtempSync(join(tmpdir(), 'mcp-fleet-npx-warm-'));
    try {
      // Resolved as npx resolves it (npm exec), so that the cache holds the very documents npx asks for.
      execFileSync('npm', ['exec', '--cache', cache, '--prefer-offline', '--yes', '--package', pkg, '--', 'node', '-e', '0'], { cwd: prefix, stdio: 'ignore', timeout: 180_000 });
      warm = cache;
    } catch {
      warm = undefined; // neither cached nor reachable: the test says so below
    } finally {
      rmSync(prefix, { recursive: true, force: true });
    }
  }, 200_000);

  it('runs a real package through npx -y: the private home (0700, the uid’s) takes npm’s cache', async (context) => {
    if (warm === undefined) context.skip(`${pkg} is neither in ${cache} nor reachable on the npm registry`);
    const homes = mkdtempSync(join(tmpdir(), 'mcp-fleet-homes-'));
    // npm_config_offline: the test never reaches the registry; the package comes from the home's own cache.
    const f = createFleet({ stdio: { commands: ['npx'], homes, envAllow: ['npm_config_offline', 'npm_config_update_notifier'] } });
    fleets.push(f);
    // A folder without node_modules, so that npx cannot find the package installed there (the repository has it).
    const cwd = mkdtempSync(join(tmpdir(), 'mcp-fleet-npx-cwd-'));
    chmodSync(cwd, 0o755);
    const env = { npm_config_offline: 'true', npm_config_update_notifier: 'false' };
    const body = { name: 'everything', type: 'stdio', command: 'npx', args: ['-y', pkg, 'stdio'], env, working_directory: cwd, timeout: 60_000 };
    const id = (await f.servers.create('acct_npx', body as ServerInput))._unsafeUnwrap().id;
    const [folder] = readdirSync(homes);
    const home = join(homes, folder as string);
    const stat = statSync(home);
    expect(stat.mode & 0o777).toBe(0o700);
    expect(stat.uid).toBeGreaterThanOrEqual(200_000);
    // The home as a user who ran npx before would have it: their own cache, their own files.
    cpSync(cache, join(home, '.npm'), { recursive: true, filter: (source) => !source.startsWith(join(cache, '_npx')) });
    execFileSync('chown', ['-R', `${stat.uid}:${stat.gid}`, join(home, '.npm')]);
    const listed = await f.tools.list('acct_npx', id);
    if (listed.isErr()) throw new Error(listed.error.message);
    const tools = listed.value;
    expect(tools.map((t) => t.name)).toContain('echo');
    // npx unpacked the package into the home, as that user.
    expect(statSync(join(home, '.npm', '_npx')).uid).toBe(stat.uid);
  }, 90_000);
});

describe.runIf(ROOT && cgroup2Mount() !== undefined)('a cgroup left by a service that never closed', () => {
  it('is ended when the next supervisor starts its first process, and removed by its close at the latest', async () => {
    const mount = cgroup2Mount() as string;
    // A pid that no longer exists: the service that made the folder is gone.
    const gone = spawn(process.execPath, ['-e', '0']);
    await new Promise((resolve) => gone.once('exit', resolve));
    const namespace = /\[(\d+)\]/.exec(readlinkSync('/proc/self/ns/pid'))?.[1];
    const stale = join(mount, `mcp-fleet-stdio-${namespace}-${gone.pid}-abcdef`);
    mkdirSync(join(stale, 'p1'), { recursive: true });
    // What outlived it: a process still in its cgroup.
    const orphan = spawn('sleep', ['600'], { stdio: 'ignore' });
    writeFileSync(join(stale, 'p1', 'cgroup.procs'), String(orphan.pid));
    const ended = new Promise((resolve) => orphan.once('exit', (_code, signal) => resolve(signal)));

    const stdio = createStdioSupervisor({ commands: [NODE], containment: ['cgroup'] });
    supervisors.push(stdio);
    await stdio.acquire('acct_next', 'srv_next', { command: NODE, args: [fixture('echo-server.mjs')] });
    expect(await ended).toBe('SIGKILL');
    await stdio.close();
    expect(existsSync(stale)).toBe(false);
  });
});
