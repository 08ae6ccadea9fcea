import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { startV2ToolServer } from '../packages/core/src/mcp/fixtures/tool-servers.js';
import { api, killLeftovers, removeTempDirs, runToExit, startServer, tempDir } from './support/reference-server.js';

/** The built key CLI, what `npm run keys` runs. */
const KEYS_CLI = fileURLToPath(new URL('../examples/reference-server/dist/keys.js', import.meta.url));

afterEach(async () => {
  await killLeftovers();
  await removeTempDirs();
});

const keys = (cwd: string, ...args: string[]) => runToExit({ cwd, script: KEYS_CLI, args });

describe('npm run keys', () => {
  it('creates a key that the running server accepts at once, lists it without its secret, and revokes it', async () => {
    const cwd = await tempDir();
    const server = await startServer({ cwd, env: { MCP_FLEET_API_KEYS: 'ops:pro:ops-secret-0123456789' } });

    const created = await keys(cwd, 'create', 'acme', '--tier', 'pro', '--scopes', 'servers:read', '--name', 'ci');
    expect(created.code).toBe(0);
    const secret = /secret \(shown this once\): (mcpf_[0-9A-Za-z]{40})/.exec(created.stdout)?.[1];
    const id = /^(key_[0-9A-Za-z]{24})  acme  pro  servers:read  ci /m.exec(created.stdout)?.[1];
    expect(secret).toBeDefined();
    expect(id).toBeDefined();

    expect((await api(server.url, secret as string, 'GET', '/servers')).status).toBe(200);
    // Its scopes hold: read only.
    expect((await api(server.url, secret as string, 'POST', '/servers', { name: 'x', type: 'http', endpoint: 'https://x.example' })).status).toBe(403);

    const listed = await keys(cwd, 'list', 'acme');
    expect(listed.code).toBe(0);
    expect(listed.stdout).toContain(id as string);
    expect(listed.stdout).not.toContain(secret as string);

    const revoked = await keys(cwd, 'revoke', id as string);
    expect(revoked.code).toBe(0);
    expect(revoked.stdout).toMatch(/revoked \d{4}-/);
    expect((await api(server.url, secret as string, 'GET', '/servers')).status).toBe(401);
    await server.stop('SIGTERM');
  });

  it('a configured key revoked with the CLI stays refused after a restart that still lists it, with a warning', async () => {
    const cwd = await tempDir();
    const env = { MCP_FLEET_API_KEYS: 'ops:pro:ops-secret-0123456789' };
    const first = await startServer({ cwd, env });
    const id = /^(key_[0-9A-Za-z]{24})  ops /m.exec((await keys(cwd, 'list', 'ops')).stdout)?.[1];
    expect(id).toBeDefined();
    expect((await keys(cwd, 'revoke', id as string)).code).toBe(0);
    expect((await api(first.url, 'ops-secret-0123456789', 'GET', '/servers')).status).toBe(401);
    await first.stop('SIGTERM');
    const second = await startServer({ cwd, env });
    expect((await api(second.url, 'ops-secret-0123456789', 'GET', '/servers')).status).toBe(401);
    // A warning line of the server's JSON log.
    const warning = second
      .stdout()
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line) as { level: number; msg: string; key_id?: string })
      .find((line) => line.msg.includes(`MCP_FLEET_API_KEYS lists the key ${id} of account "ops", revoked at`));
    expect(warning).toMatchObject({ level: 40, key_id: id });
    expect(second.stdout() + second.stderr()).not.toContain('ops-secret-0123456789');
    await second.stop('SIGTERM');
  });

  it('--tools gives the key a tool allowlist (|-separated or repeated), listed and enforced by the running server', async () => {
    const upstream = await startV2ToolServer();
    try {
      const cwd = await tempDir();
      const ops = 'ops-secret-0123456789';
      const server = await startServer({ cwd, env: { MCP_FLEET_API_KEYS: `ops:pro:${ops}`, MCP_FLEET_ALLOW_PRIVATE_NETWORKS: '1' } });
      const created = await keys(cwd, 'create', 'ops', '--tools', 'fx__echo|other__*', '--tools', 'third__*');
      expect(created.code, created.stderr).toBe(0);
      expect(created.stdout).toContain('  tools fx__echo|other__*|third__*  ');
      const secret = /secret \(shown this once\): (mcpf_[0-9A-Za-z]{40})/.exec(created.stdout)?.[1] as string;
      const listed = await keys(cwd, 'list', 'ops');
      expect(listed.stdout).toContain('tools fx__echo|other__*|third__*');
      expect(listed.stdout).toContain('all tools');

      const { id } = (await api(server.url, ops, 'POST', '/servers', { name: 'fx', type: 'http', endpoint: upstream.url })).body.data;
      const call = (name: string) => api(server.url, secret, 'POST', `/servers/${id}/tools/call`, { name, arguments: name === 'echo' ? { text: 'hi' } : {} });
      expect((await call('echo')).status).toBe(200);
      const denied = await call('fail');
      expect(denied.status).toBe(403);
      expect(denied.body.error).toMatchObject({ code: 'FORBIDDEN', details: { tool: 'fail' } });
      await server.stop('SIGTERM');
    } finally {
      await upstream.close();
    }
  });

  it('refuses bad input with exit code 2, and what the fleet refuses with 4, each with a clear message', async () => {
    const cwd = await tempDir();
    const badTier = await keys(cwd, 'create', 'acme', '--tier', 'gold');
    expect(badTier.code).toBe(2);
    expect(badTier.stderr).toContain('--tier must be one of free, pro, enterprise');
    const badScope = await keys(cwd, 'create', 'acme', '--scopes', 'servers:everything');
    expect(badScope.code).toBe(2);
    expect(badScope.stderr).toContain('unknown scope');
    const badTools = await keys(cwd, 'create', 'acme', '--tools', 'search__*|files *');
    expect(badTools.code).toBe(4);
    expect(badTools.stderr).toContain('INVALID_REQUEST');
    expect(badTools.stderr).toContain('tools[1]');
    const unknownKey = await keys(cwd, 'revoke', 'key_000000000000000000000000');
    expect(unknownKey.code).toBe(4);
    expect(unknownKey.stderr).toContain('NOT_FOUND');
    const memory = await runToExit({ cwd, script: KEYS_CLI, args: ['list', 'acme'], env: { MCP_FLEET_STORE: 'memory://' } });
    expect(memory.code).toBe(2);
    expect(memory.stderr).toContain('memory://');
  });
});
