/**
 * The dashboard's Health page in a real browser (Debian's Chromium, driven by playwright-core), through both adapters:
 * a healthy, a degraded and an unreachable server with its breaker open, each with its reason, its 24 h timeline of
 * states and latency; "Check now" from the keyboard; at 1280 and 360 px wide, with axe-core finding no serious or
 * critical violation and the CSP (`default-src 'self'`) refusing nothing. The hono run takes docs/dashboard-health.png
 * (written there with UPDATE_SCREENSHOTS=1).
 */
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { refusedPort } from '../packages/core/src/mcp/fixtures/listen.js';
import { startV2ToolServer, type ToolServer } from '../packages/core/src/mcp/fixtures/tool-servers.js';
import { ADAPTERS, type Served, serveFleet } from './support/adapters.js';
import { axeViolations, browserPresent, launchBrowser, SCREENSHOTS } from './support/browser.js';

const DOCS = SCREENSHOTS;
const present = browserPresent;

let browser: Browser;
let upstream: ToolServer;

beforeAll(async () => {
  if (!present) return;
  [browser, upstream] = await Promise.all([launchBrowser(), startV2ToolServer()]);
});

afterAll(async () => {
  await browser?.close();
  await upstream?.close();
});

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

    it('checks a server now from the keyboard, and the keyboard keeps its place', async () => {
      const button = section('search').getByRole('button', { name: 'Check now' });
      await button.focus();
      await page.keyboard.press('Enter');
      await section('search').getByText(/^\d+ ms$/).waitFor();
      const focused = () => page.evaluate('[document.activeElement?.textContent, document.activeElement?.closest("section")?.querySelector("h2")?.textContent]');
      // The button kept the focus through the check (a button disabled while checking loses it to the page's body),
      // so the keyboard checks again from where it was.
      expect(await focused()).toEqual(['Check now', 'search']);
      const checks = upstream.methods.length;
      await page.keyboard.press('Enter');
      await expect.poll(() => upstream.methods.length).toBeGreaterThan(checks);
      await section('search').getByText(/^\d+ ms$/).waitFor();
      expect(await focused()).toEqual(['Check now', 'search']);
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
