/**
 * Issue 17, "The first hour": what a newcomer meets between `npm ci` and a working embed, as real processes.
 * `npm start` itself (a quiet build that happens only when the sources changed, the banner last), the first key and
 * its tier, rate limits off for local development, liveness routes, errors that say what fixes them, and the keys
 * CLI behind npm.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { api, killLeftovers, PRINTED_KEY, removeTempDirs, runToExit, startServer, tempDir } from './support/reference-server.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const BUILD = `${ROOT}scripts/build-if-stale.mjs`;
const KEYS_CLI = `${ROOT}examples/reference-server/dist/keys.js`;

const npmChildren: ChildProcess[] = [];
afterEach(async () => {
  for (const child of npmChildren.splice(0)) if (child.pid !== undefined && child.exitCode === null) process.kill(-child.pid, 'SIGKILL');
  await killLeftovers();
  await removeTempDirs();
});

/** Runs npm from the repository root in its own process group; resolves once `until` matches its stdout, or at its exit without one. */
function npmRun(args: string[], env: Record<string, string>, until?: RegExp): Promise<{ stdout: string; stderr: string; child: ChildProcess }> {
  const child = spawn('npm', args, {
    cwd: ROOT,
    detached: true,
    env: { ...process.env, PORT: '0', npm_config_update_notifier: 'false', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  npmChildren.push(child);
  let stdout = '';
  let stderr = '';
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`npm ${args.join(' ')}: nothing matched ${until}:\n${stdout}\n${stderr}`)), 20_000);
    child.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
      stdout += chunk;
      if (until?.test(stdout)) {
        clearTimeout(timer);
        resolve({ stdout, stderr, child });
      }
    });
    child.once('close', () => {
      clearTimeout(timer);
      if (until === undefined || until.test(stdout)) resolve({ stdout, stderr, child });
      else reject(new Error(`npm ${args.join(' ')} exited before ${until}:\n${stdout}\n${stderr}`));
    });
  });
}

describe('npm start', () => {
  it('builds nothing when the sources did not change, and says nothing about building', async () => {
    // Global setup ran the same script: the build is fresh.
    expect((await runToExit({ cwd: ROOT, script: BUILD, args: ['--check'] })).code).toBe(0);
    const again = await runToExit({ cwd: ROOT, script: BUILD });
    expect(again.code).toBe(0);
    expect(again.stdout + again.stderr).toBe('');
    expect(again.ms).toBeLessThan(3000);
  });

  it('runs the build script and then the server; the banner, key last, ends the output', async () => {
    const scripts = JSON.parse(readFileSync(`${ROOT}package.json`, 'utf8')).scripts;
    expect(scripts.start).toBe('node scripts/build-if-stale.mjs && node examples/reference-server/dist/main.js');
    const { stdout, stderr, child } = await npmRun(['start', '--silent'], { MCP_FLEET_STORE: 'memory://' }, /shown this once:\n\n {2}mcpf_\w{40}\n/);
    // No build output (tsup's ESM/CJS/DTS lines): the build is fresh, and when it is not, it is one line on stderr.
    expect(stdout + stderr).not.toMatch(/\b(ESM|CJS|DTS) |Build success|tsup/);
    const lines = stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^mcp-fleet listening on http:\/\/127\.0\.0\.1:\d+\/v1 \(store: memory/);
    expect(stdout).toMatch(/^ {2}API {8}http:\/\/127\.0\.0\.1:\d+\/v1$/m);
    expect(stdout).toMatch(/^ {2}Liveness {3}http:\/\/127\.0\.0\.1:\d+\/healthz, http:\/\/127\.0\.0\.1:\d+\/readyz$/m);
    // The reference server turns the dashboard on (docs/dashboard.md).
    expect(stdout).toMatch(/^ {2}Dashboard {2}http:\/\/127\.0\.0\.1:\d+\/v1\/dashboard\/$/m);
    expect(lines.at(-1)).toMatch(/^ {2}mcpf_[0-9A-Za-z]{40}$/);
    expect(stdout).toContain('(tier pro)');
    process.kill(-(child.pid as number), 'SIGTERM');
  });
});

describe('the first key and the limits', () => {
  it('is a pro key with every scope, keys:manage too: it makes the others over POST /keys', async () => {
    const cwd = await tempDir();
    const server = await startServer({ cwd });
    expect(server.printedKeys).toHaveLength(1);
    expect(server.stdout()).toMatch(/created an API key for account "default" \(tier pro\)/);
    const made = await api(server.url, server.printedKeys[0] as string, 'POST', '/keys', { scopes: ['servers:read'], description: 'a script' });
    expect(made.status).toBe(201);
    expect(made.body.data).toMatchObject({ account: 'default', tier: 'pro', scopes: ['servers:read'], description: 'a script' });
    expect((await api(server.url, made.body.data.secret, 'GET', '/servers')).status).toBe(200);
    await server.stop();
    const listed = await runToExit({ cwd, script: KEYS_CLI, args: ['list', 'default'] });
    expect(listed.stdout).toMatch(/^key_\w{24} {2}default {2}pro {2}all scopes {2}first key /m);
  });

  it('MCP_FLEET_RATE_LIMITS=off admits the 11th create a minute (and says so at start); on is the default', async () => {
    const cwd = await tempDir();
    const server = await startServer({ cwd, env: { MCP_FLEET_STORE: 'memory://', MCP_FLEET_RATE_LIMITS: 'off' } });
    expect(server.stdout()).toContain('Rate limits are off (MCP_FLEET_RATE_LIMITS=off): for local development only.');
    const key = server.printedKeys[0] as string;
    for (let i = 0; i < 12; i++) {
      const made = await api(server.url, key, 'POST', '/servers', { name: `s${i}`, type: 'http', endpoint: 'https://mcp.example.com/mcp' });
      expect(made.status).toBe(201);
      expect(made.headers.get('x-ratelimit-limit')).toBeNull();
    }
    await server.stop();

    const limited = await startServer({ cwd, env: { MCP_FLEET_STORE: 'memory://' } });
    expect(limited.stdout()).not.toContain('Rate limits are off');
    const res = await api(limited.url, limited.printedKeys[0] as string, 'GET', '/servers');
    expect(res.headers.get('x-ratelimit-limit')).toBe('100');
    await limited.stop();
  });

  it('refuses another value of MCP_FLEET_RATE_LIMITS', async () => {
    const exit = await runToExit({ cwd: await tempDir(), env: { MCP_FLEET_STORE: 'memory://', MCP_FLEET_RATE_LIMITS: 'no' } });
    expect(exit.code).toBe(2);
    expect(exit.stderr).toContain('MCP_FLEET_RATE_LIMITS: expected on or off');
  });
});

describe('liveness and readiness', () => {
  it('GET /healthz and /readyz answer without a key, outside the API prefix', async () => {
    const server = await startServer({ cwd: await tempDir() });
    for (const [path, body] of [
      ['/healthz', { status: 'ok' }],
      ['/readyz', { status: 'ready' }],
    ] as const) {
      const res = await fetch(server.origin + path);
      expect(res.status).toBe(200);
      expect(res.headers.get('cache-control')).toBe('no-store');
      expect(await res.json()).toEqual(body);
    }
    // Not API routes: below the prefix they are unknown (after authentication, as every API path).
    expect((await api(server.url, server.printedKeys[0] as string, 'GET', '/healthz')).status).toBe(404);
    await server.stop();
  });
});

describe('errors that say what fixes them', () => {
  it('a loopback endpoint, even on a port fetch refuses, is DESTINATION_NOT_ALLOWED with the hint; the 502 logs one line', async () => {
    const server = await startServer({ cwd: await tempDir(), env: { MCP_FLEET_STORE: 'memory://' } });
    const key = server.printedKeys[0] as string;
    for (const endpoint of ['http://127.0.0.1:9/mcp', 'http://127.0.0.1:1/mcp', 'http://localhost:8080/mcp', 'http://[::1]:8080/mcp', 'http://10.0.0.1/mcp']) {
      const made = await api(server.url, key, 'POST', '/servers', { name: endpoint, type: 'http', endpoint, timeout: 3000 });
      expect(made.status).toBe(201);
      const id = made.body.data.id as string;
      const health = await api(server.url, key, 'GET', `/servers/${id}/health`);
      expect(health.body.data, endpoint).toMatchObject({ status: 'unhealthy', error: { code: 'DESTINATION_NOT_ALLOWED', message: expect.stringContaining('allowPrivateNetworks'), hint: expect.stringContaining('MCP_FLEET_ALLOW_PRIVATE_NETWORKS=1') } });
      const tools = await api(server.url, key, 'GET', `/servers/${id}/tools`);
      expect(tools.status).toBe(502);
      expect(tools.body.error).toMatchObject({ code: 'DESTINATION_NOT_ALLOWED', details: { hint: expect.stringContaining('MCP_FLEET_ALLOW_PRIVATE_NETWORKS=1') } });
      expect(tools.body.error.details.hint).toContain('allowPrivateNetworks');
    }
    // The reference server's log: one JSON line per 502 on stdout (pino), its code, route and request, no stack. The
    // line is written after the answer, so the last one may still be on its way to the pipe.
    const lines = () =>
      server
        .stdout()
        .split('\n')
        .filter((line) => line.includes('DESTINATION_NOT_ALLOWED'))
        .map((line) => JSON.parse(line) as Record<string, unknown>);
    await expect.poll(() => lines().length, { timeout: 5000 }).toBe(5);
    const logged = lines();
    expect(logged).toHaveLength(5);
    for (const line of logged) {
      expect(line).toMatchObject({ code: 'DESTINATION_NOT_ALLOWED', status: 502, method: 'GET', path: expect.stringMatching(/^\/servers\/srv_\w+\/tools$/), request_id: expect.stringMatching(/^req_\w+$/), msg: expect.stringMatching(/^The destination is not allowed/) });
      expect(line).not.toHaveProperty('err');
    }
    expect(server.stdout() + server.stderr()).not.toMatch(/\n\s+at /);
    await server.stop();
  });

  it('a stdio server while stdio is off: 400 naming stdio.commands and MCP_FLEET_STDIO_COMMANDS', async () => {
    const server = await startServer({ cwd: await tempDir(), env: { MCP_FLEET_STORE: 'memory://' } });
    const made = await api(server.url, server.printedKeys[0] as string, 'POST', '/servers', { name: 'everything', type: 'stdio', command: 'npx', args: ['-y', '@modelcontextprotocol/server-everything'] });
    expect(made.status).toBe(400);
    expect(made.body.error.details).toMatchObject({ field: 'command', issue: expect.stringContaining('stdio servers are disabled') });
    expect(made.body.error.details.hint).toContain('stdio.commands');
    expect(made.body.error.details.hint).toContain('MCP_FLEET_STDIO_COMMANDS');
    await server.stop();
  });

  it('an unknown store names the stores that work, PostgreSQL among them', async () => {
    const cwd = await tempDir();
    const unknown = await runToExit({ cwd, env: { MCP_FLEET_STORE: 'mongodb://db.example.com/fleet' } });
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('MCP_FLEET_STORE: expected memory://, sqlite://PATH, redis://… or postgres://…');
    expect(unknown.stderr).not.toContain('not available');
  });
});

describe('npm run keys', () => {
  it('without --, says that npm took the flags and how to pass them', async () => {
    const { stdout, stderr } = await npmRun(['run', '--silent', 'keys', 'create', 'acme', '--tier', 'pro'], { MCP_FLEET_STORE: `sqlite://${await tempDir()}/k.sqlite` });
    expect(stdout).not.toMatch(PRINTED_KEY);
    expect(stderr).toContain('npm took --tier for itself: put -- before the arguments');
    expect(stderr).toContain('npm run keys -- create acme --tier pro');
  });

  it('with --, and through the mcp-fleet bin, the flags arrive', async () => {
    const store = `sqlite://${await tempDir()}/k.sqlite`;
    const viaNpm = await npmRun(['run', '--silent', 'keys', '--', 'create', 'acme', '--tier', 'pro', '--name', 'ci'], { MCP_FLEET_STORE: store }, /secret \(shown this once\)/);
    expect(viaNpm.stdout).toMatch(/ {2}acme {2}pro {2}all scopes but keys:manage {2}ci /);
    const viaBin = await npmRun(['exec', '--', 'mcp-fleet', 'keys', 'create', 'acme', '--tier', 'enterprise'], { MCP_FLEET_STORE: store }, /secret \(shown this once\)/);
    expect(viaBin.stdout).toMatch(/ {2}acme {2}enterprise {2}all scopes but keys:manage /);
  });
});
