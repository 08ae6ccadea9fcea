import { fileURLToPath } from 'node:url';
import { defineConfig, type TestProjectInlineConfiguration } from 'vitest/config';

const src = (path: string) => fileURLToPath(new URL(`./packages/${path}`, import.meta.url));

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
    ],
  },
  test: {
    globalSetup: ['test/global-setup.ts'],
    testTimeout: 20_000,
    hookTimeout: 60_000,
    projects: [
      { extends: true, test: { name: 'main', include: ['packages/*/src/**/*.test.ts', 'test/**/*.test.ts'] } },
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
    console.warn('http-postgres: skipped, DATABASE_URL is not set (e.g. DATABASE_URL=postgres://postgres@127.0.0.1:5432/test npx vitest run)');
    return [];
  }
  return [
    {
      extends: true,
      test: {
        name: 'http-postgres',
        include: ['test/http/**/*.test.ts'],
        env: { MCP_FLEET_TEST_STORE: 'postgres' },
      },
    },
  ];
}
