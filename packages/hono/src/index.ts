import type { Fleet } from '@mcp-fleet/core';
import { type Context, Hono } from 'hono';

export interface FleetHonoOptions {
  /**
   * The client's address, for the limit on unauthenticated requests. Behind a proxy, read it from the header your
   * proxy sets. @default the socket address under `@hono/node-server`, otherwise none
   */
  clientAddress?: (c: Context) => string | undefined;
}

/** `@hono/node-server` puts the Node request in `c.env.incoming`. */
function socketAddress(c: Context): string | undefined {
  const env = c.env as { incoming?: { socket?: { remoteAddress?: string } } } | undefined;
  return env?.incoming?.socket?.remoteAddress;
}

/**
 * A Hono app serving the fleet's HTTP API at `fleet.prefix`. Mount it anywhere:
 * `app.route('/', createFleetApp(fleet))` serves `/v1/...`; `app.route('/api', ...)` serves `/api/v1/...`.
 */
export function createFleetApp(fleet: Fleet, options: FleetHonoOptions = {}): Hono {
  const clientAddress = options.clientAddress ?? socketAddress;
  const handler = (c: Context) => {
    // The raw path, not Hono's decoded one: the core decodes each segment once.
    const raw = new URL(c.req.url).pathname.split('/');
    const mountDepth = c.req.routePath.replace(/\/\*$/, '').split('/').length;
    const path = `/${raw.slice(mountDepth).join('/')}`;
    const address = clientAddress(c);
    return fleet.handle(c.req.raw, address === undefined ? { path } : { path, clientAddress: address });
  };
  const app = new Hono();
  app.all(fleet.prefix === '' ? '/' : fleet.prefix, handler);
  app.all(`${fleet.prefix}/*`, handler);
  return app;
}
