/**
 * The dashboard's Health page in a real browser (Debian's Chromium, driven by playwright-core), through both adapters:
 * a healthy, a degraded and an unreachable server with its breaker open, each with its reason, its 24 h timeline of
 * states and latency; "Check now" from the keyboard; at 1280 and 360 px wide, with axe-core finding no serious or
 * critical violation and the CSP (`default-src 'self'`) refusing nothing. The hono run takes docs/dashboard-health.png
 * (written there with UPDATE_SCREENSHOTS=1).
 */
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type Browser, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { refusedPort } from '../packages/core/src/mcp/fixtures/listen.js';
import { startV2ToolServer, type ToolServer } from '../packages/core/src/mcp/fixtures/tool-servers.js';
import { ADAPTERS, type Served, serveFleet } from './support/adapters.js';

const CHROMIUM = '/usr/bin/chromium';
const FLAGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];
const DOCS = process.env.UPDATE_SCREENSHOTS === '1' ? fileURLToPath(new URL('../docs/', import.meta.url)) : `${mkdtempSync(join(tmpdir(), 'mcp-fleet-shots-'))}/`;
const present = existsSync(CHROMIUM) || process.env.CI === 'true';
const AXE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

let browser: Browser;
let upstream: ToolServer;

beforeAll(async () => {
  if (!present) return;
  [browser, upstream] = await Promise.all([chromium.launch({ executablePath: CHROMIUM, args: FLAGS }), startV2ToolServer()]);
});

afterAll(async () => {
  await browser?.close();
  await upstream?.close();
});

/** axe-core's serious and critical violations on the page as it is (injected through the DevTools protocol, not a script tag: the CSP stays on). */
async function axeViolations(page: Page): Promise<string[]> {
  await page.evaluate(AXE);
  const violations = await page.evaluate(async () => {
    const axe = (globalThis as unknown as { axe: { run: (context: unknown, options: unknown) => Promise<{ violations: { id: string; impact: string; nodes: { target: string[] }[] }[] }> } }).axe;
    const result = await axe.run((globalThis as unknown as { document: unknown }).document, { resultTypes: ['violations'] });
    return result.violations.map((v) => ({ id: v.id, impact: v.impact, targets: v.nodes.map((n) => n.target.join(' ')) }));
  });
  return violations.filter((v) => v.impact === 'serious' || v.impact === 'critical').map((v) => `${v.impact} ${v.id}: ${v.targets.join(', ')}`);
}

describe.skipIf(!present).each(ADAPTERS.map((adapter) => ({ adapter, name: adapter.name, mount: adapter.name === 'hono' ? '' : '/api' })))(
  'the dashboard’s Health page through $name (mounted at "$mount")',
  ({ adapter, name, mount }) => {
    let served: Served;
    let page: Page;
    let key: string;
    const cspViolations: string[] = [];

    beforeAll(async () => {
      served = await serveFleet(adapter, { mount, dashboard: true, allowPrivateNetworks: true, onError: () => {}, // A loaded machine must not make a probe "slow": only the error rate decides here.
        health: { announceAfter: 1, degradedLatencyMs: 30_000, breaker: { failures: 2, backoffMs: 600_000 } } });
      const { fleet } = served;
      key = (await fleet.keys.create({ account: 'acme', tier: 'pro', name: 'dashboard' }))._unsafeUnwrap().secret;
      const search = (await fleet.servers.create('acme', { name: 'search', type: 'http', endpoint: upstream.url }))._unsafeUnwrap();
      const flaky = (await fleet.servers.create('acme', { name: 'flaky', type: 'http', endpoint: upstream.url }))._unsafeUnwrap();
      const down = (await fleet.servers.create('acme', { name: 'down', type: 'http', endpoint: `http://127.0.0.1:${await refusedPort()}/mcp` }))._unsafeUnwrap();
      await fleet.servers.health('acme', search.id);
      await fleet.tools.call('acme', search.id, 'echo', { text: 'one' });
      // One call in three fails: above the default 10% of the window's requests, so the next probe finds it degraded.
      await fleet.servers.health('acme', flaky.id);
      for (const tool of ['echo', 'echo', 'fail']) await fleet.tools.call('acme', flaky.id, tool, tool === 'echo' ? { text: 'x' } : {});
      await fleet.servers.health('acme', flaky.id);
      // Two failed probes open its breaker (health.breaker.failures: 2).
      await fleet.servers.health('acme', down.id);
      await fleet.servers.health('acme', down.id);
      page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
      page.setDefaultTimeout(8_000);
      page.on('console', (message) => {
        if (/Content Security Policy/i.test(message.text())) cspViolations.push(message.text());
      });
      await page.goto(`${served.url}/dashboard/`);
      await page.getByLabel('API key').fill(key);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.getByRole('heading', { level: 1, name: 'Servers' }).waitFor();
    });

    afterAll(async () => {
      await page?.close();
      await served?.close();
    });

    const section = (server: string) => page.getByRole('region', { name: server, exact: true });

    it('shows each server’s state with the rule that decided it, and the breaker', async () => {
      await page.getByRole('link', { name: 'Health', exact: true }).click();
      expect(await page.evaluate('location.hash')).toBe('#/health');
      await page.getByRole('heading', { level: 1, name: 'Health' }).waitFor();

      const flaky = section('flaky');
      await flaky.getByText('degraded', { exact: true }).waitFor();
      await flaky.getByText('too many recent probes and calls failed').waitFor();
      expect(await flaky.getByText('error_rate').count()).toBe(1);
      await flaky.getByText(/closed: calls go/).waitFor();

      const search = section('search');
      await search.getByText('healthy', { exact: true }).waitFor();
      expect(await search.getByText('probe_ok').count()).toBe(1);

      const down = section('down');
      await down.getByText('unhealthy', { exact: true }).waitFor();
      await down.getByText('the latest probe got no MCP answer').waitFor();
      await down.getByText('open: calls fail fast').waitFor();
      await down.getByText(/2 failures in a row, next probe/).waitFor();
    });

    it('draws 24 h of states and of latency per server, with text for those who cannot see them', async () => {
      const states = section('flaky').getByRole('img', { name: /^States of flaky over the last 24 hours: / });
      expect(await states.getAttribute('aria-label')).toMatch(/degraded/);
      // One five-minute slot per bar: the probes of this test all fall in the last one or two.
      expect(await states.locator('rect.st-degraded').count()).toBeGreaterThan(0);
      await section('flaky').getByRole('img', { name: /^p95 latency of flaky/ }).waitFor();
      expect(await section('down').getByRole('img', { name: /States of down/ }).locator('rect.st-unhealthy').count()).toBeGreaterThan(0);
      expect(await section('flaky').getByText(/^\d+ \/ \d+ ms \(1 h\)/).count()).toBeGreaterThan(0);
      expect(await axeViolations(page)).toEqual([]);
      if (name === 'hono') await page.screenshot({ path: `${DOCS}dashboard-health.png`, fullPage: true });
    });

    it('checks a server now from the keyboard', async () => {
      const button = section('search').getByRole('button', { name: 'Check now' });
      await button.focus();
      await page.keyboard.press('Enter');
      await section('search').getByText(/^\d+ ms$/).waitFor();
      // Tab order reaches the next server's button.
      await page.keyboard.press('Tab');
      expect(await page.evaluate('document.activeElement?.textContent')).toBe('Check now');
    });

    it('works at 360 px wide: nothing wider than the screen, no serious accessibility violation, no CSP refusal', async () => {
      await page.setViewportSize({ width: 360, height: 740 });
      await page.getByRole('heading', { level: 1, name: 'Health' }).waitFor();
      await section('down').getByText('open: calls fail fast').waitFor();
      expect(await page.evaluate('document.documentElement.scrollWidth')).toBeLessThanOrEqual(360);
      expect(await axeViolations(page)).toEqual([]);
      expect(cspViolations).toEqual([]);
      await page.setViewportSize({ width: 1280, height: 900 });
    });
  },
);
