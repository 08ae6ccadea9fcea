import { availableParallelism } from 'node:os';
import { fileURLToPath } from 'node:url';
import { defineConfig, type TestProjectInlineConfiguration } from 'vitest/config';

const src = (path: string) => fileURLToPath(new URL(`./packages/${path}`, import.meta.url));

/**
 * The HTTP suite (project `http`, and `http-postgres` below): fleets served over real HTTP through both adapters. Its
 * files share their worker's modules (`isolate: false`): each would otherwise import the core, both adapters, the SDKs
 * and the stores anew, a second of the run per file (the suite in both projects: 305 s with isolation, 226 s without;
 * docs/performance.md, "The test run"). What one file leaves, a later one does not see: each keeps to its own ports,
 * key prefixes and schemas, closes what it opened and unsubscribes what it subscribed. The one thing shared is the
 * global `Request` and `Response` that `@hono/node-server` puts in place (`overrideGlobalObjects`), and every file of
 * the suite but express-body-parsers.test.ts serves through Hono before its Express half, so it meets them anyway.
 * Every other file runs in a process of its own, as its tests describe (the core's checks of the runtime's own
 * `Response`, a process nothing has turned promise hooks on in).
 */
const HTTP_SUITE = 'test/http/**/*.test.ts';

export default defineConfig({
  resolve: {
    // Tests run against the sources; the consumer test checks the built packages. Exact matches: a bare
    // '@mcp-fleet/core' would also catch '@mcp-fleet/core/node' and point it inside index.ts.
    alias: [
      { find: /^@mcp-fleet\/core$/, replacement: src('core/src/index.ts') },
      { find: /^@mcp-fleet\/core\/node$/, replacement: src('core/src/node/index.ts') },
      { find: /^@mcp-fleet\/core\/webhooks$/, replacement: src('core/src/webhooks/index.ts') },
      { find: /^@mcp-fleet\/core\/testing$/, replacement: src('core/src/testing/index.ts') },
      { find: /^@mcp-fleet\/hono$/, replacement: src('hono/src/index.ts') },
      { find: /^@mcp-fleet\/express$/, replacement: src('express/src/index.ts') },
      { find: /^@mcp-fleet\/sqlite$/, replacement: src('sqlite/src/index.ts') },
      { find: /^@mcp-fleet\/redis$/, replacement: src('redis/src/index.ts') },
      { find: /^@mcp-fleet\/postgres$/, replacement: src('postgres/src/index.ts') },
      { find: /^@mcp-fleet\/client$/, replacement: src('client/src/index.ts') },
      { find: /^@mcp-fleet\/otel$/, replacement: src('otel/src/index.ts') },
      { find: /^@mcp-fleet\/prometheus$/, replacement: src('prometheus/src/index.ts') },
    ],
  },
  test: {
    globalSetup: ['test/global-setup.ts'],
    testTimeout: 20_000,
    hookTimeout: 60_000,
    // Vitest's default is one worker less than the cores: a single worker on the 2-core machines CI runs on, where much
    // of a file's time goes to waiting (reference servers, Chromium, npm, PostgreSQL, upstream MCP servers in child
    // processes). Every file keeps to its own ports, key prefixes and schemas (test/support/redis.ts, postgres.ts), so
    // files run side by side: one worker per core, two on 2 cores (a clean clone's npm test: 873 s, against 1,169 s
    // with one worker; docs/performance.md, "The test run"). `--maxWorkers=1` runs them one at a time again.
    maxWorkers: Math.max(2, availableParallelism()),
    projects: [
      { extends: true, test: { name: 'main', include: ['packages/*/src/**/*.test.ts', 'test/**/*.test.ts'], exclude: [HTTP_SUITE] } },
      { extends: true, test: { name: 'http', include: [HTTP_SUITE], isolate: false } },
      ...postgresProjects(),
    ],
  },
});

/**
 * The HTTP suite a second time, every fleet that asks for no store of its own on PostgreSQL (test/support/adapters.ts
 * `serveFleet`, a schema per fleet). Without DATABASE_URL it is left out, and says so; with it, an unreachable
 * database fails it.
 */
function postgresProjects(): TestProjectInlineConfiguration[] {
  if (!process.env.DATABASE_URL) {
    // Vitest reads this file twice (the root, then its inline projects): say it once.
    const said = globalThis as { httpPostgresSkipSaid?: boolean };
    if (said.httpPostgresSkipSaid !== true) console.warn('http-postgres: skipped, DATABASE_URL is not set (e.g. DATABASE_URL=postgres://postgres@127.0.0.1:5432/test npx vitest run)');
    said.httpPostgresSkipSaid = true;
    return [];
  }
  return [
    {
      extends: true,
      test: {
        name: 'http-postgres',
        include: [HTTP_SUITE],
        isolate: false,
        exclude: [
          // Every fleet there brings its own store (memory, SQLite, Redis with failing commits): nothing would change.
          'test/http/create-store-failures.test.ts',
          'test/http/mcp-credentials.test.ts',
          // Its fleets are made with createFleet, not serveFleet, on the memory store: the same run twice.
          'test/http/express-body-parsers.test.ts',
          // Two fleets on one Redis by design; two processes on one PostgreSQL: test/reference-servers-postgres.test.ts.
          'test/http/mcp-endpoint-processes.test.ts',
        ],
        env: { MCP_FLEET_TEST_STORE: 'postgres' },
      },
    },
  ];
}
