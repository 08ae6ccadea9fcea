// The builds of mcp-fleet a run compares. `this` is the build of this checkout (`packages/*/dist`, imported by package
// name as a consumer would). With `BENCH_BASELINE=<dir>` (a checkout of another commit, `npm ci && npm run build`
// done in it), `base` is that checkout's built `@mcp-fleet/core`, `@mcp-fleet/hono` and `@mcp-fleet/express`, imported
// from its `packages/*/dist`: their own imports (`@mcp-fleet/core` from the adapters, hono, zod, undici…) then resolve
// in that checkout's node_modules, so the baseline runs exactly as it was built. The sections interleave both builds in
// the same rounds and print each figure for both, and this/base.
import { existsSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

export const BASELINE_DIR = process.env.BENCH_BASELINE ? path.resolve(process.env.BENCH_BASELINE) : undefined;

const PACKAGES = { core: 'core', hono: 'hono', express: 'express', postgres: 'postgres', redis: 'redis' };

/** The ids of the builds in this run: `['this']`, or `['this', 'base']` with `BENCH_BASELINE`. */
export const BUILD_IDS = BASELINE_DIR === undefined ? ['this'] : ['this', 'base'];

/** `import()` of one package of a build: by name for this build, by file for the baseline. */
export function importPackage(build, name) {
  if (build === 'this') return import(`@mcp-fleet/${PACKAGES[name]}`);
  if (BASELINE_DIR === undefined) throw new Error('no BENCH_BASELINE');
  const file = path.join(BASELINE_DIR, 'packages', PACKAGES[name], 'dist', 'index.js');
  if (!existsSync(file)) throw new Error(`BENCH_BASELINE: ${file} is missing (run npm ci && npm run build in ${BASELINE_DIR})`);
  return import(pathToFileURL(file).href);
}

/** Short description of a build for the headers: the baseline's directory and commit. */
export async function describeBuild(build) {
  if (build === 'this') return 'this checkout';
  const { execFileSync } = await import('node:child_process');
  let commit = '?';
  try {
    commit = execFileSync('git', ['-C', BASELINE_DIR, 'log', '-1', '--format=%h %s'], { encoding: 'utf8' }).trim().slice(0, 70);
  } catch {}
  return `${BASELINE_DIR} (${commit})`;
}

/**
 * `createFleet(options)` of a build's core, over the default in-process memory store either way. The storage options
 * changed in issue 26 (`createFleet({ store })` replaced `storage`, `index` and `rateLimit.store`), so the bench
 * detects the API instead of naming a commit: a core that exports `createMemoryStore` gets `store:
 * createMemoryStore()`, an older one its own defaults (which are the same memory stores). The options the bench
 * passes otherwise (`rateLimit` tiers and operations or `false`, `quotas`, `allowPrivateNetworks`, `onError`) exist
 * in both.
 */
export function createBenchFleet(core, options) {
  const store = typeof core.createMemoryStore === 'function' ? { store: core.createMemoryStore() } : {};
  return core.createFleet({ ...store, ...options });
}

/**
 * Deletes the servers the POST loads created in `bench-acct` (they name every server `load-…`), so that every round
 * of a POST comparison creates into the same small fleet (section 2's `reset`, section 9d's).
 */
export async function removeLoadServers(fleet) {
  const made = [];
  for (let page = 1; ; page++) {
    const listed = (await fleet.servers.list('bench-acct', { page, limit: 100 }))._unsafeUnwrap();
    for (const server of listed.data) if (server.name.startsWith('load-')) made.push(server.id);
    if (page >= listed.pagination.pages) break;
  }
  for (const id of made) (await fleet.servers.delete('bench-acct', id))._unsafeUnwrap();
}
