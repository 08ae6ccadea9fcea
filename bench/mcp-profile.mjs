// A CPU profile of the fleet's process while a client calls tools/call through /v1/mcp (docs/performance.md, "The MCP
// endpoint at speed"): the fleet behind Hono in a child process of its own run with `--cpu-prof`, section 4's two
// upstreams (bench/toolcall-server.mjs) in another, the client here. Prints the fleet's CPU per call
// (process.cpuUsage) and the top self-time entries of its profile (bench/cpu-profile.mjs).
//   node bench/mcp-profile.mjs [v1|v2] [calls]       (after `npm run build`; v1: the 2025-era upstream)
//   BENCH_MCP_LEAN=0 node bench/mcp-profile.mjs …     the same with the lean road off (`mcp: { leanRoad: false }`)
//   node bench/mcp-profile.mjs ab [v1|v2] [rounds]    in-process A/B without a profile: two fleets in one child, the
//     lean road on and off, blocks of 100 calls in turn; prints the fleet process's CPU per call of each (medians of
//     the rounds, with their range), a figure that holds on a loaded machine where latency does not.
//   BENCH_BASELINE=<dir> node bench/mcp-profile.mjs ab-base [v1|v2] [rounds]   the same A/B, this build against the
//     baseline checkout's (bench/builds.mjs: its packages/core and packages/hono dist), both with the lean road on.
//   BENCH_BASELINE=<dir> BENCH_PROFILE_BUILD=base node bench/mcp-profile.mjs v1 2000   the profile of the baseline build.
// The profile is written to BENCH_PROFILE_DIR (default: a new directory under the OS's temp dir); never commit it.
import { fork } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { topFunctions } from './cpu-profile.mjs';

const abBase = process.argv[2] === 'ab-base';
const ab = process.argv[2] === 'ab' || abBase;
const era = (ab ? process.argv[3] : process.argv[2]) ?? 'v1';
const calls = Number((ab ? process.argv[4] : process.argv[3]) ?? (ab ? 20 : 2000));
const dir = process.env.BENCH_PROFILE_DIR ?? mkdtempSync(path.join(tmpdir(), 'mcp-profile-'));

if (process.argv[2] === 'fleet') {
  // If the process that forked this one dies (a section that threw, a bench stopped), do not linger.
  process.on('disconnect', () => process.exit(0));
  // The child: the fleet on a port, its two upstreams in a grandchild.
  const { createServer } = await import('node:http');
  const { serve } = await import('@hono/node-server');
  const { importPackage } = await import('./builds.mjs');
  const upstreams = fork(fileURLToPath(new URL('./toolcall-server.mjs', import.meta.url)), [], { execArgv: [], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const urls = await new Promise((resolve) => upstreams.once('message', resolve));
  const start = async (leanRoad, build = 'this') => {
    const { createFleet } = await importPackage(build, 'core');
    const { createFleetApp } = await importPackage(build, 'hono');
    const fleet = createFleet({ allowPrivateNetworks: true, rateLimit: false, mcp: { leanRoad }, onError: (error) => console.error('[profile fleet]', error.code) });
    const { secret } = (await fleet.keys.create({ account: 'profile', tier: 'pro' }))._unsafeUnwrap();
    for (const [name, endpoint] of [['bench-v1', urls.v1], ['bench-v2', urls.v2]]) (await fleet.servers.create('profile', { name, type: 'http', endpoint }))._unsafeUnwrap();
    const server = serve({ fetch: createFleetApp(fleet).fetch, port: 0, hostname: '127.0.0.1', createServer });
    await new Promise((resolve) => (server.listening ? resolve() : server.once('listening', resolve)));
    return { fleet, server, endpoint: `http://127.0.0.1:${server.address().port}/v1/mcp`, secret };
  };
  const fleets =
    process.argv[3] === 'ab'
      ? [await start(true), await start(false)]
      : process.argv[3] === 'ab-base'
        ? [await start(true), await start(true, 'base')]
        : [await start(process.env.BENCH_MCP_LEAN !== '0', process.env.BENCH_PROFILE_BUILD === 'base' ? 'base' : 'this')];
  process.on('message', async (message) => {
    if (message === 'cpu') process.send({ cpu: process.cpuUsage() });
    if (message === 'exit') {
      upstreams.send({ type: 'exit' });
      for (const { server, fleet } of fleets) {
        server.close();
        await fleet.close();
      }
      process.exit(0);
    }
  });
  process.send(fleets.map(({ endpoint, secret }) => ({ endpoint, secret })));
} else {
  const child = fork(fileURLToPath(import.meta.url), ab ? ['fleet', process.argv[2]] : ['fleet'], {
    execArgv: ab ? [] : ['--cpu-prof', '--cpu-prof-dir', dir, '--cpu-prof-interval', '200'],
    stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
  });
  const served = await new Promise((resolve) => child.once('message', resolve));
  const callers = await Promise.all(
    served.map(async ({ endpoint, secret }) => {
      const client = new Client({ name: 'bench-mcp-profile', version: '1.0.0' });
      await client.connect(new StreamableHTTPClientTransport(new URL(endpoint), { requestInit: { headers: { authorization: `Bearer ${secret}` } } }));
      const call = async () => {
        const result = await client.callTool({ name: `bench-${era}__ping`, arguments: {} });
        if (result.content?.[0]?.text !== 'pong') throw new Error(`unexpected result ${JSON.stringify(result).slice(0, 200)}`);
      };
      return { client, call };
    }),
  );
  const cpu = async () => {
    child.send('cpu');
    const { cpu: used } = await new Promise((resolve) => child.once('message', resolve));
    return used.user + used.system;
  };
  if (ab) {
    const BLOCK = 100;
    const perCall = [[], []];
    for (const { call } of callers) for (let i = 0; i < 100; i++) await call();
    for (let round = 0; round < calls; round++) {
      // Alternate which goes first, so that neither always follows the other.
      for (const which of round % 2 === 0 ? [0, 1] : [1, 0]) {
        const before = await cpu();
        for (let i = 0; i < BLOCK; i++) await callers[which].call();
        perCall[which].push(((await cpu()) - before) / BLOCK);
      }
    }
    const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
    const ratios = perCall[0].map((lean, i) => lean / perCall[1][i]);
    const fmt = (xs) => `${median(xs).toFixed(0)} µs (rounds ${Math.min(...xs).toFixed(0)}..${Math.max(...xs).toFixed(0)})`;
    console.log(`${era === 'v1' ? '2025-era' : '2026-07-28'} upstream, ${calls} rounds of ${BLOCK} calls each, the fleet process's CPU per call:`);
    const [a, b] = abBase ? ['this build', 'baseline build'] : ['lean road on', 'lean road off'];
    console.log(`  ${`${a}:`.padEnd(16)}${fmt(perCall[0])}`);
    console.log(`  ${`${b}:`.padEnd(16)}${fmt(perCall[1])}`);
    console.log(`  ${abBase ? 'this / baseline' : 'on / off'}: ${median(ratios).toFixed(2)}× (rounds ${Math.min(...ratios).toFixed(2)}..${Math.max(...ratios).toFixed(2)})`);
    for (const { client } of callers) await client.close();
    child.send('exit');
    await new Promise((resolve) => child.once('exit', resolve));
    process.exit(0);
  }
  const [{ client, call }] = callers;
  for (let i = 0; i < 200; i++) await call();
  const before = await cpu();
  const started = performance.now();
  for (let i = 0; i < calls; i++) await call();
  const perCall = (await cpu()) - before;
  console.log(`${era === 'v1' ? '2025-era' : '2026-07-28'} upstream, ${calls} calls: the fleet's CPU ${(perCall / calls).toFixed(0)} µs per call, ${((performance.now() - started) / calls).toFixed(2)} ms per call`);
  await client.close();
  child.send('exit');
  await new Promise((resolve) => child.once('exit', resolve));
  const file = readdirSync(dir).filter((name) => name.endsWith('.cpuprofile')).map((name) => path.join(dir, name))[0];
  console.log(`profile: ${file}\nself time, % of the fleet process's busy time (start-up included):`);
  for (const f of topFunctions(JSON.parse(readFileSync(file, 'utf8')), 12)) console.log(`  ${f.selfPct.toFixed(1).padStart(5)}  ${f.name}  ${f.where}`);
}
