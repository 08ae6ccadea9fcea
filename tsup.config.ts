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

/** Each package builds on its own: its dependencies stay imports, never bundled in. */
function pkg(name: string, external: (string | RegExp)[]): Options {
  return {
    ...shared,
    name,
    entry: { index: `packages/${name}/src/index.ts` },
    outDir: `packages/${name}/dist`,
    tsconfig: 'tsconfig.json',
    external,
  };
}

export default defineConfig([
  pkg('core', ['keyv', 'zod', 'neverthrow', 'undici', /^@modelcontextprotocol\//]),
  pkg('sqlite', ['@mcp-fleet/core', 'keyv', '@keyv/sqlite', 'sqlite3']),
  pkg('redis', ['@mcp-fleet/core', 'keyv', '@keyv/redis', '@redis/client']),
  pkg('hono', ['@mcp-fleet/core', 'hono']),
  pkg('express', ['@mcp-fleet/core', 'express']),
  {
    name: 'reference-server',
    entry: { main: 'examples/reference-server/src/main.ts', keys: 'examples/reference-server/src/keys.ts' },
    outDir: 'examples/reference-server/dist',
    format: ['esm'],
    target: 'node20',
    platform: 'node',
    clean: true,
    external: [/^@mcp-fleet\//, 'hono', '@hono/node-server'],
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
]);
