import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type Browser, chromium, type Page } from 'playwright-core';

/** Debian's Chromium, which the dashboard's browser tests drive with playwright-core. */
export const CHROMIUM = '/usr/bin/chromium';

const FLAGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/** In CI the browser is installed by .ci/run: its absence is a failure there, a skip on a machine without it. */
export const browserPresent = existsSync(CHROMIUM) || process.env.CI === 'true';

/**
 * Where the screenshots go: `docs/` when asked (`UPDATE_SCREENSHOTS=1`), else a scratch folder, so that a test run
 * still takes every one but leaves the working tree as it was.
 */
export const SCREENSHOTS = process.env.UPDATE_SCREENSHOTS === '1' ? fileURLToPath(new URL('../../docs/', import.meta.url)) : `${mkdtempSync(join(tmpdir(), 'mcp-fleet-shots-'))}/`;

export const launchBrowser = (): Promise<Browser> => chromium.launch({ executablePath: CHROMIUM, args: FLAGS });

const AXE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

/** axe-core's serious and critical violations on the page as it is (injected through the DevTools protocol, not a script tag: the CSP stays on). */
export async function axeViolations(page: Page): Promise<string[]> {
  await page.evaluate(AXE);
  // Strings, not functions: the tests are type-checked without the DOM's types.
  const violations = await page.evaluate<{ id: string; impact: string; targets: string[] }[]>(`axe.run(document, { resultTypes: ['violations'] }).then((result) =>
    result.violations.map((v) => ({ id: v.id, impact: v.impact, targets: v.nodes.map((n) => n.target.join(' ')) })))`);
  return violations.filter((v) => v.impact === 'serious' || v.impact === 'critical').map((v) => `${v.impact} ${v.id}: ${v.targets.join(', ')}`);
}
