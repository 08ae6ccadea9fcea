/**
 * The dashboard in a real browser (Debian's Chromium, driven by playwright-core), end to end through both adapters:
 * sign in, servers, a health check, a refused endpoint shown beside its field, a webhook saved and verified with
 * "Send test" at a real receiver, the tool calls page; the CSP header; no request leaves 127.0.0.1. One browser,
 * one page per adapter. The hono run takes the screenshots of docs/ (written there with UPDATE_SCREENSHOTS=1).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readBody, refusedPort } from '../packages/core/src/mcp/fixtures/listen.js';
import { startV2ToolServer, type ToolServer } from '../packages/core/src/mcp/fixtures/tool-servers.js';
import { ADAPTERS, type Served, serveFleet } from './support/adapters.js';
import { browserPresent, launchBrowser, SCREENSHOTS } from './support/browser.js';

const DOCS = SCREENSHOTS;
const present = browserPresent;

let browser: Browser;
let upstream: ToolServer;
let receiver: Server;
let receiverUrl: string;
const received: { event: string | undefined; body: string }[] = [];

beforeAll(async () => {
  if (!present) return;
  [browser, upstream] = await Promise.all([launchBrowser(), startV2ToolServer()]);
  receiver = createServer(async (req, res) => {
    received.push({ event: req.headers['x-service-event'] as string | undefined, body: await readBody(req) });
    res.writeHead(200).end('ok');
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks`;
});

afterAll(async () => {
  await browser?.close();
  await upstream?.close();
  receiver?.closeAllConnections();
  await new Promise((resolve) => (receiver ? receiver.close(resolve) : resolve(undefined)));
});

describe('the dashboard build', () => {
  it('is the production build, a few tens of KB at most gzipped (docs/dashboard.md: about 25 KB)', () => {
    const dir = fileURLToPath(new URL('../packages/core/dist/dashboard/assets/', import.meta.url));
    const sizes = readdirSync(dir).map((file) => ({ file, gzipped: gzipSync(readFileSync(`${dir}${file}`), { level: 9 }).byteLength }));
    expect(sizes.map(({ file }) => file.replace(/-[\w-]+\./, '.')).sort()).toEqual(['index.css', 'index.js']);
    expect(sizes.reduce((sum, { gzipped }) => sum + gzipped, 0)).toBeLessThan(30_000);
  });
});

// Hono at the root of its host app, Express under /api: the page finds its API under either prefix.
describe.skipIf(!present).each(ADAPTERS.map((adapter) => ({ adapter, name: adapter.name, mount: adapter.name === 'hono' ? '' : '/api' })))(
  'the dashboard through $name (mounted at "$mount")',
  ({ adapter, name, mount }) => {
    let served: Served;
    let page: Page;
    let key: string;
    const requests: string[] = [];
    const shoot = async (file: string) => {
      if (name === 'hono') await page.screenshot({ path: `${DOCS}${file}`, fullPage: true });
    };

    beforeAll(async () => {
      served = await serveFleet(adapter, { mount, dashboard: true, allowPrivateNetworks: true, onError: () => {}, webhooks: { retry: { baseMs: 200 } } });
      key = (await served.fleet.keys.create({ account: 'acme', tier: 'pro', name: 'dashboard' }))._unsafeUnwrap().secret;
      const server = (await served.fleet.servers.create('acme', { name: 'search', type: 'http', endpoint: upstream.url }))._unsafeUnwrap();
      await served.fleet.servers.create('acme', { name: 'files', type: 'http', endpoint: `http://127.0.0.1:${await refusedPort()}/mcp` });
      await served.fleet.servers.health('acme', server.id);
      for (const text of ['one', 'two', 'three']) await served.fleet.tools.call('acme', server.id, 'echo', { text });
      await served.fleet.tools.call('acme', server.id, 'fail');
      page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
      page.setDefaultTimeout(8_000);
      page.on('request', (request) => requests.push(request.url()));
    });

    afterAll(async () => {
      await page?.close();
      await served?.close();
    });

    it('serves the page under a strict CSP, and signs in with an API key', async () => {
      const response = await page.goto(`${served.url}/dashboard/`);
      expect(response?.status()).toBe(200);
      const headers = response?.headers() ?? {};
      expect(headers['content-security-policy']).toMatch(/^default-src 'self';/);
      expect(headers['content-type']).toBe('text/html; charset=utf-8');
      expect(headers['x-content-type-options']).toBe('nosniff');
      await page.getByLabel('API key').fill('mcpf_wrong');
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.getByText('This API key was not accepted.').waitFor();
      await page.getByLabel('API key').fill(key);
      await shoot('dashboard-sign-in.png');
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.getByRole('heading', { level: 1, name: 'Servers' }).waitFor();
      expect(await page.evaluate('sessionStorage.length')).toBe(1);
    });

    it('lists the servers with health, uptime and error rate, and checks one', async () => {
      const row = page.getByRole('row', { name: /search/ });
      await row.getByRole('cell', { name: 'healthy', exact: true }).waitFor();
      await row.getByRole('img', { name: /Health of search/ }).waitFor();
      const files = page.getByRole('row', { name: /files/ });
      await files.getByRole('button', { name: 'Check health' }).click();
      await files.getByText('UPSTREAM_UNREACHABLE', { exact: false }).waitFor();
      expect(await files.getByText('unhealthy', { exact: true }).count()).toBe(1);
      await row.getByRole('button', { name: 'Check health' }).click();
      await row.getByText(/^\d+ ms$/).waitFor();
      expect(await row.textContent()).toContain('100%');
      await shoot('dashboard-servers.png');
    });

    it('shows the API’s validation error beside the field', async () => {
      await page.getByRole('button', { name: 'Add server' }).click();
      await page.getByLabel('Name').fill('broken');
      await page.getByLabel('Endpoint').fill('ftp://example.test/mcp');
      await page.getByRole('button', { name: 'Add', exact: true }).click();
      const endpoint = page.getByLabel('Endpoint');
      await page.locator('#server-endpoint-error').waitFor();
      expect(await endpoint.getAttribute('aria-invalid')).toBe('true');
      expect(await page.locator('#server-endpoint-error').textContent()).toMatch(/^endpoint /);
      await shoot('dashboard-server-form.png');
      await page.getByRole('button', { name: 'Cancel' }).click();
    });

    it('edits a server and deletes one, in two steps', async () => {
      await page.getByRole('row', { name: /files/ }).getByRole('button', { name: 'Edit' }).click();
      const name = page.getByLabel('Name');
      expect(await name.inputValue()).toBe('files');
      await name.fill('files-renamed');
      await page.getByRole('button', { name: 'Save changes' }).click();
      const renamed = page.getByRole('row', { name: /files-renamed/ });
      await renamed.waitFor();
      await renamed.getByRole('button', { name: 'Delete' }).click();
      await renamed.getByRole('button', { name: 'Confirm delete' }).click();
      await renamed.waitFor({ state: 'detached' });
      expect(await page.getByRole('row').count()).toBe(2);
    });

    it('adds a webhook, shows its secret once, and a test arrives "delivered" at a real receiver', async () => {
      await page.getByRole('link', { name: 'Webhooks' }).click();
      await page.getByRole('heading', { level: 1, name: 'Webhooks' }).waitFor();
      await page.getByRole('button', { name: 'Add webhook' }).click();
      await page.getByLabel('Endpoint URL').fill(receiverUrl);
      await page.getByRole('checkbox', { name: 'server.created' }).check();
      await page.getByRole('checkbox', { name: 'server.health_changed' }).check();
      await page.getByRole('button', { name: 'Save' }).click();
      const secret = await page.getByRole('status', { name: 'Signing secret' }).getByText(/^whsec_/).textContent();
      expect(secret).toMatch(/^whsec_/);
      const before = received.length;
      await page.getByRole('button', { name: 'Send test' }).click();
      const deliveries = page.getByRole('table', { name: /Deliveries/ });
      await deliveries.getByText('delivered', { exact: true }).waitFor({ timeout: 15_000 });
      expect(await deliveries.getByRole('cell', { name: '200', exact: true }).count()).toBeGreaterThan(0);
      expect(received.length).toBeGreaterThan(before);
      await shoot('dashboard-webhooks.png');
      await page.getByRole('button', { name: 'I have kept it' }).click();
      expect(await page.getByText(secret as string).count()).toBe(0);
    });

    it('lists tool calls with filters, and opens one', async () => {
      await page.getByRole('link', { name: 'Tool calls' }).click();
      await page.getByRole('heading', { level: 1, name: 'Tool calls' }).waitFor();
      await page.getByRole('img', { name: /Tool calls per minute/ }).waitFor();
      expect(await page.getByRole('row').filter({ hasText: 'echo' }).count()).toBe(3);
      await page.getByLabel('Status').selectOption('error');
      await page.getByRole('button', { name: 'Filter' }).click();
      await expect.poll(() => page.getByRole('row').filter({ hasText: 'echo' }).count()).toBe(0);
      expect(await page.getByRole('row').filter({ hasText: 'fail' }).count()).toBe(1);
      await page.getByRole('button', { name: /Open tool call fail/ }).click();
      await page.getByRole('heading', { name: /^Tool call call_/ }).waitFor();
      await shoot('dashboard-tool-calls.png');
    });

    it('made no request beyond 127.0.0.1', () => {
      expect(requests.length).toBeGreaterThan(5);
      expect(requests.filter((url) => new URL(url).hostname !== '127.0.0.1')).toEqual([]);
    });
  },
);
