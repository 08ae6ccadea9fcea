import { execFileSync } from 'node:child_process';
import { chmodSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHtmlServer } from '../../packages/core/src/mcp/fixtures/misc-servers.js';
import { refusedPort } from '../../packages/core/src/mcp/fixtures/listen.js';
import { startV1Server } from '../../packages/core/src/mcp/fixtures/v1-server.js';
import { startV2Server } from '../../packages/core/src/mcp/fixtures/v2-server.js';
import { startWsServer } from '../../packages/core/src/mcp/fixtures/ws-server.js';
import { ERROR_CODES, ERROR_HINTS } from '../../packages/core/src/errors/codes.js';
import { ADAPTERS } from '../support/adapters.js';
import { expectError, expectSuccess, freshClient, serveForSuite, UNKNOWN_SERVER_ID, uniqueName } from '../support/http-client.js';

import { EVERYTHING, NODE } from '../../packages/core/src/stdio/test-helpers.js';
/** This test process's own children that run server-everything (vitest runs each file in its own process). */
function everythingChildren(): number {
  const out = execFileSync('ps', ['-o', 'pid=,args=', '--ppid', String(process.pid)], { encoding: 'utf8' });
  return out.split('\n').filter((line) => line.includes(EVERYTHING)).length;
}

async function eventually(check: () => boolean, ms = 5000): Promise<boolean> {
  for (const end = Date.now() + ms; Date.now() < end; await new Promise((r) => setTimeout(r, 50))) if (check()) return true;
  return check();
}

const HEALTH_FIELDS = ['breaker', 'error', 'error_rate', 'last_check', 'pending', 'response_time', 'state_reason', 'status', 'uptime'];

type Started = { url?: string; origin: string; close(): Promise<void> };
const fixtures: Record<string, Started> = {};
let refused = 0;

beforeAll(async () => {
  fixtures.v1 = await startV1Server();
  fixtures.v1Auth = await startV1Server({ authorize: (header) => header === 'Bearer right-token' });
  fixtures.v2 = await startV2Server();
  fixtures.ws = await startWsServer();
  fixtures.html = await startHtmlServer();
  refused = await refusedPort();
});
afterAll(async () => {
  await Promise.all(Object.values(fixtures).map((f) => f.close()));
});

describe.each(ADAPTERS)('GET /servers/{id}/health through $name', (adapter) => {
  const open = serveForSuite(adapter, { allowPrivateNetworks: true, stdio: { commands: [NODE] } });
  const guarded = serveForSuite(adapter, {});

  async function healthOf(body: Record<string, unknown>, suite = open) {
    const client = await freshClient(suite.served);
    const created = expectSuccess(await client.post('/servers', { name: uniqueName('h'), ...body }), 201);
    const res = await client.get(`/servers/${created.id}/health`);
    return { client, id: created.id as string, res };
  }

  it('probes a 2025-era server (SDK v1) for real: healthy, and the server field follows', async () => {
    const { client, id, res } = await healthOf({ type: 'http', endpoint: fixtures.v1?.url });
    const data = expectSuccess(res, 200);
    expect(Object.keys(data).sort()).toEqual(HEALTH_FIELDS);
    expect(data).toMatchObject({ status: 'healthy', uptime: '100%', error_rate: '0%', error: null });
    expect(Number.isInteger(data.response_time)).toBe(true);
    expect(Date.parse(data.last_check)).toBeGreaterThan(Date.now() - 10_000);
    expect(expectSuccess(await client.get(`/servers/${id}`), 200).health).toBe('healthy');
  });

  it('probes a 2026-07-28 server (SDK v2), a WebSocket server, and a stdio server (server-everything)', async () => {
    for (const body of [
      { type: 'http', endpoint: fixtures.v2?.url },
      { type: 'websocket', endpoint: (fixtures.ws as { url: string }).url },
      { type: 'stdio', command: NODE, args: [EVERYTHING, 'stdio'], timeout: 15_000 },
    ]) {
      const { res } = await healthOf(body);
      expect(expectSuccess(res, 200), JSON.stringify(body)).toMatchObject({ status: 'healthy', error: null });
    }
  });

  it('sends the server authentication: right token healthy, wrong token (the server answers 401) auth_failed, UPSTREAM_AUTH_FAILED', async () => {
    const right = await healthOf({ type: 'http', endpoint: fixtures.v1Auth?.url, authentication: { type: 'bearer', token: 'right-token' } });
    expect(expectSuccess(right.res, 200).status).toBe('healthy');
    const wrong = await healthOf({ type: 'http', endpoint: fixtures.v1Auth?.url, authentication: { type: 'bearer', token: 'wrong-token' } });
    // Our credentials, not the server, need fixing: a state of its own, and not a failure the breaker counts.
    expect(expectSuccess(wrong.res, 200)).toMatchObject({
      status: 'auth_failed',
      state_reason: 'auth_rejected',
      error: { code: 'UPSTREAM_AUTH_FAILED' },
      breaker: { state: 'closed', consecutive_failures: 0 },
    });
    expect(expectSuccess(await wrong.client.get(`/servers/${wrong.id}`), 200).health).toBe('auth_failed');
    expect((await wrong.client.get('/servers?health=auth_failed')).body.pagination.total).toBe(1);
    expect(wrong.res.text).not.toContain('wrong-token');
  });

  it('answers 200 unhealthy with the code of what went wrong, quoting nothing the upstream sent', async () => {
    const down = await healthOf({ type: 'http', endpoint: `http://127.0.0.1:${refused}/mcp` });
    expect(expectSuccess(down.res, 200)).toMatchObject({ status: 'unhealthy', uptime: '0%', error_rate: '100%', error: { code: 'UPSTREAM_UNREACHABLE' } });
    const html = await healthOf({ type: 'http', endpoint: `${fixtures.html?.origin}/` });
    expect(expectSuccess(html.res, 200)).toMatchObject({ status: 'unhealthy', error: { code: 'UPSTREAM_PROTOCOL_ERROR' } });
    expect(html.res.text).not.toContain('FIXTURE-HTML-PAGE');
    expect(expectSuccess(await html.client.get(`/servers/${html.id}`), 200).health).toBe('unhealthy');
  });

  it('keeps uptime over the probes of the day: healthy, then the server goes away, announced once it held for two probes', async () => {
    const fixture = await startV2Server();
    const { client, id, res } = await healthOf({ type: 'http', endpoint: fixture.url });
    expect(expectSuccess(res, 200).uptime).toBe('100%');
    const changes: unknown[] = [];
    const stop = open.served.fleet.events.on('server.health_changed', (event) => {
      if (event.server.id === id) changes.push({ previous: event.previous, current: event.current, reason: event.reason });
    });
    try {
      await fixture.close();
      // One failed probe is not a state yet (health.announceAfter, default 2): pending, the server still healthy.
      const once = expectSuccess(await client.get(`/servers/${id}/health`), 200);
      expect(once).toMatchObject({ status: 'healthy', state_reason: 'probe_ok', pending: { status: 'unhealthy', state_reason: 'probe_failed', probes: 1 }, uptime: '50%', error_rate: '50%' });
      expect(once.error.code).toBe('UPSTREAM_UNREACHABLE');
      expect(changes).toEqual([]);
      const after = expectSuccess(await client.get(`/servers/${id}/health`), 200);
      expect(after).toMatchObject({ status: 'unhealthy', state_reason: 'probe_failed', pending: null, uptime: '33.33%', error_rate: '66.67%' });
      expect((await client.get('/servers?health=unhealthy')).body.pagination.total).toBe(1);
      expect(await eventually(() => changes.length > 0)).toBe(true);
      expect(changes).toEqual([{ previous: 'healthy', current: 'unhealthy', reason: 'probe_failed' }]);
    } finally {
      stop();
    }
  });

  it('reports a stdio command that crashes at start as unhealthy, UPSTREAM_UNREACHABLE, with its exit code and last stderr lines, env values scrubbed', async () => {
    const script = "console.error('loading config'); console.error('fatal: token ' + process.env.API_TOKEN + ' rejected'); process.exit(3)";
    const { client, id, res } = await healthOf({ type: 'stdio', command: NODE, args: ['-e', script], env: { API_TOKEN: 'tok-never-shown-42' }, timeout: 5000 });
    const data = expectSuccess(res, 200);
    expect(data).toMatchObject({ status: 'unhealthy', error: { code: 'UPSTREAM_UNREACHABLE' } });
    // The probe's own retry may already meet the crash backoff: either way the answer says why the server ended.
    const why = 'it exited with code 3; the last lines of its stderr: loading config | fatal: token [redacted] rejected';
    expect([`The stdio server ended: ${why}.`, expect.stringMatching(/^The stdio server keeps crashing \(last start: /)]).toContainEqual(data.error.message);
    expect(data.error.message).toContain(why);
    const again = expectSuccess(await client.get(`/servers/${id}/health`), 200);
    expect(again.error.message).toMatch(/^The stdio server keeps crashing \(last start: .*\); the next start is allowed in \d+ ms\.$/);
    expect(again.error.message).toContain(why);
    expect(JSON.stringify([data, again])).not.toContain('tok-never-shown-42');
  });

  it.runIf(process.getuid?.() === 0)('refuses at create, 400, a script the account’s stdio user cannot read: naming the path, the user and the fix', async () => {
    const folder = mkdtempSync(join(tmpdir(), 'mcp-fleet-private-'));
    chmodSync(folder, 0o700);
    const script = join(folder, 'server.mjs');
    writeFileSync(script, 'process.exit(0)\n');
    const client = await freshClient(open.served);
    const res = await client.post('/servers', { name: uniqueName('h'), type: 'stdio', command: NODE, args: [script] });
    expectError(res, 400, 'INVALID_REQUEST');
    expect(res.body.error.details.field).toBe('args');
    expect(res.body.error.details.issue).toMatch(
      new RegExp(`^the folder ${folder} \\(mode 0700, owner uid 0\\) does not let uid \\d+ \\(this account’s stdio user\\) reach ${script}: allow it \\(chmod o\\+x ${folder}\\) or move the files to a folder that user can read$`),
    );
    const cwd = await client.post('/servers', { name: uniqueName('h'), type: 'stdio', command: NODE, args: ['-e', '1'], working_directory: folder });
    expectError(cwd, 400, 'INVALID_REQUEST');
    expect(cwd.body.error.details.field).toBe('working_directory');
    expect((await client.get('/servers')).body.pagination.total).toBe(0);
  });

  it('refuses private and loopback destinations unless the embedder allows them: DESTINATION_NOT_ALLOWED, with the setting to change', async () => {
    const changes: unknown[] = [];
    const stop = guarded.served.fleet.events.on('server.health_changed', ({ error }) => void changes.push(error));
    try {
      const { res } = await healthOf({ type: 'http', endpoint: fixtures.v1?.url }, guarded);
      const data = expectSuccess(res, 200);
      expect(Object.keys(data).sort()).toEqual(HEALTH_FIELDS);
      expect(data).toMatchObject({ status: 'unhealthy', error: { code: 'DESTINATION_NOT_ALLOWED' } });
      // The hint the API's own DESTINATION_NOT_ALLOWED answers carry: the option, and the reference server's variable.
      expect(data.error).toEqual({ code: 'DESTINATION_NOT_ALLOWED', message: ERROR_CODES.DESTINATION_NOT_ALLOWED.message, hint: ERROR_HINTS.privateNetworks });
      expect(data.error.hint).toContain('allowPrivateNetworks');
      expect(data.error.hint).toContain('MCP_FLEET_ALLOW_PRIVATE_NETWORKS');
      // The server.health_changed event (and its webhook) carries the same error.
      expect(await eventually(() => changes.length > 0)).toBe(true);
      expect(changes).toEqual([data.error]);
    } finally {
      stop();
    }
  });

  it('has no hint on an error that is not the service\'s own configuration', async () => {
    const down = await healthOf({ type: 'http', endpoint: `http://127.0.0.1:${refused}/mcp` });
    const { error } = expectSuccess(down.res, 200);
    expect(Object.keys(error).sort()).toEqual(['code', 'message']);
  });

  it('is 404 for an unknown server or another account, and 403 without servers:health', async () => {
    const owner = await freshClient(open.served);
    const created = expectSuccess(await owner.post('/servers', { name: uniqueName('h'), type: 'http', endpoint: fixtures.v1?.url }), 201);
    const intruder = await freshClient(open.served);
    expectError(await intruder.get(`/servers/${created.id}/health`), 404, 'SERVER_NOT_FOUND', { server_id: created.id });
    expectError(await owner.get(`/servers/${UNKNOWN_SERVER_ID}/health`), 404, 'SERVER_NOT_FOUND');
    const readOnly = await freshClient(open.served, ['servers:read']);
    expectError(await readOnly.get(`/servers/${UNKNOWN_SERVER_ID}/health`), 403, 'FORBIDDEN', { required_scope: 'servers:health' });
    expectError(await owner.post(`/servers/${created.id}/health`), 405, 'METHOD_NOT_ALLOWED');
  });

  it('ends the stdio process of a server when it is deleted', async () => {
    const before = everythingChildren();
    const { client, id, res } = await healthOf({ type: 'stdio', command: NODE, args: [EVERYTHING, 'stdio'], timeout: 15_000 });
    expect(expectSuccess(res, 200).status).toBe('healthy');
    expect(everythingChildren()).toBe(before + 1);
    expectSuccess(await client.delete(`/servers/${id}`), 200);
    expect(await eventually(() => everythingChildren() === before)).toBe(true);
  });
});
