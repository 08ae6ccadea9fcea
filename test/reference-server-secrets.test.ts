import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { startV2ToolServer } from '../packages/core/src/mcp/fixtures/tool-servers.js';
import { api, killLeftovers, removeTempDirs, runToExit, startServer, tempDir } from './support/reference-server.js';

/** The built secrets CLI, what `npm run secrets` runs. */
const SECRETS_CLI = fileURLToPath(new URL('../examples/reference-server/dist/secrets.js', import.meta.url));
const API_KEY = 'ops-secret-0123456789abcdef';
const TOKEN = `bearer-${randomBytes(12).toString('hex')}`;
const upstream = await startV2ToolServer({ authorize: (header) => header === `Bearer ${TOKEN}` });

afterEach(async () => {
  await killLeftovers();
});
afterAll(async () => {
  await upstream.close();
  await removeTempDirs();
});

const baseEnv = { MCP_FLEET_API_KEYS: `ops:pro:${API_KEY}`, MCP_FLEET_ALLOW_PRIVATE_NETWORKS: '1' };
/** The store's folder, as bytes: the SQLite file and whatever journal lies beside it. */
const storeBytes = (cwd: string) =>
  readdirSync(join(cwd, '.mcp-fleet'))
    .filter((file) => file.startsWith('fleet.sqlite'))
    .map((file) => readFileSync(join(cwd, '.mcp-fleet', file)).toString('latin1'))
    .join('\n');

describe('reference server: secrets at rest', () => {
  it('the embedded store generates its key (0600) once and reuses it; rotate moves to a new key; a wrong key stops the start', { timeout: 90_000 }, async () => {
    const cwd = await tempDir();
    const first = await startServer({ cwd, env: baseEnv });
    const created = await api(first.url, API_KEY, 'POST', '/servers', { name: 'up', type: 'http', endpoint: upstream.url, authentication: { type: 'bearer', token: TOKEN } });
    expect(created.status).toBe(201);
    const id = created.body.data.id as string;
    await first.stop('SIGTERM');
    expect(first.stderr()).not.toMatch(/plaintext/);

    const keyFile = join(cwd, '.mcp-fleet', 'encryption.key');
    expect(statSync(keyFile).mode & 0o777).toBe(0o600);
    const generated = readFileSync(keyFile, 'utf8').trim();
    expect(Buffer.from(generated, 'base64')).toHaveLength(32);
    expect(storeBytes(cwd)).not.toContain(TOKEN);

    // The next start reuses it: the token still opens and reaches the upstream.
    const second = await startServer({ cwd, env: baseEnv });
    expect(readFileSync(keyFile, 'utf8').trim()).toBe(generated);
    expect((await api(second.url, API_KEY, 'GET', `/servers/${id}/health`)).body.data).toMatchObject({ status: 'healthy' });
    await second.stop('SIGTERM');

    // Rotation to a key of the operator's, the generated one as the previous key.
    const next = randomBytes(32).toString('base64');
    const rotated = await runToExit({
      cwd,
      script: SECRETS_CLI,
      args: ['rotate'],
      env: { MCP_FLEET_ENCRYPTION_KEY: next, MCP_FLEET_PREVIOUS_ENCRYPTION_KEYS: generated },
    });
    expect(rotated.stderr).toBe('');
    expect(rotated.code).toBe(0);
    expect(rotated.stdout).toContain('rotated: 1 server, 0 webhooks');

    const third = await startServer({ cwd, env: { ...baseEnv, MCP_FLEET_ENCRYPTION_KEY: next } });
    expect((await api(third.url, API_KEY, 'GET', `/servers/${id}/health`)).body.data).toMatchObject({ status: 'healthy' });
    await third.stop('SIGTERM');
    expect(storeBytes(cwd)).not.toContain(TOKEN);

    // The generated key alone no longer opens the store: exit 2, naming what to set and never a key.
    const refused = await runToExit({ cwd, env: baseEnv });
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/MCP_FLEET_ENCRYPTION_KEY/);
    expect(refused.stderr).toMatch(/MCP_FLEET_PREVIOUS_ENCRYPTION_KEYS/);
    expect(refused.stderr).not.toContain(generated);
    expect(refused.stderr).not.toContain(next);
  });

  it('a malformed key variable stops the start with a message that names it and not its value', async () => {
    const cwd = await tempDir();
    const bad = await runToExit({ cwd, env: { MCP_FLEET_ENCRYPTION_KEY: 'not-a-key-value' } });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('MCP_FLEET_ENCRYPTION_KEY: expected the base64 of 32 random bytes');
    expect(bad.stderr).not.toContain('not-a-key-value');
    const previous = await runToExit({ cwd, env: { MCP_FLEET_PREVIOUS_ENCRYPTION_KEYS: `${randomBytes(32).toString('base64')},short` } });
    expect(previous.code).toBe(2);
    expect(previous.stderr).toContain('MCP_FLEET_PREVIOUS_ENCRYPTION_KEYS (entry 2)');
  });

  it('without a key on a store of its own choosing (sqlite://), one warning says secrets are plaintext', async () => {
    const cwd = await tempDir();
    const server = await startServer({ cwd, env: { ...baseEnv, MCP_FLEET_STORE: 'sqlite://./data/fleet.sqlite' } });
    await server.stop('SIGTERM');
    expect(server.stderr().match(/stored in plaintext: set the encryptionKey option \(reference server: MCP_FLEET_ENCRYPTION_KEY\)/g)).toHaveLength(1);
  });
});
