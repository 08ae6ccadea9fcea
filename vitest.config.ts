import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

const src = (name: string) => fileURLToPath(new URL(`./packages/${name}/src/index.ts`, import.meta.url));

export default defineConfig({
  resolve: {
    // Tests run against the sources; the consumer test checks the built packages.
    alias: {
      '@mcp-fleet/core': src('core'),
      '@mcp-fleet/hono': src('hono'),
      '@mcp-fleet/express': src('express'),
      '@mcp-fleet/sqlite': src('sqlite'),
      '@mcp-fleet/redis': src('redis'),
    },
  },
  test: {
    include: ['packages/*/src/**/*.test.ts', 'test/**/*.test.ts'],
    globalSetup: ['test/global-setup.ts'],
    testTimeout: 20_000,
    hookTimeout: 60_000,
  },
});
