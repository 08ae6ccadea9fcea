// Where a `tools/list` through /v1/mcp goes (docs/performance.md "mcp-list"): the fleet in a child process of its own
// (its CPU per list from `process.cpuUsage()`, its socket writes and bytes counted), 20 upstreams of 20 tools
// (bench/toolcall-server.mjs `many`) in another, the clients here: the SDK Client's `listTools` (what section 7c
// times) and the same list posted with undici's `request` on the same session, read whole and `JSON.parse`d (what
// any client must at least do). Prints, per list: the fleet's CPU, its writes and bytes, each client's time and this
// process's CPU (the client's own work: the SDK's parse and zod validation against a bare read).
//   node bench/mcp-list-profile.mjs [servers] [blocks]            (after `npm run build`; servers: 20 → 400 tools)
//   BENCH_PROFILE=1 node bench/mcp-list-profile.mjs …              with a CPU profile of the fleet over the timed lists
//   BENCH_LIST_KINDS=raw,floor                                      only those clients (of sdk, raw, floor, parse)
// Beside them, the floor of any server: the same request and read of the very bytes of the list answered by a bare
// node:http server (one Buffer, one write) in the fleet's process, and the client's JSON.parse of them alone.
// BENCH_FLEET_NODE_ARGS: Node flags for the fleet's process alone (e.g. `--trace-gc`).
//   node bench/mcp-list-profile.mjs ab CORE_A CORE_B [servers] [blocks]
//     in-process A/B: two fleet processes, one with each build of @mcp-fleet/core (the path of its dist `index.js`,
//     e.g. a copy of the build before under packages/core/node_modules/.base-dist/index.js so that its imports
//     resolve), blocks of lists in turn; the fleet's CPU per list of each, its writes, the p50s and per-block ratios.
import { fork } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { request } from 'undici';
import { topFunctions } from './cpu-profile.mjs';

const BLOCK = Number(process.env.BENCH_LIST_BLOCK ?? 20);

if (process.argv[2] === 'fleet') {
  // If the process that forked this one dies (a section that threw, a bench stopped), do not linger.
  process.on('disconnect', () => process.exit(0));
  // The child: one fleet on a port, one account with `servers` servers over the 20 upstreams.
  const [, , , corePath, servers, urlsJson] = process.argv;
  const net = await import('node:net');
  const counts = { writes: 0 };
  // Counts the fleet's socket writes (one `_writeGeneric` per write or writev the stream hands the socket).
  const generic = net.Socket.prototype._writeGeneric;
  net.Socket.prototype._writeGeneric = function (writev, data, encoding, cb) {
    counts.writes++;
    return generic.call(this, writev, data, encoding, cb);
  };
  const { createServer } = await import('node:http');
  const { serve } = await import('@hono/node-server');
  const { createFleet } = await import(corePath === '-' ? '@mcp-fleet/core' : pathToFileURL(path.resolve(corePath)).href);
  const { createFleetApp } = await import('@mcp-fleet/hono');
  const urls = JSON.parse(urlsJson);
  const fleet = createFleet({ allowPrivateNetworks: true, rateLimit: false, onError: (error) => console.error('[list fleet]', error.code) });
  const { secret } = (await fleet.keys.create({ account: 'lister', tier: 'pro' }))._unsafeUnwrap();
  for (let s = 0; s < Number(servers); s++) {
    (await fleet.servers.create('lister', { name: `s${String(s).padStart(3, '0')}`, type: 'http', endpoint: urls[s % urls.length] }))._unsafeUnwrap();
  }
  const server = serve({ fetch: createFleetApp(fleet).fetch, port: 0, hostname: '127.0.0.1', createServer });
  await new Promise((resolve) => (server.listening ? resolve() : server.once('listening', resolve)));
  let profiler;
  process.on('message', async (message) => {
    if (message?.floor !== undefined) {
      // The floor: a bare node:http server in this process answering every POST with the very bytes of a list (kept
      // as one Buffer, its Content-Length, one write): what any server's answer costs the client, the fleet's work aside.
      const bytes = Buffer.from(message.floor);
      const floor = createServer((req, res) => {
        req.resume();
        req.on('end', () => {
          res.writeHead(200, { 'content-type': 'application/json', 'content-length': bytes.length });
          res.end(bytes);
        });
      });
      floor.listen(0, '127.0.0.1', () => process.send({ floorUrl: `http://127.0.0.1:${floor.address().port}/` }));
    }
    if (message === 'cpu') {
      process.send({ cpu: process.cpuUsage(), counts: { ...counts } });
    }
    if (message === 'profile') {
      const { Session } = await import('node:inspector/promises');
      profiler = new Session();
      profiler.connect();
      await profiler.post('Profiler.enable');
      await profiler.post('Profiler.setSamplingInterval', { interval: 200 });
      await profiler.post('Profiler.start');
      process.send({ profiling: true });
    }
    if (message === 'exit') {
      if (profiler !== undefined) {
        const { profile } = await profiler.post('Profiler.stop');
        writeFileSync(path.join(process.env.BENCH_PROFILE_DIR, 'fleet.cpuprofile'), JSON.stringify(profile));
      }
      server.close();
      await fleet.close();
      process.exit(0);
    }
  });
  process.send({ endpoint: `http://127.0.0.1:${server.address().port}/v1/mcp`, secret });
} else {
  const ab = process.argv[2] === 'ab';
  const cores = ab ? [process.argv[3], process.argv[4]] : ['-'];
  const servers = Number((ab ? process.argv[5] : process.argv[2]) ?? 20);
  const blocks = Number((ab ? process.argv[6] : process.argv[3]) ?? (ab ? 12 : 10));
  const profile = !ab && process.env.BENCH_PROFILE === '1';
  const dir = profile ? (process.env.BENCH_PROFILE_DIR ?? mkdtempSync(path.join(tmpdir(), 'mcp-list-profile-'))) : undefined;
  const upstreams = fork(fileURLToPath(new URL('./toolcall-server.mjs', import.meta.url)), ['many'], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const { many } = await new Promise((resolve) => upstreams.once('message', resolve));
  const expected = servers * 20;

  const fleets = [];
  for (const core of cores) {
    const child = fork(fileURLToPath(import.meta.url), ['fleet', core, String(servers), JSON.stringify(many)], {
      env: { ...process.env, BENCH_PROFILE_DIR: dir ?? '' },
      // Node flags for the fleet's process alone (e.g. `--trace-gc`), which NODE_OPTIONS would give every process.
      execArgv: [...process.execArgv, ...(process.env.BENCH_FLEET_NODE_ARGS ?? '').split(' ').filter(Boolean)],
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    const { endpoint, secret } = await new Promise((resolve) => child.once('message', resolve));
    const client = new Client({ name: 'bench-mcp-list', version: '1.0.0' });
    const transport = new StreamableHTTPClientTransport(new URL(endpoint), { requestInit: { headers: { authorization: `Bearer ${secret}` } } });
    await client.connect(transport);
    const version = client.getNegotiatedProtocolVersion();
    const headers = {
      authorization: `Bearer ${secret}`,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-session-id': transport.sessionId,
      'mcp-protocol-version': version,
    };
    let id = 1_000_000;
    const sdk = async () => (await client.listTools()).tools.length;
    const raw = async () => {
      const { statusCode, headers: answered, body } = await request(endpoint, { method: 'POST', headers, body: JSON.stringify({ jsonrpc: '2.0', id: id++, method: 'tools/list' }) });
      const text = await body.text();
      if (statusCode !== 200) throw new Error(`tools/list answered ${statusCode}: ${text.slice(0, 200)}`);
      raw.type = answered['content-type'];
      raw.bytes = Buffer.byteLength(text);
      return JSON.parse(text).result.tools.length;
    };
    const stats = async () => {
      child.send('cpu');
      const { cpu, counts } = await new Promise((resolve) => child.once('message', resolve));
      return { cpu: cpu.user + cpu.system, ...counts };
    };
    fleets.push({ core, child, client, version, sdk, raw, stats, endpoint, headers, era: transport.sessionId === undefined ? 'no session' : '2025 session' });
  }
  // What one list looks like on the wire (the body as the client's socket delivered it: its pieces, its bytes).
  const wire = async (f) => {
    const { headers: answered, body } = await request(f.endpoint, { method: 'POST', headers: f.headers, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }) });
    const pieces = [];
    for await (const piece of body) pieces.push(piece);
    const text = Buffer.concat(pieces).toString();
    return { type: answered['content-type'], length: answered['content-length'], chunked: answered['transfer-encoding'], pieces: pieces.length, bytes: Buffer.byteLength(text), first: text.slice(0, 320) };
  };
  for (const f of fleets) {
    let count = 0;
    for (let attempt = 0; attempt < 10 && count !== expected; attempt++) count = await f.sdk();
    if (count !== expected) throw new Error(`tools/list answered ${count} tools, expected ${expected}`);
    for (let i = 0; i < 20; i++) await f.raw();
    const seen = await wire(f);
    console.log(`${f.core}: ${seen.type}, content-length ${seen.length ?? '-'}, transfer-encoding ${seen.chunked ?? '-'}, ${seen.bytes} bytes in ${seen.pieces} pieces read; begins ${seen.first}`);
  }

  // One block: BLOCK lists by one client of one fleet; the fleet's CPU, writes and bytes, this process's CPU and the time.
  const block = async (f, which) => {
    const before = await f.stats();
    const mine = process.cpuUsage();
    const times = [];
    for (let i = 0; i < BLOCK; i++) {
      const start = performance.now();
      const n = await f[which]();
      times.push(performance.now() - start);
      if (n !== expected) throw new Error(`${which} listed ${n}`);
    }
    const own = process.cpuUsage(mine);
    const after = await f.stats();
    times.sort((a, b) => a - b);
    return {
      fleetCpu: (after.cpu - before.cpu) / BLOCK / 1000,
      writes: (after.writes - before.writes) / BLOCK,
      clientCpu: (own.user + own.system) / BLOCK / 1000,
      p50: times[Math.floor(BLOCK / 2)],
    };
  };
  const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  const fmt = (xs, digits = 2) => `${median(xs).toFixed(digits)} (${Math.min(...xs).toFixed(digits)}..${Math.max(...xs).toFixed(digits)})`;

  if (ab) {
    const rows = fleets.map(() => []);
    for (let round = 0; round < blocks; round++) {
      for (const which of round % 2 === 0 ? [0, 1] : [1, 0]) rows[which].push(await block(fleets[which], 'raw'));
    }
    console.log(`${expected} tools, ${blocks} rounds of ${BLOCK} lists (undici request on a ${fleets[0].era}), the fleet's CPU per list in ms:`);
    for (const [i, f] of fleets.entries()) {
      console.log(`  ${f.core}: ${fmt(rows[i].map((r) => r.fleetCpu), 3)}  writes/list ${fmt(rows[i].map((r) => r.writes), 1)}  p50 ${fmt(rows[i].map((r) => r.p50))} ms`);
    }
    const ratios = rows[1].map((r, i) => r.fleetCpu / rows[0][i].fleetCpu);
    console.log(`  B / A per round: fleet CPU ${fmt(ratios)}, p50 (the client's time: request, whole body, JSON.parse) ${fmt(rows[1].map((r, i) => r.p50 / rows[0][i].p50))}`);
  } else {
    const [f] = fleets;
    if (profile) {
      f.child.send('profile');
      await new Promise((resolve) => f.child.once('message', resolve));
    }
    // The same list from the floor server (the client's time with no fleet work), and the client's JSON.parse alone.
    const listed = await (await request(f.endpoint, { method: 'POST', headers: f.headers, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }) })).body.text();
    f.child.send({ floor: listed });
    const { floorUrl } = await new Promise((resolve) => f.child.once('message', resolve));
    f.floor = async () => {
      const { body } = await request(floorUrl, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
      return JSON.parse(await body.text()).result.tools.length;
    };
    f.parse = async () => JSON.parse(listed).result.tools.length;
    // BENCH_LIST_KINDS=raw: only those clients (e.g. a profile of the fleet's own lists alone).
    const kinds = process.env.BENCH_LIST_KINDS?.split(',') ?? ['sdk', 'raw', 'floor', 'parse'];
    const rows = Object.fromEntries(kinds.map((which) => [which, []]));
    for (let round = 0; round < blocks; round++) for (const which of round % 2 === 0 ? kinds : [...kinds].reverse()) rows[which].push(await block(f, which));
    console.log(`${expected} tools; the SDK client negotiated ${f.version} (${f.era}); answer ${f.raw.type}, ${f.raw.bytes} bytes`);
    console.log(`${blocks} rounds of ${BLOCK} lists each, medians of the rounds (range):`);
    const label = {
      sdk: 'SDK Client listTools             ',
      raw: 'undici request + JSON.parse      ',
      floor: 'the same from a bare node:http   ',
      parse: 'JSON.parse of the body alone     ',
    };
    for (const which of kinds) {
      const r = rows[which];
      console.log(`  ${label[which]}  p50 ${fmt(r.map((x) => x.p50))} ms   client CPU ${fmt(r.map((x) => x.clientCpu))} ms   fleet CPU ${fmt(r.map((x) => x.fleetCpu))} ms   fleet writes ${fmt(r.map((x) => x.writes), 1)}`);
    }
  }
  for (const f of fleets) {
    await f.client.close();
    f.child.send('exit');
    await new Promise((resolve) => f.child.once('exit', resolve));
  }
  upstreams.send({ type: 'exit' });
  if (profile) {
    const file = path.join(dir, 'fleet.cpuprofile');
    console.log(`profile: ${file}\nself time, % of the fleet process's busy time (the timed lists only):`);
    for (const t of topFunctions(JSON.parse(readFileSync(file, 'utf8')), 15)) console.log(`  ${t.selfPct.toFixed(1).padStart(5)}  ${t.name}  ${t.where}`);
  }
  process.exit(0);
}
