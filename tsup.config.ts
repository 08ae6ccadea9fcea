import { defineConfig, type Options } from 'tsup';

const shared = {
  format: ['esm', 'cjs'],
  dts: true,
  sourcemap: true,
  clean: true,
  target: 'node20',
  platform: 'node',
  splitting: false,
  treeshake: true,
} satisfies Options;

/**
 * Each package builds on its own: its dependencies stay imports, never bundled in. Core is checked and declared from
 * its sources (tsconfig.json); every other package against core's built declarations (tsconfig.build.json, no `paths`:
 * `@mcp-fleet/core` resolves as a user's install does), so that each of their declaration builds does not check the
 * whole of core again. Hence two stages, core first (scripts/build.mjs).
 */
function pkg(name: string, external: (string | RegExp)[], entry: Record<string, string> = { index: 'index.ts' }): Options {
  return {
    ...shared,
    name,
    entry: Object.fromEntries(Object.entries(entry).map(([out, src]) => [out, `packages/${name}/src/${src}`])),
    outDir: `packages/${name}/dist`,
    tsconfig: name === 'core' ? 'tsconfig.json' : 'tsconfig.build.json',
    external,
  };
}

/** `@mcp-fleet/core` and its subpaths (`/node`, `/webhooks`, `/scopes`, `/testing`): imports, never bundled into a sibling. */
const core = /^@mcp-fleet\/core(\/|$)/;

const coreBuild: Options = {
  // The subpaths share modules with the root entry; split into common chunks, each module (and each class, which
  // `instanceof` tells apart) exists once, whichever entry loads it.
  ...pkg('core', ['keyv', 'zod', 'neverthrow', 'undici', 'jose', /^@modelcontextprotocol\//, 'vitest'], {
    index: 'index.ts',
    node: 'node/index.ts',
    webhooks: 'webhooks/index.ts',
    scopes: 'scopes/index.ts',
    testing: 'testing/index.ts',
  }),
  splitting: true,
  // import.meta.url in the CommonJS build too: the dashboard finds its files beside the package.json.
  shims: true,
  // dist/dashboard is the dashboard's build (vite, packages/core/ui), not tsup's.
  clean: ['!dashboard/**'],
};

const packagesBuild: Options[] = [
  pkg('sqlite', [core, 'keyv', '@keyv/sqlite', 'sqlite3']),
  pkg('redis', [core, 'keyv', '@keyv/redis', '@redis/client']),
  pkg('postgres', [core, 'keyv', 'pg']),
  pkg('hono', [core, 'hono']),
  pkg('express', [core, 'express']),
  // Browsers and edge runtimes too: fetch, URL, AbortController and Headers only, no Node built-in.
  { ...pkg('client', []), platform: 'neutral', target: 'es2022' },
  pkg('otel', [core, /^@opentelemetry\//]),
  pkg('prometheus', [core, 'prom-client']),
  {
    name: 'reference-server',
    entry: {
      main: 'examples/reference-server/src/main.ts',
      keys: 'examples/reference-server/src/keys.ts',
      secrets: 'examples/reference-server/src/secrets.ts',
      'mcp-fleet': 'examples/reference-server/src/mcp-fleet.ts',
    },
    outDir: 'examples/reference-server/dist',
    format: ['esm'],
    target: 'node20',
    platform: 'node',
    clean: true,
    // commander stays an import: bundled into ESM, its CommonJS `require`s of node: modules would throw.
    external: [/^@mcp-fleet\//, 'hono', '@hono/node-server', 'commander', 'pino', 'prom-client', /^@opentelemetry\//],
  },
  {
    name: 'express-app',
    entry: { main: 'examples/express-app/src/main.ts' },
    outDir: 'examples/express-app/dist',
    format: ['esm'],
    target: 'node20',
    platform: 'node',
    clean: true,
    external: [/^@mcp-fleet\//, 'express'],
  },
];

/** The build's stages (scripts/build.mjs runs them in order): `core`, then `packages` (the others and the examples). */
const STAGES: Record<string, Options[]> = { core: [coreBuild], packages: packagesBuild };

export default defineConfig(() => {
  const stage = process.env['MCP_FLEET_BUILD_STAGE'];
  const configs = stage !== undefined && Object.hasOwn(STAGES, stage) ? STAGES[stage] : undefined;
  if (configs === undefined) {
    throw new Error(
      `tsup.config.ts builds in two stages, core then the packages built against its declarations: run \`npm run build\` (scripts/build.mjs), or tsup with MCP_FLEET_BUILD_STAGE=core, then MCP_FLEET_BUILD_STAGE=packages${stage === undefined ? '' : ` (not ${JSON.stringify(stage)})`}`,
    );
  }
  return configs;
});
