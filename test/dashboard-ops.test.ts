/**
 * The dashboard's pages to run the fleet from (docs/dashboard.md), in Debian's Chromium driven by playwright-core,
 * through both adapters over real HTTP, against real upstream MCP servers: Keys (issue a key, use it, revoke it),
 * Connect an agent (the configurations carry this fleet's URL and never the key), Tools ("Try it" from a form
 * generated from the tool's inputSchema; upstream markup shown as text), Import (a Claude Desktop file, planned, then
 * created). Each page passes axe-core with no serious or critical violation, at 1280 and at 360 px wide, under the
 * page's CSP. The hono run takes the screenshots of docs/ (written there with UPDATE_SCREENSHOTS=1).
 */
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SCOPES } from '../packages/core/src/auth/scopes.js';
import { exportClientConfig } from '../packages/core/src/import/export.js';
import { startV2ToolServer, type ToolServer } from '../packages/core/src/mcp/fixtures/tool-servers.js';
import { type DashboardUpstream, HOSTILE_TEXT, PNG_BASE64, startDashboardUpstream } from './fixtures/dashboard-upstream.js';
import { ADAPTERS, type Served, serveFleet } from './support/adapters.js';
import { axeViolations, browserPresent, launchBrowser, SCREENSHOTS } from './support/browser.js';

const DOCS = SCREENSHOTS;
const present = browserPresent;

let browser: Browser;
let search: ToolServer;
let trips: DashboardUpstream;

beforeAll(async () => {
  if (!present) return;
  [browser, search, trips] = await Promise.all([launchBrowser(), startV2ToolServer(), startDashboardUpstream()]);
});

afterAll(async () => {
  await browser?.close();
  await search?.close();
  await trips?.close();
});

describe.skipIf(!present).each(ADAPTERS.map((adapter) => ({ adapter, name: adapter.name, mount: adapter.name === 'hono' ? '' : '/api' })))(
  'the dashboard’s operator pages through $name (mounted at "$mount")',
  ({ adapter, name, mount }) => {
    let served: Served;
    let context: BrowserContext;
    let page: Page;
    let admin: string;
    let reader: string;
    let tripsId: string;
    const cspViolations: string[] = [];
    const shoot = async (file: string) => {
      if (name === 'hono') await page.screenshot({ path: `${DOCS}${file}`, fullPage: true });
    };
    const open = async (hash: string, heading: string) => {
      await page.getByRole('link', { name: heading === 'API keys' ? 'Keys' : heading === 'Import servers' ? 'Import' : heading, exact: true }).click();
      expect(await page.evaluate('location.hash')).toBe(hash);
      await page.getByRole('heading', { level: 1, name: heading }).waitFor();
    };
    /** A file dropped on the import box, as a person dragging it from their desktop would. */
    const drop = (file: string, text: string) =>
      page.evaluate(`{
        const transfer = new DataTransfer();
        transfer.items.add(new File([${JSON.stringify(text)}], ${JSON.stringify(file)}, { type: 'application/json' }));
        document.getElementById('import-document').dispatchEvent(new DragEvent('drop', { dataTransfer: transfer, bubbles: true, cancelable: true }));
      }`);
    const api = (path: string, key: string) => fetch(`${served.url}${path}`, { headers: { authorization: `Bearer ${key}` } });

    beforeAll(async () => {
      served = await serveFleet(adapter, { mount, dashboard: true, allowPrivateNetworks: true, onError: () => {} });
      admin = (await served.fleet.keys.create({ account: 'acme', tier: 'pro', name: 'operator', scopes: [...SCOPES] }))._unsafeUnwrap().secret;
      reader = (await served.fleet.keys.create({ account: 'acme', tier: 'pro', name: 'reader', scopes: ['servers:read'] }))._unsafeUnwrap().secret;
      await served.fleet.servers.create('acme', { name: 'search', type: 'http', endpoint: search.url });
      tripsId = (await served.fleet.servers.create('acme', { name: 'trips', type: 'http', endpoint: trips.url }))._unsafeUnwrap().id;
      context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
      await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: served.origin });
      page = await context.newPage();
      page.setDefaultTimeout(8_000);
      page.on('console', (message) => {
        if (/Content Security Policy/i.test(message.text())) cspViolations.push(message.text());
      });
      await page.goto(`${served.url}/dashboard/`);
      await page.getByLabel('API key').fill(admin);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.getByRole('heading', { level: 1, name: 'Servers' }).waitFor();
    });

    afterAll(async () => {
      await context?.close();
      await served?.close();
    });

    it('Keys: issues a key with scopes and a tool picked from the fleet’s tools, shows its secret once, and the key works', async () => {
      await open('#/keys', 'API keys');
      await page.getByRole('button', { name: 'Issue key' }).click();
      await page.getByLabel('Description (optional)').fill('ci agent');
      await page.getByLabel('Tier').selectOption('free');
      for (const scope of ['servers:read', 'tool_calls:read', 'tool_calls:write']) await page.getByRole('checkbox', { name: scope, exact: true }).check();
      await page.getByRole('button', { name: 'Choose tools' }).click();
      await page.getByRole('radio', { name: 'Only the tools picked here' }).check();
      // The picker lists each server's tools under their namespaced names, read from the fleet.
      await page.getByRole('checkbox', { name: 'trips__plan_trip', exact: true }).waitFor();
      await page.getByRole('checkbox', { name: 'search__echo', exact: true }).check();
      await page.getByRole('checkbox', { name: /^trips__\*/ }).check();
      await page.getByLabel('Expires (optional)').fill('2030-01-02T03:04');
      await shoot('dashboard-keys.png');
      await page.getByRole('button', { name: 'Issue key', exact: true }).last().click();
      const secret = (await page.locator('#key-secret').textContent()) ?? '';
      expect(secret).toMatch(/^mcpf_/);
      await page.getByRole('button', { name: 'Copy the secret' }).click();
      await page.getByText('Copied.').waitFor();
      expect(await page.evaluate('navigator.clipboard.readText()')).toBe(secret);

      // The key works, with what was asked: a free key, three scopes, two patterns.
      const listed = await api('/servers', secret);
      expect(listed.status).toBe(200);
      const tools = (await (await api(`/servers/${(await served.fleet.servers.list('acme'))._unsafeUnwrap().data.find((s) => s.name === 'search')?.id}/tools`, secret)).json()) as { data: { name: string }[] };
      expect(tools.data.map((tool) => tool.name)).toEqual(['echo']);
      expect((await api('/keys', secret)).status).toBe(403);
      const row = page.getByRole('row', { name: /ci agent/ });
      expect(await row.textContent()).toContain('search__echo, trips__*');
      // The expiry typed in the browser's local time (the same machine's zone as this process's).
      const issued = (await served.fleet.keys.list('acme'))._unsafeUnwrap().data.find((k) => k.name === 'ci agent');
      expect(issued?.expires_at).toBe(new Date('2030-01-02T03:04').toISOString());
      expect(await row.getByRole('cell', { name: 'free', exact: true }).count()).toBe(1);

      // Shown once: gone with "I have kept it", and nowhere in the page's storage.
      await page.getByRole('button', { name: 'I have kept it' }).click();
      expect(await page.content()).not.toContain(secret);
      expect(await page.evaluate('JSON.stringify({ ...sessionStorage, ...localStorage })')).not.toContain(secret);

      // Revoked (in two steps): refused from then on.
      await row.getByRole('button', { name: 'Revoke' }).click();
      await row.getByRole('button', { name: 'Confirm revoke' }).click();
      await page.getByRole('row', { name: /ci agent/ }).getByText('revoked', { exact: true }).waitFor();
      expect((await api('/servers', secret)).status).toBe(401);
    });

    it('Keys: a secret is forgotten when the page is left; a key without keys:manage is told which scope it lacks', async () => {
      await page.getByRole('button', { name: 'Issue key' }).click();
      await page.getByRole('button', { name: 'Issue key', exact: true }).last().click();
      const secret = (await page.locator('#key-secret').textContent()) ?? '';
      expect(secret).toMatch(/^mcpf_/);
      await open('#/connect', 'Connect an agent');
      await open('#/keys', 'API keys');
      await page.getByRole('row', { name: /key_/ }).first().waitFor();
      expect(await page.content()).not.toContain(secret);

      const other = await context.newPage();
      await other.goto(`${served.url}/dashboard/#/keys`);
      await other.getByLabel('API key').fill(reader);
      await other.getByRole('button', { name: 'Sign in' }).click();
      const alert = other.getByRole('alert').filter({ hasText: 'keys:manage' });
      await alert.waitFor();
      expect(await alert.textContent()).toMatch(/needs the keys:manage scope/);
      expect(await other.getByRole('button', { name: 'Issue key' }).isDisabled()).toBe(true);
      await other.close();
    });

    it('Connect: every configuration has this fleet’s MCP URL and a placeholder, never the signed-in key', async () => {
      await open('#/connect', 'Connect an agent');
      const endpoint = `${served.url}/mcp`;
      expect(await page.locator('#mcp-url').textContent()).toBe(endpoint);
      expect(await page.locator('#claude-code-command').textContent()).toBe(
        `export MCP_FLEET_KEY='<your mcp-fleet API key>'\nclaude mcp add --transport http mcp-fleet ${endpoint} --header "Authorization: Bearer $MCP_FLEET_KEY"`,
      );
      const same = (format: 'claude-code' | 'cursor' | 'vscode' | 'claude-desktop') => exportClientConfig({ endpoint, format, name: 'mcp-fleet', apiKeyVariable: 'MCP_FLEET_KEY' });
      expect(JSON.parse((await page.locator('#claude-code-json').textContent()) ?? '')).toEqual(same('claude-code'));
      expect(JSON.parse((await page.locator('#cursor-json').textContent()) ?? '')).toEqual(same('cursor'));
      const vscode = JSON.parse((await page.locator('#vscode-json').textContent()) ?? '');
      expect(vscode).toEqual(same('vscode'));
      expect(vscode.servers['mcp-fleet'].type).toBe('http');
      const desktop = JSON.parse((await page.locator('#desktop-json').textContent()) ?? '');
      expect(desktop.mcpServers['mcp-fleet'].args).toEqual(['-y', 'mcp-remote', endpoint, '--allow-http', '--header', 'Authorization:${MCP_FLEET_KEY_HEADER}']);
      expect(await page.content()).not.toContain(admin);
      // No OAuth on this fleet: no connector section.
      await page.getByText(/does not offer/).waitFor();
      expect(await page.getByRole('heading', { name: 'Claude.ai and ChatGPT' }).count()).toBe(0);
      await shoot('dashboard-connect.png');
    });

    it('Connect: with protected-resource metadata at the MCP endpoint, the connector URL for Claude.ai and ChatGPT', async () => {
      // OAuth is the fleet's `oauth` option (another part of the fleet); the page only reads its RFC 9728 document.
      const path = `/.well-known/oauth-protected-resource${new URL(served.url).pathname}/mcp`;
      await page.route(`${served.origin}${path}`, (route) =>
        route.fulfill({ status: 200, contentType: 'application/json', body: JSON.stringify({ resource: `${served.url}/mcp`, authorization_servers: ['https://id.example.test'] }) }),
      );
      await open('#/servers', 'Servers');
      await open('#/connect', 'Connect an agent');
      await page.getByRole('heading', { name: 'Claude.ai and ChatGPT' }).waitFor();
      expect(await page.locator('#connector-url').textContent()).toBe(`${served.url}/mcp`);
      await page.unroute(`${served.origin}${path}`);
    });

    it('Tools: a server’s tools with title, description and annotations; upstream markup is text, never HTML', async () => {
      await open('#/tools', 'Tools');
      await page.getByLabel('Server').selectOption({ label: 'trips' });
      const card = page.getByRole('region', { name: /plan_trip/ });
      await card.getByText('Plans a trip and answers its summary.').waitFor();
      expect(await card.getByRole('heading').textContent()).toContain('Plan a trip');
      expect(await card.getByRole('list', { name: 'Annotations' }).textContent()).toBe('read-onlyclosed world');

      const hostile = page.getByRole('region', { name: /hostile/ });
      await hostile.getByText(HOSTILE_TEXT, { exact: false }).waitFor();
      await hostile.getByRole('button', { name: 'Try it: hostile' }).click();
      await hostile.getByText('This tool takes no arguments.').waitFor();
      await hostile.getByRole('button', { name: 'Call hostile' }).click();
      await hostile.locator('pre.result-text').filter({ hasText: HOSTILE_TEXT }).waitFor();
      expect(await page.locator('main img, main script, main b').count()).toBe(0);
      expect(await page.evaluate('window.__pwned')).toBeUndefined();

      const picture = page.getByRole('region', { name: /picture/ });
      await picture.getByRole('button', { name: 'Try it: picture' }).click();
      await picture.getByRole('button', { name: 'Call picture' }).click();
      const image = picture.getByRole('img', { name: /Image 1 of the result/ });
      await image.waitFor();
      expect(await image.getAttribute('src')).toBe(`data:image/png;base64,${PNG_BASE64}`);
      expect(await page.evaluate('document.querySelector("img.result-image").naturalWidth')).toBe(8);
    });

    it('Tools: "Try it" builds a form of nested objects, lists and enums, checks what is required before sending, and shows the result and its record', async () => {
      const card = page.getByRole('region', { name: /plan_trip/ });
      await card.getByRole('button', { name: 'Try it: plan_trip' }).click();
      const before = trips.calls.length;
      await card.getByRole('button', { name: 'Call plan_trip' }).click();
      // Nothing sent: each required field says so, and the first one has the focus.
      await card.locator('#arg-destination-error').waitFor();
      for (const field of ['destination', 'nights', 'mode']) expect(await card.locator(`#arg-${field}`).getAttribute('aria-invalid')).toBe('true');
      // The page moves the focus in the next animation frame, which a busy machine delays: waited for, not raced.
      await expect.poll(() => page.evaluate('document.activeElement.id'), { timeout: 5000 }).toBe('arg-destination');
      expect(trips.calls.length).toBe(before);

      await card.getByLabel(/^destination/).fill('Lisbon');
      await card.getByLabel(/^nights/).fill('3');
      await card.getByLabel(/^mode/).selectOption('train');
      await card.getByRole('button', { name: 'Add item to travellers' }).click();
      await card.getByLabel(/^name/).fill('Ada');
      await card.getByRole('button', { name: 'Add item to tags' }).click();
      await card.getByLabel(/^tags\[0\]/).fill('sea');
      await card.getByLabel(/^amount/).fill('450.5');
      await card.getByLabel(/^currency/).selectOption('EUR');
      await card.getByLabel(/^note/).fill('"window seat"');
      await shoot('dashboard-tools.png');
      await card.getByRole('button', { name: 'Call plan_trip' }).click();
      const outcome = card.locator('.outcome');
      await outcome.getByText('3 nights in Lisbon by train', { exact: true }).waitFor();
      expect(trips.calls.at(-1)).toEqual({
        name: 'plan_trip',
        arguments: { destination: 'Lisbon', nights: 3, mode: 'train', travellers: [{ name: 'Ada' }], options: { budget: { amount: 450.5, currency: 'EUR' } }, tags: ['sea'], note: 'window seat' },
      });
      expect(JSON.parse((await outcome.locator('pre').last().textContent()) ?? '')).toEqual({ summary: '3 nights in Lisbon by train', people: 1 });
      const record = outcome.getByRole('link', { name: /^call_/ });
      const id = await record.textContent();
      const stored = (await served.fleet.toolCalls.get('acme', id ?? ''))._unsafeUnwrap();
      expect([stored.server_id, stored.tool, stored.status]).toEqual([tripsId, 'plan_trip', 'success']);
      await shoot('dashboard-tool-result.png');
      await record.click();
      await page.getByRole('heading', { name: `Tool call ${id}` }).waitFor();
    });

    it('Import: a Claude Desktop file, dropped or pasted; the plan, then the servers created', async () => {
      await open('#/import', 'Import servers');
      // A file over 1 MiB is refused before it is read.
      await drop('huge.json', 'x'.repeat(1024 * 1024 + 1));
      await page.getByText(/huge\.json is 1048577 bytes; at most 1048576/).waitFor();
      const config = {
        mcpServers: {
          weather: { command: 'npx', args: ['-y', 'mcp-remote', search.url] },
          notes: { command: 'npx', args: ['-y', 'mcp-remote', trips.url, '--header', 'Authorization: Bearer ${NOTES_TOKEN}'] },
        },
      };
      await drop('claude_desktop_config.json', JSON.stringify(config, null, 2));
      await page.getByText(/Read claude_desktop_config\.json/).waitFor();
      await page.getByRole('button', { name: 'Show the plan' }).click();
      const plan = page.getByRole('region', { name: /The plan \(claude-desktop, detected\)/ });
      await plan.getByRole('table', { name: '2 to create' }).waitFor();
      expect(await plan.getByRole('row', { name: /weather/ }).textContent()).toContain(search.url);
      expect(await plan.getByRole('table', { name: /1 unresolved/ }).textContent()).toContain('${NOTES_TOKEN}');
      expect((await served.fleet.servers.list('acme'))._unsafeUnwrap().data.map((s) => s.name)).not.toContain('weather');
      await shoot('dashboard-import.png');
      await page.getByRole('button', { name: 'Create 2 servers' }).click();
      await page.getByRole('region', { name: /Imported/ }).getByRole('table', { name: '2 created' }).waitFor();
      expect((await served.fleet.servers.list('acme'))._unsafeUnwrap().data.map((s) => s.name).sort()).toEqual(['notes', 'search', 'trips', 'weather']);
      await page.getByRole('link', { name: 'See them on the Servers page' }).click();
      await page.getByRole('row', { name: /weather/ }).waitFor();
    });

    it('passes axe-core (no serious or critical violation) on every page, at 1280 and at 360 px wide, with no CSP violation', async () => {
      // Each page with what shows it has read the API.
      const pages: [string, string, string][] = [
        ['#/servers', 'Servers', 'role=row[name=/weather/]'],
        ['#/tool-calls', 'Tool calls', 'role=row[name=/plan_trip/]'],
        ['#/webhooks', 'Webhooks', 'text=No webhooks yet'],
        ['#/tools', 'Tools', 'main section.tool'],
        ['#/keys', 'API keys', 'role=row[name=/operator/]'],
        ['#/connect', 'Connect an agent', 'text=/does not offer/'],
        ['#/import', 'Import servers', 'role=button[name="Show the plan"]'],
      ];
      const found: string[] = [];
      for (const width of [1280, 360]) {
        await page.setViewportSize({ width, height: 800 });
        for (const [hash, heading, ready] of pages) {
          await open(hash, heading);
          await page.locator(ready).first().waitFor({ timeout: 15_000 });
          // Open what each page opens, so that the forms are checked too.
          if (hash === '#/keys') await page.getByRole('button', { name: 'Issue key' }).click();
          if (hash === '#/tools') {
            await page.getByLabel('Server').selectOption({ label: 'trips' });
            await page.getByRole('button', { name: 'Try it: plan_trip' }).click();
            await page.getByRole('button', { name: 'Call plan_trip' }).click();
            await page.locator('#arg-destination-error').waitFor();
          }
          found.push(...(await axeViolations(page)).map((v) => `${width}px ${hash}: ${v}`));
          // Usable at 360 px: the page itself never scrolls sideways (wide tables scroll in their own box).
          if (width === 360) expect(await page.evaluate('document.documentElement.scrollWidth'), hash).toBeLessThanOrEqual(360);
          if (width === 360 && hash === '#/connect') await shoot('dashboard-connect-360.png');
        }
      }
      expect(found).toEqual([]);
      expect(cspViolations).toEqual([]);
      await page.setViewportSize({ width: 1280, height: 800 });
    });

    it('is usable with the keyboard alone: Tab reaches "Issue key", Enter opens the form, the focus is visible', async () => {
      await open('#/keys', 'API keys');
      // From the top of the page's content, once it has rendered its list (a render under the keypress can take the
      // focus back to <main>): the first Tab reaches "Issue key".
      await expect
        .poll(async () => {
          await page.evaluate('document.activeElement && document.activeElement.blur()');
          await page.locator('main').focus();
          await page.keyboard.press('Tab');
          return page.evaluate('document.activeElement.textContent');
        })
        .toBe('Issue key');
      expect(await page.evaluate('getComputedStyle(document.activeElement).outlineStyle')).toBe('solid');
      await page.keyboard.press('Enter');
      await expect.poll(() => page.evaluate('document.activeElement.id')).toBe('key-description');
      await page.keyboard.type('typed');
      await page.keyboard.press('Tab');
      expect(await page.evaluate('document.activeElement.id')).toBe('key-tier');
    });
  },
);
