import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

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
    include: ['packages/*/src/**/*.test.ts', 'test/**/*.test.ts'],
    globalSetup: ['test/global-setup.ts'],
    testTimeout: 20_000,
    hookTimeout: 60_000,
  },
});
