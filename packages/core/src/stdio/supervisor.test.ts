import { existsSync, mkdtempSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  createStdioSupervisor,
  type StdioChannel,
  type StdioProcessConfig,
  type StdioSupervisor,
  type StdioSupervisorOptions,
} from './supervisor.js';
import { ERROR_HINTS } from '../errors/codes.js';
import { isFleetError } from '../errors/fleet-error.js';
import { childPids, eventually, exists, fixture, NODE, nextLine, processState, sleep } from './test-helpers.js';

const supervisors: StdioSupervisor[] = [];
let tmp: string;

function supervisor(options: StdioSupervisorOptions = {}): StdioSupervisor {
  const created = createStdioSupervisor({ commands: [NODE], killGraceMs: 500, ...options });
  supervisors.push(created);
  return created;
}

const node = (script: string, ...args: string[]): StdioProcessConfig => ({ command: NODE, args: [fixture(script), ...args] });

/** The rejection of a promise that must reject, for asserting on its code. */
async function refusal(promise: Promise<unknown>) {
  try {
    await promise;
  } catch (error) {
    if (isFleetError(error)) return error;
    throw error;
  }
  throw new Error('expected a FleetError, got a channel');
}

async function printed(channel: StdioChannel): Promise<{ pid: number; env: Record<string, string>; argv: string[]; cwd: string }> {
  return JSON.parse(await nextLine(channel)) as { pid: number; env: Record<string, string>; argv: string[]; cwd: string };
}

beforeAll(() => {
  tmp = mkdtempSync(join(tmpdir(), 'mcp-fleet-stdio-'));
});

afterEach(async () => {
  await Promise.all(supervisors.splice(0).map((s) => s.close()));
});

afterAll(() => {
  rmSync(tmp, { recursive: true, force: true });
});

describe('allowlist', () => {
  it('never spawns a command off the allowlist (the marker file is not created), and does spawn one on it', async () => {
    const refused = join(tmp, 'off-allowlist');
    for (const commands of [[], ['/usr/bin/true'], ['node'], [`${NODE} `]]) {
      const error = await refusal(supervisor({ commands }).acquire('acct_a', 'srv_marker', node('marker.mjs', refused)));
      expect(error.code).toBe('DESTINATION_NOT_ALLOWED');
      // What to change: the option, and the reference server's variable.
      expect(error.details.hint).toBe(commands.length === 0 ? ERROR_HINTS.stdioDisabled : ERROR_HINTS.stdioCommand);
    }

    // The control: the same script, allowed, does create its file; by then a refused one would have created its own.
    const allowed = join(tmp, 'on-allowlist');
    const channel = await supervisor({ commands: [NODE] }).acquire('acct_a', 'srv_marker', node('marker.mjs', allowed));
    await eventually(() => existsSync(allowed), 5000, 'marker file');
    expect(channel.alive).toBe(true);
    await sleep(100);
    expect(existsSync(refused)).toBe(false);
  });

  it('runs no shell: metacharacters in args reach the program verbatim and run nothing', async () => {
    const evil = [
      `; touch ${join(tmp, 'semicolon')}`,
      `$(touch ${join(tmp, 'dollar')})`,
      `\`touch ${join(tmp, 'backtick')}\``,
      `| touch ${join(tmp, 'pipe')}`,
      `&& touch ${join(tmp, 'and')}`,
      `> ${join(tmp, 'redirect')}`,
    ];
    const channel = await supervisor().acquire('acct_a', 'srv_shell', node('print-env.mjs', ...evil));
    expect((await printed(channel)).argv).toEqual(evil);

    // A program a shell would have chained: with `sh -c` this creates the file.
    const echo = await supervisor({ commands: ['echo'] }).acquire('acct_a', 'srv_echo', {
      command: 'echo',
      args: [`hello; touch ${join(tmp, 'echo')}`],
    });
    expect(await nextLine(echo)).toBe(`hello; touch ${join(tmp, 'echo')}`);
    await sleep(200);
    for (const name of ['semicolon', 'dollar', 'backtick', 'pipe', 'and', 'redirect', 'echo']) {
      expect(existsSync(join(tmp, name)), name).toBe(false);
    }
  });
});

describe('environment', () => {
  const saved: Record<string, string | undefined> = {};
  beforeAll(() => {
    for (const name of ['DATABASE_URL', 'MCP_FLEET_TEST_SECRET']) saved[name] = process.env[name];
    process.env.DATABASE_URL = 'postgres://host-only:pw@db/app';
    process.env.MCP_FLEET_TEST_SECRET = 'host-secret';
  });
  afterAll(() => {
    for (const [name, value] of Object.entries(saved)) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
  });

  it('gives the child the server env and PATH, and nothing of the host', async () => {
    const channel = await supervisor({ path: '/usr/local/bin:/usr/bin:/bin' }).acquire('acct_a', 'srv_env', {
      ...node('print-env.mjs'),
      env: { API_TOKEN: 'server-secret', PATH: '/tmp/evil-bin' },
    });
    const { env } = await printed(channel);
    expect(env).toEqual({ API_TOKEN: 'server-secret', PATH: '/usr/local/bin:/usr/bin:/bin' });
    expect(JSON.stringify(env)).not.toContain('host-only');
  });

  it('defaults PATH to a fixed minimal one, never the host PATH, and runs in working_directory', async () => {
    const cwd = realpathSync(tmp);
    const channel = await supervisor().acquire('acct_a', 'srv_cwd', { ...node('print-env.mjs'), working_directory: cwd });
    const seen = await printed(channel);
    expect(seen.env).toEqual({ PATH: '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' });
    expect(seen.cwd).toBe(cwd);
  });

  it('resolves a bare allowlisted command through PATH', async () => {
    const channel = await supervisor({ commands: ['echo'], path: '/usr/bin:/bin' }).acquire('acct_a', 'srv_bare', {
      command: 'echo',
      args: ['found'],
    });
    expect(await nextLine(channel)).toBe('found');
  });
});

describe('reuse and restart', () => {
  it('reuses the live process of a server while its configuration is unchanged', async () => {
    const stdio = supervisor();
    const first = await stdio.acquire('acct_a', 'srv_1', node('echo-server.mjs'));
    const second = await stdio.acquire('acct_a', 'srv_1', node('echo-server.mjs'));
    expect(second.pid).toBe(first.pid);
    expect(second).toBe(first);
    expect(stdio.list()).toHaveLength(1);
  });

  it('spawns once for concurrent acquires of one server', async () => {
    const stdio = supervisor();
    const channels = await Promise.all([1, 2, 3].map(() => stdio.acquire('acct_a', 'srv_1', node('echo-server.mjs'))));
    expect(new Set(channels.map((c) => c.pid)).size).toBe(1);
    expect(childPids(process.pid)).toContain(channels[0]?.pid);
  });

  it.each([
    ['args', { args: [fixture('echo-server.mjs'), '--changed'] }],
    ['env', { env: { MODE: 'b' } }],
    ['working_directory', { working_directory: '/' }],
  ])('restarts the process when %s changes', async (_field, change) => {
    const stdio = supervisor();
    const base: StdioProcessConfig = { ...node('echo-server.mjs'), env: { MODE: 'a' } };
    const first = await stdio.acquire('acct_a', 'srv_1', base);
    const second = await stdio.acquire('acct_a', 'srv_1', { ...base, ...change });
    expect(second.pid).not.toBe(first.pid);
    expect(second.alive).toBe(true);
    expect(first.alive).toBe(false);
    expect((await first.exited).reason).toBe('restarted');
    expect(exists(first.pid)).toBe(false);
    expect(stdio.list().map((p) => p.pid)).toEqual([second.pid]);
  });
});

describe('idle timeout', () => {
  it('stops a process nobody uses, and keeps one that is written to', async () => {
    const stdio = supervisor({ idleTimeoutMs: 250 });
    const busy = await stdio.acquire('acct_a', 'srv_busy', node('echo-server.mjs'));
    const idle = await stdio.acquire('acct_a', 'srv_idle', node('echo-server.mjs'));
    const started = Date.now();
    while (Date.now() - started < 600) {
      await busy.write(`${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/keepalive' })}\n`);
      await sleep(50);
    }
    expect(idle.alive).toBe(false);
    expect((await idle.exited).reason).toBe('idle');
    expect(exists(idle.pid)).toBe(false);
    expect(busy.alive).toBe(true);

    expect((await busy.exited).reason).toBe('idle');
    expect(Date.now() - started).toBeLessThan(2000);
    await eventually(() => stdio.list().length === 0, 2000, 'the idle processes to be forgotten');
  });

  it('a new acquire after the idle stop spawns a fresh process', async () => {
    const stdio = supervisor({ idleTimeoutMs: 100 });
    const first = await stdio.acquire('acct_a', 'srv_1', node('echo-server.mjs'));
    await first.exited;
    const second = await stdio.acquire('acct_a', 'srv_1', node('echo-server.mjs'));
    expect(second.pid).not.toBe(first.pid);
    expect(second.alive).toBe(true);
  });
});

describe('crash-loop backoff', () => {
  it('refuses quickly while backing off, doubling up to the maximum, and allows a start after the wait', async () => {
    const stdio = supervisor({ crashBackoff: { initialMs: 200, maxMs: 400, windowMs: 5000 } });
    const crash = node('crash.mjs');

    const first = await stdio.acquire('acct_a', 'srv_crash', crash);
    expect(await first.exited).toMatchObject({ code: 1, reason: 'exited' });
    expect(first.stderrTail()).toContain('failing on purpose');

    const before = Date.now();
    const refused = await refusal(stdio.acquire('acct_a', 'srv_crash', crash));
    expect(Date.now() - before).toBeLessThan(50);
    expect(refused.code).toBe('UPSTREAM_UNREACHABLE');
    expect(refused.retryAfterMs).toBeGreaterThan(0);
    expect(refused.retryAfterMs).toBeLessThanOrEqual(200);

    await sleep((refused.retryAfterMs ?? 0) + 20);
    const second = await stdio.acquire('acct_a', 'srv_crash', crash);
    expect(second.pid).not.toBe(first.pid);
    await second.exited;
    const doubled = await refusal(stdio.acquire('acct_a', 'srv_crash', crash));
    expect(doubled.retryAfterMs).toBeGreaterThan(200);
    expect(doubled.retryAfterMs).toBeLessThanOrEqual(400);

    await sleep((doubled.retryAfterMs ?? 0) + 20);
    await (await stdio.acquire('acct_a', 'srv_crash', crash)).exited;
    const capped = await refusal(stdio.acquire('acct_a', 'srv_crash', crash));
    expect(capped.retryAfterMs).toBeGreaterThan(200);
    expect(capped.retryAfterMs).toBeLessThanOrEqual(400);

    // A changed configuration, and stop(), start afresh.
    const fixed = await stdio.acquire('acct_a', 'srv_crash', node('echo-server.mjs'));
    expect(fixed.alive).toBe(true);
    await stdio.stop('srv_crash');
    await (await stdio.acquire('acct_b', 'srv_other', crash)).exited;
    await stdio.stop('srv_other');
    expect((await stdio.acquire('acct_b', 'srv_other', crash)).pid).toBeGreaterThan(0);
  });

  it('a process that exits cleanly (code 0) within the window is not a crash: the next acquire spawns at once', async () => {
    const stdio = supervisor({ crashBackoff: { initialMs: 10_000, windowMs: 60_000 } });
    expect(await (await stdio.acquire('acct_a', 'srv_1', node('clean-exit.mjs'))).exited).toMatchObject({ code: 0, reason: 'exited' });
    const again = await stdio.acquire('acct_a', 'srv_1', node('clean-exit.mjs'));
    expect(again.pid).toBeGreaterThan(0);
    await again.exited;
  });

  it('a process that exits after the window is not a crash', async () => {
    const stdio = supervisor({ crashBackoff: { initialMs: 10_000, windowMs: 0 } });
    await (await stdio.acquire('acct_a', 'srv_1', node('crash.mjs'))).exited;
    expect((await stdio.acquire('acct_a', 'srv_1', node('crash.mjs'))).pid).toBeGreaterThan(0);
  });

  it('a command or folder that is not there is refused before any spawn, naming the path, and never echoes env values', async () => {
    const missing = '/nonexistent/mcp-fleet-server';
    const stdio = supervisor({ commands: [missing, NODE], crashBackoff: { initialMs: 5000 } });
    const config = { command: missing, env: { API_TOKEN: 'do-not-echo-me' } };
    const failed = await refusal(stdio.acquire('acct_a', 'srv_missing', config));
    expect(failed.code).toBe('UPSTREAM_UNREACHABLE');
    expect(failed.message).toBe(`The stdio server cannot start: ${missing} does not exist.`);
    expect(`${failed.message} ${String(failed.cause)}`).not.toContain('do-not-echo-me');

    const badCwd = await refusal(
      stdio.acquire('acct_a', 'srv_cwd', { ...node('echo-server.mjs'), working_directory: '/nonexistent/dir' }),
    );
    expect(badCwd.code).toBe('UPSTREAM_UNREACHABLE');
    expect(stdio.list()).toEqual([]);
  });
});

describe('injected clock', () => {
  it('backs off on the injected clock: the wait is exact while it stands still, and over once it moves', async () => {
    let clock = 5_000_000;
    const stdio = supervisor({ now: () => clock, crashBackoff: { initialMs: 60_000, windowMs: 10_000 } });
    const crashed = await stdio.acquire('acct_a', 'srv_crash', node('crash.mjs'));
    expect(crashed.startedAt).toBe(5_000_000);
    await crashed.exited;
    expect((await refusal(stdio.acquire('acct_a', 'srv_crash', node('crash.mjs')))).retryAfterMs).toBe(60_000);
    clock += 59_999;
    expect((await refusal(stdio.acquire('acct_a', 'srv_crash', node('crash.mjs')))).retryAfterMs).toBe(1);
    clock += 1;
    const again = await stdio.acquire('acct_a', 'srv_crash', node('crash.mjs'));
    expect(again.startedAt).toBe(5_060_000);
    expect(stdio.list()[0]?.startedAt).toBe(5_060_000);
  });

  it('measures idle time on the injected clock: a process is not idle while the clock stands still', async () => {
    let clock = 0;
    const stdio = supervisor({ now: () => clock, idleTimeoutMs: 50 });
    const channel = await stdio.acquire('acct_a', 'srv_1', node('echo-server.mjs'));
    await sleep(200);
    expect(channel.alive).toBe(true);
    clock += 50;
    expect((await channel.exited).reason).toBe('idle');
  });
});

describe('per-account cap', () => {
  it('refuses a process beyond the cap with STDIO_CAPACITY, per account, and frees the slot on stop', async () => {
    const stdio = supervisor({ maxProcessesPerAccount: 2 });
    const config = node('echo-server.mjs');
    await stdio.acquire('acct_a', 'srv_1', config);
    await stdio.acquire('acct_a', 'srv_2', config);
    const full = await refusal(stdio.acquire('acct_a', 'srv_3', config));
    expect(full.code).toBe('STDIO_CAPACITY');
    await stdio.acquire('acct_a', 'srv_1', config); // reusing a live one needs no slot
    await stdio.acquire('acct_b', 'srv_4', config); // another account has its own cap
    expect(stdio.list('acct_a')).toHaveLength(2);
    await stdio.stop('srv_1');
    expect((await stdio.acquire('acct_a', 'srv_3', config)).alive).toBe(true);
  });

  it('counts concurrent spawns of different servers', async () => {
    const stdio = supervisor({ maxProcessesPerAccount: 2 });
    const results = await Promise.allSettled(['srv_1', 'srv_2', 'srv_3', 'srv_4'].map((id) => stdio.acquire('acct_a', id, node('echo-server.mjs'))));
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(2);
    expect(results.filter((r) => r.status === 'rejected' && isFleetError(r.reason) && r.reason.code === 'STDIO_CAPACITY')).toHaveLength(2);
  });
});

describe('stop and close', () => {
  it('stop() ends the process; no child of ours remains, nor a zombie', async () => {
    const stdio = supervisor();
    const channel = await stdio.acquire('acct_a', 'srv_1', node('echo-server.mjs'));
    expect(childPids(process.pid)).toContain(channel.pid);
    await stdio.stop('srv_1');
    expect(exists(channel.pid)).toBe(false);
    expect(processState(channel.pid)).toBeUndefined();
    expect(childPids(process.pid)).not.toContain(channel.pid);
    expect((await channel.exited).reason).toBe('stopped');
    await expect(channel.write('{}\n')).rejects.toMatchObject({ code: 'UPSTREAM_UNREACHABLE' });
    await stdio.stop('srv_unknown');
  });

  it('close() ends every process and refuses further acquires', async () => {
    const stdio = supervisor();
    const channels = await Promise.all(
      [
        ['acct_a', 'srv_1'],
        ['acct_a', 'srv_2'],
        ['acct_b', 'srv_3'],
      ].map(([account, id]) => stdio.acquire(account as string, id as string, node('echo-server.mjs'))),
    );
    const pids = channels.map((c) => c.pid);
    expect(childPids(process.pid)).toEqual(expect.arrayContaining(pids));
    const pending = stdio.acquire('acct_c', 'srv_4', node('echo-server.mjs')); // in flight while closing
    await stdio.close();
    const late = await pending.catch(() => undefined);
    if (late !== undefined) pids.push(late.pid);
    for (const pid of pids) expect(exists(pid)).toBe(false);
    expect(childPids(process.pid).filter((pid) => pids.includes(pid))).toEqual([]);
    expect(stdio.list()).toEqual([]);
    const after = await refusal(stdio.acquire('acct_a', 'srv_1', node('echo-server.mjs')));
    expect(after.code).toBe('UPSTREAM_UNREACHABLE');
  });

  it('SIGKILLs a process that ignores SIGTERM once the grace is over', async () => {
    const stdio = supervisor({ killGraceMs: 200 });
    const channel = await stdio.acquire('acct_a', 'srv_1', {
      command: NODE,
      args: ['-e', "process.on('SIGTERM', () => {}); process.stdin.on('end', () => {}); process.stdout.write('ready\\n'); setInterval(() => {}, 1000)"],
    });
    await nextLine(channel);
    const started = Date.now();
    await stdio.stop('srv_1');
    expect(Date.now() - started).toBeGreaterThanOrEqual(190);
    expect(await channel.exited).toMatchObject({ signal: 'SIGKILL', reason: 'stopped' });
    expect(exists(channel.pid)).toBe(false);
  });
});

describe('stderr', () => {
  it('keeps only the last bytes of stderr', async () => {
    const stdio = supervisor({ stderrBytes: 1024 });
    const channel = await stdio.acquire('acct_a', 'srv_1', node('echo-server.mjs'));
    const answer = nextLine(channel);
    await channel.write(`${JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'test/stderr', params: { bytes: 5000 } })}\n`);
    await answer;
    await eventually(() => channel.stderrTail().endsWith('END\n'), 2000, 'stderr tail');
    expect(Buffer.byteLength(channel.stderrTail())).toBe(1024);
    expect(channel.stderrTail()).not.toContain('ready');
  });
});

describe('options', () => {
  it('throws on a misconfiguration at construction', () => {
    expect(() => createStdioSupervisor({ maxProcessesPerAccount: 0 })).toThrow(TypeError);
    expect(() => createStdioSupervisor({ killGraceMs: -1 })).toThrow(TypeError);
    expect(() => createStdioSupervisor({ idleTimeoutMs: Number.NaN })).toThrow(TypeError);
  });
});

describe('children as another user', () => {
  const asRoot = process.getuid?.() === 0;

  /** A child that reports its uid and whether it can read its parent's (the service's) environment. */
  const probe = (): StdioProcessConfig => ({
    command: NODE,
    args: [
      '-e',
      `let read;try{require('node:fs').readFileSync('/proc/'+process.ppid+'/environ');read='read'}catch(e){read=e.code}process.stdout.write(JSON.stringify({uid:process.getuid(),gid:process.getgid(),read})+'\\n');process.stdin.resume();`,
    ],
  });

  it.runIf(asRoot)('runs as the user it is given and cannot read the service’s environment', async () => {
    const channel = await supervisor({ user: { uid: 65534, gid: 65534 } }).acquire('acct_a', 'srv_user', probe());
    expect(JSON.parse(await nextLine(channel))).toEqual({ uid: 65534, gid: 65534, read: 'EACCES' });
  });

  it.runIf(asRoot)('without a user, a child of root could read it: the reason for the default', async () => {
    const channel = await supervisor().acquire('acct_a', 'srv_root', probe());
    expect(JSON.parse(await nextLine(channel))).toMatchObject({ uid: 0, read: 'read' });
  });

  it('wrap rewrites the command line after the allowlist check', async () => {
    const wrapped = supervisor({
      commands: [{ command: NODE, args: [fixture('print-env.mjs')], extraArgs: true }],
      wrap: (command, args) => ({ command, args: [...args, 'inside-the-sandbox'] }),
    });
    const channel = await wrapped.acquire('acct_a', 'srv_wrap', node('print-env.mjs', 'given'));
    expect((await printed(channel)).argv).toEqual(['given', 'inside-the-sandbox']);
    const error = await refusal(wrapped.acquire('acct_a', 'srv_wrap_2', { command: NODE, args: ['-e', 'process.exit(0)'] }));
    expect(error.code).toBe('DESTINATION_NOT_ALLOWED');
  });
});
