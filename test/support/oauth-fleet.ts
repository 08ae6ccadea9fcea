/**
 * A fleet with the `oauth` option, served over real HTTP by one adapter the way docs/oauth.md tells a host app to:
 * the adapter's well-known helper at the host's root, the fleet's app or middleware beside it. The server listens
 * before the fleet is made, so that `oauth.resource` names the very origin agents reach.
 */
import type { AddressInfo } from 'node:net';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { serve } from '@hono/node-server';
import { createFleet, type Fleet, type FleetOptions } from '@mcp-fleet/core';
import { fleetMiddleware, fleetWellKnownMiddleware } from '@mcp-fleet/express';
import { createFleetApp, createFleetWellKnownApp } from '@mcp-fleet/hono';
import express from 'express';
import { Hono } from 'hono';
import { checkedFleet } from './answer-check.js';

export type AdapterName = 'hono' | 'express';
export const ADAPTER_NAMES: readonly AdapterName[] = ['hono', 'express'];

export interface OAuthServed {
  fleet: Fleet;
  /** `http://127.0.0.1:{port}`. */
  origin: string;
  /** The API's base URL, `{origin}{mount}/v1`: what `oauth.resource` names. */
  url: string;
  /** The MCP endpoint, `{url}/mcp`. */
  mcpUrl: string;
  close(): Promise<void>;
}

/**
 * Serves `createFleet(options(url))` (or `options`) with `adapter`, below `mount` (the host app's path, `''` for its
 * root); `url` is the API's public base URL (`{origin}{mount}/v1`).
 */
export async function serveOAuthFleet(adapter: AdapterName, options: FleetOptions | ((url: string) => FleetOptions), { mount = '' }: { mount?: string } = {}): Promise<OAuthServed> {
  let handler: ((req: IncomingMessage, res: ServerResponse) => void) | undefined;
  let server: Server;
  let fetchHandler: ((request: Request) => Response | Promise<Response>) | undefined;
  if (adapter === 'hono') {
    server = serve({ fetch: (request: Request) => fetchHandler!(request), port: 0, hostname: '127.0.0.1', createServer }) as Server;
    await new Promise<void>((resolve) => (server.listening ? resolve() : server.once('listening', () => resolve())));
  } else {
    server = createServer((req, res) => handler!(req, res));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  }
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const fleet = createFleet({ rateLimit: false, allowPrivateNetworks: true, onError: () => {}, ...(typeof options === 'function' ? options(`${origin}${mount}/v1`) : options) });
  const url = `${origin}${mount}${fleet.prefix}`;
  if (adapter === 'hono') {
    const app = new Hono();
    app.route('/', createFleetWellKnownApp(fleet, { mount }));
    app.route(mount === '' ? '/' : mount, createFleetApp(checkedFleet(fleet)));
    fetchHandler = app.fetch;
  } else {
    const app = express();
    app.use(fleetWellKnownMiddleware(fleet, { mount }));
    if (mount === '') app.use(fleetMiddleware(checkedFleet(fleet)));
    else app.use(mount, fleetMiddleware(checkedFleet(fleet)));
    handler = app;
  }
  return {
    fleet,
    origin,
    url,
    mcpUrl: `${url}/mcp`,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await fleet.close();
    },
  };
}
