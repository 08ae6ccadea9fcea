import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createFleet } from '../fleet.js';
import { createDashboard, DASHBOARD_CSP } from './dashboard.js';

function assets(): string {
  const dir = mkdtempSync(join(tmpdir(), 'mcp-fleet-dashboard-'));
  mkdirSync(join(dir, 'assets'));
  writeFileSync(join(dir, 'index.html'), '<!doctype html><script type="module" src="./assets/app-abc123.js"></script>');
  writeFileSync(join(dir, 'assets', 'app-abc123.js'), 'console.log(1)');
  writeFileSync(join(dir, 'assets', 'app-abc123.css'), 'body{}');
  writeFileSync(join(dir, 'notes.txt'), 'not served: no known type');
  return dir;
}

describe('the dashboard’s static files', () => {
  const dir = assets();
  const serve = createDashboard({ assets: dir });
  const get = (path: string, init: RequestInit = {}, url = `http://127.0.0.1/v1${path}`) => serve(new Request(url, init), path);

  it('answers index.html at /dashboard/ under a strict CSP, never cached stale', async () => {
    const response = get('/dashboard/') as Response;
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(response.headers.get('content-security-policy')).toBe(DASHBOARD_CSP);
    expect(DASHBOARD_CSP).toMatch(/^default-src 'self';/);
    expect(DASHBOARD_CSP).not.toContain('unsafe-inline');
    expect(response.headers.get('cache-control')).toBe('no-cache');
    expect(response.headers.get('x-content-type-options')).toBe('nosniff');
    expect(await response.text()).toContain('./assets/app-abc123.js');
  });

  it('serves hashed assets with their type, cached for good, and 304 on a matching ETag', async () => {
    const js = get('/dashboard/assets/app-abc123.js') as Response;
    expect(js.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
    expect(js.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
    expect((get('/dashboard/assets/app-abc123.css') as Response).headers.get('content-type')).toBe('text/css; charset=utf-8');
    const again = get('/dashboard/assets/app-abc123.js', { headers: { 'if-none-match': js.headers.get('etag') as string } }) as Response;
    expect(again.status).toBe(304);
    const head = get('/dashboard/assets/app-abc123.js', { method: 'HEAD' }) as Response;
    expect(head.status).toBe(200);
    expect(await head.text()).toBe('');
  });

  it('redirects /dashboard to /dashboard/ under whatever prefix the request came through', () => {
    const response = get('/dashboard', {}, 'http://127.0.0.1/api/v1/dashboard?x=1') as Response;
    expect(response.status).toBe(308);
    expect(response.headers.get('location')).toBe('/api/v1/dashboard/?x=1');
  });

  it('never redirects to another host, whatever the request path opens with', () => {
    for (const url of ['http://127.0.0.1//evil.example/dashboard', 'http://127.0.0.1/\\evil.example/dashboard']) {
      const location = (get('/dashboard', {}, url) as Response).headers.get('location') as string;
      expect(location, url).toMatch(/^\/[^/\\]/);
      expect(new URL(location, 'http://127.0.0.1/').host).toBe('127.0.0.1');
    }
  });

  it('serves only the files it read: no traversal, no unknown types, GET and HEAD only', () => {
    for (const path of ['/dashboard/../package.json', '/dashboard/%2e%2e/%2e%2e/etc/passwd', '/dashboard/assets/../../index.html', '/dashboard/notes.txt', '/dashboard//etc/passwd']) {
      expect((get(path) as Response).status, path).toBe(404);
    }
    const post = get('/dashboard/', { method: 'POST' }) as Response;
    expect(post.status).toBe(405);
    expect(post.headers.get('allow')).toBe('GET, HEAD');
    expect(get('/servers')).toBeUndefined();
    expect(get('/dashboards')).toBeUndefined();
  });

  it('is off unless asked for, and refuses to start without its files', async () => {
    const off = createFleet();
    expect((await off.handle(new Request('http://127.0.0.1/v1/dashboard/'))).status).toBe(401);
    await off.close();
    const on = createFleet({ dashboard: { assets: dir } });
    const page = await on.handle(new Request('http://127.0.0.1/v1/dashboard/'));
    expect(page.status).toBe(200);
    // The API beside it is unchanged.
    expect((await on.handle(new Request('http://127.0.0.1/v1/servers'))).status).toBe(401);
    await on.close();
    expect(() => createFleet({ dashboard: { assets: join(dir, 'missing') } })).toThrow(/dashboard's files are missing/);
  });
});
