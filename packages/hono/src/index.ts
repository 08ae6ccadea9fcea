import type { Fleet } from '@mcp-fleet/core';
import { createWebhookReceiver, type VerifiedDelivery, type WebhookPayload, type WebhookReceiverOptions } from '@mcp-fleet/core/webhooks';
import { atOnce, mountPath, readWholeBody } from '@mcp-fleet/core/node';
import type { IncomingMessage } from 'node:http';
import { type Context, Hono, type MiddlewareHandler, type Next } from 'hono';
import { baseRoutePath } from 'hono/route';

export interface FleetHonoOptions {
  /**
   * The client's address, for the limit on unauthenticated requests. Behind a proxy, read it from the header your
   * proxy sets. @default the socket address under `@hono/node-server`, otherwise none
   */
  clientAddress?: (c: Context) => string | undefined;
}

interface NodeIncoming {
  url?: string;
  socket?: { remoteAddress?: string };
  httpVersionMajor?: number;
  complete?: boolean;
  headers?: Record<string, string | string[] | undefined>;
}

/** `@hono/node-server` puts the Node request in `c.env.incoming`. */
function nodeIncoming(c: Context): NodeIncoming | undefined {
  return (c.env as { incoming?: NodeIncoming } | undefined)?.incoming;
}

function socketAddress(c: Context): string | undefined {
  return nodeIncoming(c)?.socket?.remoteAddress;
}

/** A path the URL parser leaves as it is: origin form, only URL code points, no dot segment (`.`, `%2e`) to resolve. */
const PLAIN_PATH = /^\/[\w\-~!$&'()*+,;=:@%/.]*$/;
const DOT_SEGMENT = /\/(?:\.|%2e)/i;

/**
 * The raw path of the request (no query), as `new URL(c.req.url).pathname` gives it: taken from the Node request's
 * target when the URL parser would not change it (`/v1/servers`), which spares parsing the URL on every request.
 */
function rawPath(c: Context): string {
  const target = nodeIncoming(c)?.url;
  if (target !== undefined) {
    const query = target.indexOf('?');
    const path = query === -1 ? target : target.slice(0, query);
    if (PLAIN_PATH.test(path) && !DOT_SEGMENT.test(path)) return path;
  }
  return new URL(c.req.url).pathname;
}

/**
 * An answer given before the request body was read to its end (401, 413…): `@hono/node-server` gives up draining
 * a body the core began to read and drops the connection, so tell an HTTP/1.1 client not to reuse it.
 */
function closeIfBodyUnread(c: Context, response: Response): Response {
  const incoming = nodeIncoming(c);
  if (incoming?.httpVersionMajor === 1 && incoming.complete === false) response.headers.set('connection', 'close');
  return response;
}

/** An HTTP/1.1 request that declares no body: nothing can be left unread, so its answer needs no look afterwards. */
function declaresNoBody(incoming: NodeIncoming | undefined): boolean {
  const headers = incoming?.headers;
  return incoming?.httpVersionMajor === 1 && headers !== undefined && headers['content-length'] === undefined && headers['transfer-encoding'] === undefined;
}

/** Path segments of each base path the app is mounted at (`/` → 1, `/api` → 2), counted once per base path. */
const mountDepths = new Map<string, number>();
function mountDepth(c: Context): number {
  const base = baseRoutePath(c);
  let depth = mountDepths.get(base);
  if (depth === undefined) {
    depth = base.replace(/\/+$/, '').split('/').length;
    if (mountDepths.size < 1000) mountDepths.set(base, depth);
  }
  return depth;
}

/**
 * A Hono app serving the fleet's HTTP API at `fleet.prefix`. Mount it anywhere:
 * `app.route('/', createFleetApp(fleet))` serves `/v1/...`; `app.route('/api', ...)` serves `/api/v1/...`.
 * Other paths below the mount point go on to the host app's later routes, or its 404.
 */
export function createFleetApp(fleet: Fleet, options: FleetHonoOptions = {}): Hono {
  const clientAddress = options.clientAddress ?? socketAddress;
  // The fleet's handler in its form that answers at once (looked up once, not per request).
  const handle = atOnce(fleet.handle);
  const app = new Hono();
  // A `Response`, or a promise of one (or of the next handler's): Hono takes either; its types tell a handler that
  // answers at once from a middleware, hence the one cast.
  const serveFleet = (c: Context, next: Next): Response | Promise<Response | void> => {
    // The raw path below where the host mounted this app (one segment per segment of the mount, parameters
    // included), not Hono's decoded one: the core decodes each segment once.
    const depth = mountDepth(c);
    const raw = rawPath(c);
    const path = mountPath(depth === 1 ? raw : `/${raw.split('/').slice(depth).join('/')}`, fleet.prefix);
    if (path === undefined) return next();
    const incoming = nodeIncoming(c);
    // Node's HTTP/1.1 parser never delivers more body than the Content-Length: the core may read such a body whole,
    // and reads it from the Node request itself (the Web request's `arrayBuffer()` would copy it into a new buffer).
    const http1 = incoming?.httpVersionMajor === 1;
    const noBody = declaresNoBody(incoming);
    let readingWhole = false;
    const readBody =
      http1 && !noBody
        ? () => {
            const reading = readWholeBody(incoming as IncomingMessage);
            readingWhole = reading !== undefined;
            return reading;
          }
        : undefined;
    // At once when the fleet had nothing to wait for (a read over its own memory): Hono and `@hono/node-server` then
    // write the answer in the same turn, without a promise.
    const answer = handle(c.req.raw, { path, clientAddress: clientAddress(c), bodyWithinLength: http1, readBody });
    // A body the core began reading whole before `handle` returned (the fleet's own memory answers without waiting)
    // is read to its end, or its connection is gone, before the answer exists: nothing can be left unread, no look
    // afterwards (a promise less on every create). Otherwise the answer may come first (a 401 or 413).
    if (noBody || readingWhole) return answer;
    return answer instanceof Promise ? answer.then((response) => closeIfBodyUnread(c, response)) : closeIfBodyUnread(c, answer);
  };
  app.all('*', serveFleet as MiddlewareHandler);
  return app;
}

export interface FleetWellKnownOptions {
  /**
   * Where the fleet's app is mounted (`/api` for `app.route('/api', createFleetApp(fleet))`), unless the `oauth.resource`
   * option names it. @default '' (the root)
   */
  mount?: string;
}

/**
 * A Hono app serving the fleet's documents at the host's root, outside the mount: the OAuth Protected Resource
 * Metadata (`/.well-known/oauth-protected-resource/v1/mcp`…) agents discover the fleet's identity provider by. Mount
 * it at the root: `app.route('/', createFleetWellKnownApp(fleet))`. Other requests go on to the host app's later
 * routes; without the fleet's `oauth` option it serves nothing.
 */
export function createFleetWellKnownApp(fleet: Fleet, options: FleetWellKnownOptions = {}): Hono {
  const app = new Hono();
  app.on(['GET', 'HEAD'], '/.well-known/*', (c, next) => fleet.wellKnown(c.req.raw, options) ?? next());
  return app;
}

export interface VerifyWebhookOptions extends WebhookReceiverOptions {}

/**
 * Hono middleware for an endpoint that receives mcp-fleet webhooks: reads the raw body (up to `bodyLimit`), checks
 * the Standard Webhooks signature and timestamp with the webhook's secret, and hands the parsed delivery to the next
 * handler as `c.get('webhook')`. A refused delivery is answered 400, 401 or 413 in the API's error envelope; the
 * handler never runs. Read the event from `c.get('webhook').event`, not from `c.req.json()`: the body is consumed.
 */
export function verifyWebhook<E = WebhookPayload>(
  options: VerifyWebhookOptions,
): MiddlewareHandler<{ Variables: { webhook: VerifiedDelivery<E> } }> {
  const receiver = createWebhookReceiver(options);
  return async (c, next) => {
    const verified = await receiver.verifyRequest<E>(c.req.raw);
    if (verified.isErr()) return closeIfBodyUnread(c, receiver.refusal(verified.error, c.req.raw));
    c.set('webhook', verified.value);
    await next();
  };
}
