import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { startV2ToolServer } from '../packages/core/src/mcp/fixtures/tool-servers.js';
import { REDIS_URL, removeKeysAddedDuring, withDatabase, withoutRedis } from './support/redis.js';
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

  it('sqlite://PATH keeps its files private (folder 0700, files 0600, whatever the umask) and generates its key beside them', { timeout: 60_000 }, async () => {
    const cwd = await tempDir();
    const folder = join(cwd, 'data', 'store');
    const env = { ...baseEnv, MCP_FLEET_STORE: 'sqlite://./data/store/fleet.sqlite' };
    // The umask the server inherits masks nothing: every mode is the one the server asks for.
    const umask = process.umask(0);
    let server: Awaited<ReturnType<typeof startServer>>;
    try {
      server = await startServer({ cwd, env });
    } finally {
      process.umask(umask);
    }
    const created = await api(server.url, API_KEY, 'POST', '/servers', { name: 'up', type: 'http', endpoint: upstream.url, authentication: { type: 'bearer', token: TOKEN } });
    expect(created.status).toBe(201);
    const webhook = await api(server.url, API_KEY, 'POST', '/webhooks', { url: 'https://example.com/hook', events: ['server.created'] });
    const webhookSecret = webhook.body.data.secret as string;
    // While it runs: the database, its WAL and shared memory, and the key, each readable by the service's user alone.
    const files = readdirSync(folder).sort();
    expect(files).toEqual(['encryption.key', 'fleet.sqlite', 'fleet.sqlite-shm', 'fleet.sqlite-wal']);
    for (const file of files) expect([file, statSync(join(folder, file)).mode & 0o777]).toEqual([file, 0o600]);
    expect(statSync(folder).mode & 0o777).toBe(0o700);
    expect(statSync(join(cwd, 'data')).mode & 0o777).toBe(0o700);
    const raw = () => files.filter((f) => f.startsWith('fleet.sqlite')).map((f) => readFileSync(join(folder, f)).toString('latin1')).join('\n');
    expect(raw()).not.toContain(TOKEN);
    expect(raw()).not.toContain(webhookSecret);
    await server.stop('SIGTERM');
    expect(server.stderr()).not.toMatch(/plaintext/);
    const generated = readFileSync(join(folder, 'encryption.key'), 'utf8').trim();
    expect(Buffer.from(generated, 'base64')).toHaveLength(32);

    // The next start reuses the key: the token still opens and reaches the upstream.
    const again = await startServer({ cwd, env });
    expect((await api(again.url, API_KEY, 'GET', `/servers/${created.body.data.id}/health`)).body.data).toMatchObject({ status: 'healthy' });
    await again.stop('SIGTERM');
    expect(readFileSync(join(folder, 'encryption.key'), 'utf8').trim()).toBe(generated);
  });
});

describe.skipIf(withoutRedis('reference server on Redis without a key'))('reference server: a durable store without a key', () => {
  // Database 12: other process suites use 9 to 11.
  const store = REDIS_URL === undefined ? '' : withDatabase(REDIS_URL, 12);
  removeKeysAddedDuring(store);

  it('on Redis, one warning at start says secrets are stored in plaintext and names MCP_FLEET_ENCRYPTION_KEY', async () => {
    const server = await startServer({ cwd: await tempDir(), env: { ...baseEnv, MCP_FLEET_STORE: store } });
    await server.stop('SIGTERM');
    expect(server.stdout().match(/stored in plaintext: set the encryptionKey option \(reference server: MCP_FLEET_ENCRYPTION_KEY\)/g)).toHaveLength(1);
  });
});
