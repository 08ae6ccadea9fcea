/**
 * The whole process group ends with its server: a grandchild the server started is gone too, whether the server is
 * stopped, closed, or exits on its own, and whether or not the grandchild ignores SIGTERM.
 *
 * Killed grandchildren are orphans that init reaps, not us; where init reaps slowly, stop() waits for that (the
 * group is not empty while a zombie is in it), so these tests take a little longer than the others.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { build } from 'esbuild';
import { describe, it, type TestContext } from 'vitest';
import { createStdioSupervisor, type StdioChannel, type StdioSupervisor } from './supervisor.js';
import { childPids, eventually, exists, fixture, NODE, nextLine, processState } from './test-helpers.js';

type Context = TestContext;

/** A supervisor closed when its test ends (tests here run concurrently, so no shared afterEach). */
function supervisor({ onTestFinished }: Context, killGraceMs = 500): StdioSupervisor {
  const created = createStdioSupervisor({ commands: [NODE], killGraceMs, reapTimeoutMs: 5000 });
  onTestFinished(() => created.close());
  return created;
}

/** Starts group.mjs and returns the pids of the leader and its grandchild, once both run. */
async function startGroup({ expect }: Context, stdio: StdioSupervisor, serverId: string, ...flags: string[]) {
  const channel = await stdio.acquire('acct_a', serverId, { command: NODE, args: [fixture('group.mjs'), ...flags] });
  const line = nextLine(channel);
  const { grandchild, leader } = JSON.parse(await line) as { grandchild: number; leader: number };
  expect(leader).toBe(channel.pid);
  return { channel, leader, grandchild };
}

function expectGone({ expect }: Context, ...pids: number[]): void {
  for (const pid of pids) {
    expect(exists(pid), `process ${pid} still exists`).toBe(false);
    expect(processState(pid), `process ${pid} is a zombie`).toBeUndefined();
  }
  expect(childPids(process.pid).filter((pid) => pids.includes(pid))).toEqual([]);
}

// Concurrent: most of the time here is init reaping the killed grandchildren, which overlaps well.
describe.concurrent('process groups', () => {
  it('stop() ends the server and its grandchild: no orphan, no zombie', async (context) => {
    const { expect } = context;
    const stdio = supervisor(context);
    const { leader, grandchild } = await startGroup(context, stdio, 'srv_1');
    expect(childPids(process.pid)).toContain(leader);
    expect(childPids(leader)).toEqual([grandchild]);
    expect(exists(grandchild)).toBe(true);

    await stdio.stop('srv_1');
    expectGone(context, leader, grandchild);
  });

  it('SIGKILLs a group that ignores SIGTERM once the grace is over', async (context) => {
    const { expect } = context;
    const stdio = supervisor(context, 200);
    const { channel, leader, grandchild } = await startGroup(context, stdio, 'srv_1', '--ignore-term');
    const started = Date.now();
    await stdio.stop('srv_1');
    expect(Date.now() - started).toBeGreaterThanOrEqual(190);
    expect((await channel.exited).signal).toBe('SIGKILL');
    expectGone(context, leader, grandchild);
  });

  it('a server that exits on its own takes its grandchild with it', async (context) => {
    const { expect } = context;
    const stdio = supervisor(context, 200);
    const { channel, leader, grandchild } = await startGroup(context, stdio, 'srv_1', '--leader-exits', '--ignore-term');
    expect((await channel.exited).reason).toBe('exited');
    await eventually(() => !exists(grandchild), 5000, 'the orphaned grandchild to be gone');
    expectGone(context, leader, grandchild);
  });

  it('close() ends every group', async (context) => {
    const { expect } = context;
    const stdio = supervisor(context, 200);
    const groups = await Promise.all([
      startGroup(context, stdio, 'srv_1'),
      startGroup(context, stdio, 'srv_2', '--ignore-term'),
      startGroup(context, stdio, 'srv_3'),
    ]);
    await stdio.close();
    expectGone(context, ...groups.flatMap(({ leader, grandchild }) => [leader, grandchild]));
    const closed: StdioChannel[] = groups.map(({ channel }) => channel);
    expect((await Promise.all(closed.map((c) => c.exited))).map((e) => e.reason)).toEqual(['closed', 'closed', 'closed']);
  });

  it('a host that exits without close() kills its groups on the way out', async (context) => {
    // The host is a separate node process running the supervisor bundled from source (not dist/, which other runs
    // may be rebuilding), that acquires a server and exits at once.
    const dir = mkdtempSync(join(tmpdir(), 'mcp-fleet-host-'));
    context.onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
    const bundle = join(dir, 'supervisor.mjs');
    await build({
      entryPoints: [fileURLToPath(new URL('./supervisor.ts', import.meta.url))],
      bundle: true,
      platform: 'node',
      format: 'esm',
      outfile: bundle,
      logLevel: 'silent',
    });
    const script = `
      const { createStdioSupervisor } = await import(${JSON.stringify(pathToFileURL(bundle).href)});
      const stdio = createStdioSupervisor({ commands: [process.execPath] });
      const channel = await stdio.acquire('acct_a', 'srv_1', { command: process.execPath, args: [${JSON.stringify(fixture('group.mjs'))}, '--ignore-term'] });
      channel.onData((chunk) => { process.stdout.write(chunk); process.exit(0); });
    `;
    const { stdout } = await promisify(execFile)(NODE, ['--input-type=module', '-e', script], { timeout: 10_000 });
    const { leader, grandchild } = JSON.parse(stdout.trim()) as { leader: number; grandchild: number };
    await eventually(() => !exists(leader) && !exists(grandchild), 5000, 'the groups of the exited host to be gone');
  });
});
