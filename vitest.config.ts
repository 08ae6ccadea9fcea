import { availableParallelism } from 'node:os';
import { basename } from 'node:path';
import { fileURLToPath } from 'node:url';
import { defineConfig, type TestProjectInlineConfiguration } from 'vitest/config';

const src = (path: string) => fileURLToPath(new URL(`./packages/${path}`, import.meta.url));

/**
 * The HTTP suite's files share their worker's modules (`isolate: false`), each sparing the import of the core, the
 * adapters, the SDKs and the stores anew: about a second per file (docs/performance.md, "The test run": the suite in
 * both its projects 305 s isolated, 206–226 s shared). A file that shares leaves nothing a later one could see: it
 * keeps to its own ports, key prefixes and schemas, closes what it opened, unsubscribes what it subscribed and puts back
 * what it set. Its files serve through `@hono/node-server`, which puts its own `Request` and `Response` in place
 * (`overrideGlobalObjects`); every one of them but express-body-parsers.test.ts does so before its Express half, so it
 * meets them anyway. Every other file runs in a process of its own (`main`): reference servers, the CLI, Chromium,
 * packed packages, child processes, the packages' own tests (some check the runtime's own `Response`), and
 * `OWN_PROCESS`, the HTTP suite's telemetry tests (the OpenTelemetry API's process-wide globals, the trace points'
 * subscribers). Run the shared projects with `--sequence.shuffle` after adding a file: one that passes in a single
 * order only shows there.
 */
const HTTP_SUITE = 'test/http/**/*.test.ts';
// Shared, after other files of the suite in a shuffled order, otel.test.ts recorded no span at all.
const OWN_PROCESS = ['test/http/otel.test.ts', 'test/http/trace-points.test.ts'];
/** The HTTP suite's files but its OWN_PROCESS ones (a glob: `test/http/!(otel|trace-points).test.ts`). */
const HTTP_SUITE_SHARED = `test/http/!(${OWN_PROCESS.map((file) => basename(file, '.test.ts')).join('|')}).test.ts`;

export default defineConfig({
  resolve: {
    // Tests run against the sources; the consumer test checks the built packages. Exact matches: a bare
    // '@mcp-fleet/core' would also catch '@mcp-fleet/core/node' and point it inside index.ts.
    alias: [
      { find: /^@mcp-fleet\/core$/, replacement: src('core/src/index.ts') },
      { find: /^@mcp-fleet\/core\/node$/, replacement: src('core/src/node/index.ts') },
      { find: /^@mcp-fleet\/core\/webhooks$/, replacement: src('core/src/webhooks/index.ts') },
      { find: /^@mcp-fleet\/core\/scopes$/, replacement: src('core/src/scopes/index.ts') },
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
      // Not the HTTP suite's shared files (vitest applies exclude after include, so it names them).
      { extends: true, test: { name: 'main', include: ['packages/*/src/**/*.test.ts', 'test/**/*.test.ts'], exclude: [HTTP_SUITE_SHARED] } },
      { extends: true, test: { name: 'http', include: [HTTP_SUITE], exclude: OWN_PROCESS, isolate: false } },
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
          // Telemetry, not the store: they run once, in a process of their own (`main`).
          ...OWN_PROCESS,
        ],
        env: { MCP_FLEET_TEST_STORE: 'postgres' },
      },
    },
  ];
}
