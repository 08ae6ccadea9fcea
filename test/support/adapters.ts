import type { AddressInfo } from 'node:net';
import { createServer, type Server } from 'node:http';
import { serve } from '@hono/node-server';
import { createFleet, type Fleet, type FleetOptions, type FleetStore } from '@mcp-fleet/core';
import { fleetMiddleware } from '@mcp-fleet/express';
import { createFleetApp } from '@mcp-fleet/hono';
import { createPostgresStore } from '@mcp-fleet/postgres';
import express from 'express';
import { Hono } from 'hono';
import { checkedFleet } from './answer-check.js';
import { DATABASE_URL, dropSchemas, uniqueSchema } from './postgres.js';

/**
 * A fleet served over real HTTP on a random loopback port by one adapter. Every answer is checked against its route's
 * declared schemas (`answer-check.ts`).
 */
export interface Served {
  fleet: Fleet;
  /** Base URL including the mount point and prefix, e.g. `http://127.0.0.1:40123/v1`. */
  url: string;
  /** Just the origin, for requests outside the mount point. */
  origin: string;
  close(): Promise<void>;
}

export interface Adapter {
  name: 'hono' | 'express';
  /** Serves `fleet` with the adapter mounted at `mount` ('' = the root) inside a host app. */
  serve(fleet: Fleet, mount: string): Promise<{ origin: string; server: Server }>;
}

function listening(server: Server): Promise<string> {
  return new Promise((resolve) => {
    server.listen(0, '127.0.0.1', () => resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}`));
  });
}

export const ADAPTERS: Adapter[] = [
  {
    name: 'hono',
    async serve(fleet, mount) {
      const app = new Hono();
      app.get('/host-route', (c) => c.text('host'));
      app.route(mount === '' ? '/' : mount, createFleetApp(checkedFleet(fleet)));
      const server = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1', createServer }) as Server;
      await new Promise<void>((resolve) => (server.listening ? resolve() : server.once('listening', () => resolve())));
      return { origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server };
    },
  },
  {
    name: 'express',
    async serve(fleet, mount) {
      const app = express();
      app.get('/host-route', (_req, res) => {
        res.type('text').send('host');
      });
      const checked = checkedFleet(fleet);
      if (mount === '') app.use(fleetMiddleware(checked));
      else app.use(mount, fleetMiddleware(checked));
      const server = createServer(app);
      return { origin: await listening(server), server };
    },
  },
];

export interface ServeOptions extends FleetOptions {
  // Rate limits are off unless a test passes `rateLimit`: most suites make more requests a minute than they allow.
  /** Where the host app mounts the adapter. @default '' */
  mount?: string;
}

/**
 * Suites give each test an account of its own. Running as root, each account's stdio children get a uid of their
 * own; not root, the fleet cannot switch users and serves stdio to one account only unless `stdio.sharedUser` is
 * set, which the suites then set, as a single-user deployment would.
 */
export function withSharedStdioUser<T extends FleetOptions>(options: T): T {
  if (options.stdio === undefined || process.getuid?.() === 0) return options;
  return { ...options, stdio: { sharedUser: true, ...options.stdio } };
}

/**
 * The store every fleet of the run gets when its test asks for none: `MCP_FLEET_TEST_STORE=postgres` (the vitest
 * project `http-postgres`) gives each fleet a PostgreSQL store in a schema of its own, dropped on close; unset, the
 * fleet makes its own memory store.
 */
export const TEST_STORE: 'memory' | 'postgres' = process.env.MCP_FLEET_TEST_STORE === 'postgres' ? 'postgres' : 'memory';

async function testStore(options: FleetOptions): Promise<{ store?: FleetStore; close(): Promise<void> }> {
  if (options.store !== undefined || TEST_STORE === 'memory') return { close: async () => {} };
  if (DATABASE_URL === undefined) throw new Error('MCP_FLEET_TEST_STORE=postgres needs DATABASE_URL');
  const schema = uniqueSchema('http');
  const store = await createPostgresStore({ connectionString: DATABASE_URL, schema, now: options.now, sweepIntervalMs: 0 });
  return {
    store,
    close: async () => {
      await store.close();
      await dropSchemas(schema);
    },
  };
}

export async function serveFleet(adapter: Adapter, options: ServeOptions = {}): Promise<Served> {
  const { mount = '', ...fleetOptions } = options;
  const test = await testStore(fleetOptions);
  let fleet: Fleet;
  let listening: { origin: string; server: Server };
  try {
    fleet = createFleet({ rateLimit: false, ...withSharedStdioUser(fleetOptions), ...(test.store && { store: test.store }) });
    listening = await adapter.serve(fleet, mount);
  } catch (error) {
    await test.close();
    throw error;
  }
  const { origin, server } = listening;
  return {
    fleet,
    origin,
    url: `${origin}${mount}${fleet.prefix}`,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await fleet.close();
      await test.close();
    },
  };
}
