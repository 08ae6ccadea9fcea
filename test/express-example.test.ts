/**
 * examples/express-app as a real process: an Express app with routes and a body parser of its own that mounts
 * mcp-fleet under /api. Runs the built `examples/express-app/dist/main.js`.
 */
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { api, killLeftovers, removeTempDirs, spawnProcess, tempDir, waitForOutput, type RunningProcess } from './support/reference-server.js';

const EXPRESS_APP = fileURLToPath(new URL('../examples/express-app/dist/main.js', import.meta.url));

afterEach(async () => {
  await killLeftovers();
  await removeTempDirs();
});

interface App extends RunningProcess {
  origin: string;
  key: string;
}

async function startApp(env: Record<string, string> = {}): Promise<App> {
  const proc = spawnProcess({ cwd: await tempDir(), script: EXPRESS_APP, env });
  const match = await waitForOutput(proc, /^my-app on (http:\/\/\S+) — try:\n\s+curl -H "Authorization: Bearer (mcpf_[0-9A-Za-z]{40})" (\S+)$/m);
  const [, origin, key, curlUrl] = match as unknown as [string, string, string, string];
  expect(curlUrl).toBe(`${origin}/api/v1/servers`);
  return { ...proc, origin, key };
}

describe('examples/express-app', () => {
  it('prints the port it really bound when PORT=0, and the address given by HOST', async () => {
    const app = await startApp({ PORT: '0' });
    expect(app.origin).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(app.origin).not.toMatch(/:0$/);
    expect((await fetch(`${app.origin}/`)).status).toBe(200);

    const v6 = await startApp({ PORT: '0', HOST: '::1' });
    expect(v6.origin).toMatch(/^http:\/\/\[::1\]:\d+$/);
    expect((await fetch(`${v6.origin}/`)).status).toBe(200);
  });

  it('serves its own routes, with its own express.json() for /notes', async () => {
    const app = await startApp({ PORT: '0' });
    const home = await fetch(`${app.origin}/`);
    expect(home.status).toBe(200);
    expect(await home.json()).toEqual({ app: 'my-app', fleet: '/api/v1/servers' });

    const note = { title: 'hello', tags: ['a', 'b'], nested: { n: 1 } };
    const saved = await fetch(`${app.origin}/notes`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(note) });
    expect(saved.status).toBe(201);
    expect(await saved.json()).toEqual({ saved: note });

    // Unknown paths outside the fleet are Express's, not the fleet's JSON 404.
    const missing = await fetch(`${app.origin}/nope`);
    expect(missing.status).toBe(404);
    expect(missing.headers.get('content-type')).not.toContain('application/json');
  });

  it('serves the fleet under /api/v1 with the printed key, and refuses requests without it', async () => {
    const app = await startApp({ PORT: '0' });
    const base = `${app.origin}/api/v1`;
    const listed = await api(base, app.key, 'GET', '/servers');
    expect(listed.status).toBe(200);
    expect(listed.body).toMatchObject({ success: true, data: [], pagination: { total: 0 } });

    const anonymous = await api(base, null, 'GET', '/servers');
    expect(anonymous.status).toBe(401);
    expect(anonymous.body.error.code).toBe('UNAUTHORIZED');
    expect(anonymous.headers.get('www-authenticate')).toMatch(/^Bearer/);
    expect((await api(base, `mcpf_${'A'.repeat(40)}`, 'GET', '/servers')).status).toBe(401);

    // The fleet reads the raw body itself: the app's express.json() is only on /notes.
    const created = await api(base, app.key, 'POST', '/servers', { name: 'via-express', type: 'http', endpoint: 'https://mcp.example.com/mcp' });
    expect(created.status).toBe(201);
    const malformed = await fetch(`${base}/servers`, {
      method: 'POST',
      headers: { authorization: `Bearer ${app.key}`, 'content-type': 'application/json' },
      body: '{"name":',
    });
    expect(malformed.status).toBe(400);
    expect(((await malformed.json()) as { error: { code: string } }).error.code).toBe('INVALID_REQUEST');
    const after = await api(base, app.key, 'GET', '/servers');
    expect(after.body.data.map((s: { name: string }) => s.name)).toEqual(['via-express']);

    // Only /api/v1 is the fleet's: /v1 at the root is the app's (Express 404).
    expect((await fetch(`${app.origin}/v1/servers`, { headers: { authorization: `Bearer ${app.key}` } })).status).toBe(404);
  });

  it('stops on SIGTERM with exit code 0, even with an idle keep-alive connection', async () => {
    const app = await startApp({ PORT: '0' });
    expect((await api(`${app.origin}/api/v1`, app.key, 'GET', '/servers')).status).toBe(200);
    const exit = await app.stop('SIGTERM');
    expect(exit.code).toBe(0);
    expect(exit.ms).toBeLessThan(2000);
  });
});
