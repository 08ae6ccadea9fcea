/**
 * Two reference servers on one PostgreSQL database (MCP_FLEET_STORE=postgres://…, one schema for this file): what
 * docs/deployment.md promises of N processes on PostgreSQL, proved with real processes and requests split across
 * both. The same promises over Redis: rate-limits-processes, mcp-endpoint-processes, webhooks-crash, http/quotas.
 */
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { createFleet } from '@mcp-fleet/core';
import { createPostgresStore } from '@mcp-fleet/postgres';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGatewayUpstream } from '../packages/core/src/mcp/fixtures/gateway-upstream.js';
import { type Received, startReceiver } from '../packages/core/src/webhooks/fixtures/receiver.js';
import { type ApiClient, type ApiResponse, api, earlyInAMinute, expectError, expectSuccess, httpServer, total } from './support/http-client.js';
import { DATABASE_URL, dropSchemas, uniqueSchema, withoutPostgres } from './support/postgres.js';
import { killLeftovers, type RunningServer, removeTempDirs, runToExit, spawnProcess, startServer, tempDir, waitForOutput } from './support/reference-server.js';

const KEYS_CLI = fileURLToPath(new URL('../examples/reference-server/dist/keys.js', import.meta.url));
const WEBHOOK_CHILD = fileURLToPath(new URL('./support/webhook-child.mjs', import.meta.url));

const skip = withoutPostgres('two reference servers on one PostgreSQL');
const schema = uniqueSchema('pair');
/** The webhook case's own: the reference servers' workers (60 s leases) must not pick up its deliveries. */
const hooksSchema = uniqueSchema('pair_hooks');

/** An account of its own per case, so that rate limits and quotas of one case never touch another. */
const CASES = ['names', 'burst', 'quota', 'mcp', 'totals'] as const;
const accounts = Object.fromEntries(CASES.map((name) => [name, { account: `${name}${randomBytes(4).toString('hex')}`, secret: `pair-${randomBytes(16).toString('hex')}` }])) as Record<
  (typeof CASES)[number],
  { account: string; secret: string }
>;
const storeEnv = { MCP_FLEET_STORE: DATABASE_URL, MCP_FLEET_POSTGRES_SCHEMA: schema };

/** Sends request `i` of `n` to process `i % 2`: the burst is split across both. */
function split<T>(clients: readonly ApiClient[], n: number, send: (client: ApiClient, i: number) => Promise<T>): Promise<T[]> {
  return Promise.all(Array.from({ length: n }, (_, i) => send(clients[i % clients.length] as ApiClient, i)));
}

const statuses = (answers: ApiResponse[]) => answers.map((r) => r.status).sort();

describe.skipIf(skip)('two reference servers on one PostgreSQL database', () => {
  let a: RunningServer;
  let b: RunningServer;
  const clients = (name: (typeof CASES)[number]) => [api(a, accounts[name].secret), api(b, accounts[name].secret)] as const;

  beforeAll(async () => {
    const env = {
      ...storeEnv,
      MCP_FLEET_API_KEYS: CASES.map((name) => `${accounts[name].account}:pro:${accounts[name].secret}`).join(','),
      // The MCP case's upstream listens on loopback.
      MCP_FLEET_ALLOW_PRIVATE_NETWORKS: '1',
      // No background probes of the quota case's thousand servers.
      MCP_FLEET_HEALTH_INTERVAL_MS: '0',
    };
    // Both at once on the empty schema: migrations and key registration race too.
    [a, b] = await Promise.all([startServer({ cwd: await tempDir(), env }), startServer({ cwd: await tempDir(), env })]);
  });

  afterAll(async () => {
    await killLeftovers();
    await removeTempDirs();
    await dropSchemas(schema, hooksSchema);
  });

  it('of 10 concurrent creates of one name split across both, exactly one is 201; the rest 409 SERVER_NAME_EXISTS', async () => {
    await earlyInAMinute();
    const answers = await split(clients('names'), 10, (client) => client.post('/servers', httpServer({ name: 'same-name' })));
    expect(answers.filter((r) => r.status === 201), JSON.stringify(statuses(answers))).toHaveLength(1);
    for (const r of answers.filter((x) => x.status !== 201)) expectError(r, 409, 'SERVER_NAME_EXISTS', { name: 'same-name' });
    for (const client of clients('names')) expect(await total(client)).toBe(1);
  });

  it('of 16 concurrent creates split across both at a limit of 10 a minute, exactly 10 are admitted', async () => {
    await earlyInAMinute();
    const answers = await split(clients('burst'), 16, (client) => client.post('/servers', httpServer()));
    const admitted = answers.map((r, i) => ({ r, process: i % 2 })).filter(({ r }) => r.status === 201);
    expect(admitted, JSON.stringify(statuses(answers))).toHaveLength(10);
    for (const r of answers.filter((x) => x.status !== 201)) expectError(r, 429, 'RATE_LIMITED');
    expect(answers.filter((r) => r.status === 429).map((r) => [r.body.error.details.scope, r.body.error.details.limit])).toEqual(Array(6).fill(['operation', 10]));
    // One shared count: each admitted request saw another remainder, 9 down to 0, and both processes admitted some.
    expect(admitted.map(({ r }) => Number(r.headers.get('x-ratelimit-remaining'))).sort((x, y) => x - y)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    expect(new Set(admitted.map(({ process }) => process)).size).toBe(2);
    for (const client of clients('burst')) expect(await total(client)).toBe(10);
  });

  it('a key revoked with `npm run keys -- revoke` (a third process on the database) is refused by both servers on their next request', async () => {
    const cwd = await tempDir();
    const keys = (...args: string[]) => runToExit({ cwd, script: KEYS_CLI, args, env: storeEnv });
    const created = await keys('create', `revoke${randomBytes(4).toString('hex')}`, '--tier', 'pro');
    expect(created.code, created.stderr).toBe(0);
    const secret = /secret \(shown this once\): (mcpf_[0-9A-Za-z]{40})/.exec(created.stdout)?.[1] as string;
    const id = /^(key_[0-9A-Za-z]{24}) /m.exec(created.stdout)?.[1] as string;
    // Each server has accepted the key (and may remember that it did) before the revocation.
    for (const server of [a, b]) expectSuccess(await api(server, secret).get('/servers'), 200);
    const revoked = await keys('revoke', id);
    expect(revoked.code, revoked.stderr).toBe(0);
    for (const server of [b, a]) expectError(await api(server, secret).get('/servers'), 401, 'UNAUTHORIZED');
    // The configured keys, registered by both processes at once on start, are one key each.
    const listed = await keys('list', accounts.names.account);
    expect(listed.stdout.trim().split('\n'), listed.stdout).toHaveLength(1);
  });

  it('the server quota (1000 an account) holds when the last creates race across both', async () => {
    const { account } = accounts.quota;
    // 997 servers written by a third process on the same schema: the library itself, no rate limit on that door.
    const store = await createPostgresStore({ connectionString: DATABASE_URL as string, schema });
    const fleet = createFleet({ store, webhooks: { worker: false } });
    try {
      for (let i = 0; i < 997; i += 20) {
        const batch = Array.from({ length: Math.min(20, 997 - i) }, (_, j) => fleet.servers.create(account, { name: `seed-${i + j}`, type: 'http', endpoint: 'https://mcp.example.com/mcp' }));
        for (const created of await Promise.all(batch)) expect(created.isOk()).toBe(true);
      }
    } finally {
      await fleet.close();
      await store.close();
    }
    await earlyInAMinute();
    const answers = await split(clients('quota'), 10, (client) => client.post('/servers', httpServer()));
    expect(answers.filter((r) => r.status === 201), JSON.stringify(statuses(answers))).toHaveLength(3);
    for (const r of answers.filter((x) => x.status !== 201)) expectError(r, 409, 'QUOTA_EXCEEDED', { resource: 'servers', limit: 1000 });
    for (const client of clients('quota')) expect(await total(client)).toBe(1000);
  });

  it('an MCP session (2025, Streamable HTTP) initialized on one process is served by the other', async () => {
    const upstream = await startGatewayUpstream('alpha');
    const headers = { authorization: `Bearer ${accounts.mcp.secret}` };
    const onA = new Client({ name: 'on-a', version: '1.0.0' });
    const onB = new Client({ name: 'on-b', version: '1.0.0' });
    try {
      expectSuccess(await api(a, accounts.mcp.secret).post('/servers', { name: 'alpha', type: 'http', endpoint: upstream.url }), 201);
      const transportA = new StreamableHTTPClientTransport(new URL(`${a.url}/mcp`), { requestInit: { headers } });
      await onA.connect(transportA);
      const sessionId = transportA.sessionId as string;
      expect(sessionId).toEqual(expect.any(String));
      // The SDK client resumes a known session without initialize when given its id: B never saw it begin.
      const transportB = new StreamableHTTPClientTransport(new URL(`${b.url}/mcp`), { sessionId, requestInit: { headers } });
      await onB.connect(transportB);
      expect((await onB.listTools()).tools.map((t) => t.name)).toContain('alpha__lookup');
      expect((await onB.callTool({ name: 'alpha__lookup', arguments: { key: 'on-b' } })).structuredContent).toEqual({ value: 'alpha:on-b' });
      const calls = expectSuccess(await api(a, accounts.mcp.secret).get('/tool-calls'), 200);
      expect(calls.map((c: { via: string; tool: string }) => [c.via, c.tool])).toEqual([['mcp', 'lookup']]);
    } finally {
      await onA.close();
      await onB.close();
      await upstream.close();
    }
  });

  it('list totals and pages agree between the two processes', async () => {
    const [onA, onB] = clients('totals');
    await earlyInAMinute();
    const created = await split([onA, onB], 8, (client, i) => client.post('/servers', httpServer({ name: `listed-${i}` })));
    expect(statuses(created)).toEqual(Array(8).fill(201));
    const pages = async (client: ApiClient) => {
      const seen: { ids: string[]; pagination: unknown }[] = [];
      for (let page = 1; page <= 4; page++) {
        const res = await client.get(`/servers?limit=3&page=${page}`);
        expectSuccess(res, 200);
        seen.push({ ids: res.body.data.map((s: { id: string }) => s.id), pagination: res.body.pagination });
      }
      return seen;
    };
    const fromA = await pages(onA);
    expect(fromA.map((p) => p.pagination)).toEqual([1, 2, 3, 4].map((page) => ({ page, limit: 3, total: 8, pages: 3 })));
    expect(fromA.flatMap((p) => p.ids).sort()).toEqual(created.map((r) => r.body.data.id).sort());
    expect(await pages(onB)).toEqual(fromA);
    // A delete through one shows in the other's totals at once.
    expectSuccess(await onB.delete(`/servers/${fromA[0]?.ids[0]}`), 200);
    expect([await total(onA), await total(onB)]).toEqual([7, 7]);
  });

  /**
   * At-least-once, with two senders: an attempt whose sender died before an answer may be sent again (by the process
   * that takes its lease over); an attempt that was answered is never sent again, and two live senders never both
   * send one attempt. So: every delivery is answered 2xx exactly once, and a delivery arrives more than once only
   * where its earlier arrivals were cut by the crash (their connection closed before the receiver answered).
   *
   * The senders are processes of the built packages (test/support/webhook-child.mjs, as in webhooks-crash), not
   * reference servers: the reference server has no setting for the worker's lease (60 s), which a crash must outlast.
   */
  it('a webhook receiver gets every delivery while one of two senders is killed with SIGKILL mid-delivery, none twice from two live senders', async () => {
    let holding = true;
    const held: (() => void)[] = [];
    /** Deliveries that arrived while an earlier arrival of theirs was still open: two live senders on one attempt. */
    const overlapping: unknown[] = [];
    const idOf = (r: Received) => r.headers['x-service-delivery'];
    const receiver = await startReceiver((request) => {
      const open = receiver.received.filter((r) => r !== request && idOf(r) === idOf(request) && r.answered === undefined && r.cut !== true);
      if (open.length > 0) overlapping.push(idOf(request));
      return holding ? new Promise((resolve) => held.push(() => resolve({ status: 200 }))) : { status: 200 };
    });
    const cwd = await tempDir();
    const child = (env: Record<string, string>) => spawnProcess({ cwd, script: WEBHOOK_CHILD, env: { STORE: DATABASE_URL as string, SCHEMA: hooksSchema, ...env } });
    const until = async (what: string, done: () => boolean, ms = 15_000) => {
      for (const started = Date.now(); !done(); await new Promise((r) => setTimeout(r, 20))) {
        if (Date.now() - started > ms) throw new Error(`${what}: not within ${ms} ms; received ${JSON.stringify(receiver.received.map(summary))}`);
      }
    };
    const summary = (r: Received) => ({ id: idOf(r), answered: r.answered, cut: r.cut });
    try {
      const count = 12;
      const stage = child({ MODE: 'stage', RECEIVER: receiver.url, COUNT: String(count) });
      const staged = JSON.parse((await waitForOutput(stage, /^\{.*\}$/m, 20_000))[0]) as { servers: string[] };
      await stage.stop('SIGKILL');
      // The lease outlasts an attempt (timeout), so a live sender's lease is never taken over.
      const timing = { MODE: 'work', LEASE_MS: '6000', TIMEOUT_MS: '5000' };
      const doomed = child(timing);
      // One account holds at most half a worker's 4 lanes: the first sender holds 2 attempts open.
      await until('the first sender holds 2 attempts', () => receiver.received.length >= 2);
      const survivor = child(timing);
      await until('the second sender holds 2 more', () => receiver.received.length >= 4);
      await doomed.stop('SIGKILL');
      await until('the killed sender cut its 2', () => receiver.received.filter((r) => r.cut).length >= 2);
      holding = false;
      for (const release of held.splice(0)) release();
      const answeredIds = () => receiver.received.filter((r) => r.answered === 200).map(idOf);
      // The cut attempts come back once their lease (6 s) has lapsed.
      await until('every delivery answered', () => new Set(answeredIds()).size >= count);
      // Time for a duplicate to arrive, if one were coming.
      await new Promise((r) => setTimeout(r, 1000));
      await survivor.stop('SIGKILL');

      const received = receiver.received.map(summary);
      expect(overlapping, JSON.stringify(received)).toEqual([]);
      expect(received.filter((r) => r.cut)).toHaveLength(2);
      expect(received.filter((r) => r.answered === undefined).every((r) => r.cut), JSON.stringify(received)).toBe(true);
      const answered = answeredIds();
      expect(answered, JSON.stringify(received)).toHaveLength(count);
      expect(new Set(answered).size).toBe(count);
      // Only a cut attempt arrived again: what the dead sender never had answered.
      const uncut = received.filter((r) => !r.cut).map((r) => r.id);
      expect(new Set(uncut).size, JSON.stringify(received)).toBe(uncut.length);
      for (const cut of received.filter((r) => r.cut)) expect(answered).toContain(cut.id);
      const servers = receiver.received.filter((r) => r.answered === 200).map((r) => JSON.parse(r.body.toString('utf8')).data.server.id);
      expect(servers.sort()).toEqual([...staged.servers].sort());
    } finally {
      holding = false;
      for (const release of held.splice(0)) release();
      await receiver.close();
    }
    // Three processes started one after the other (up to 20 s for the first under load), a lease of 6 s to lapse, and
    // 15 s for the deliveries: 30 s did not always hold on a loaded 2-core machine.
  }, 60_000);
});
