import type { IncomingMessage, ServerResponse } from 'node:http';
import { writeWebResponse } from '@mcp-fleet/core/node';
import { register as defaultRegistry, type Registry } from 'prom-client';

/** Answers a scrape: a Web `Request` in, a `Response` out (Hono: `app.get('/metrics', (c) => handler(c.req.raw))`). */
export type MetricsHandler = (request: Request) => Promise<Response>;

/** The same for Node's `http` server and Express: `app.get('/metrics', nodeMetricsHandler())`. */
export type NodeMetricsHandler = (req: IncomingMessage, res: ServerResponse) => void;

const NO_STORE = { 'cache-control': 'no-store' };

/**
 * The `/metrics` endpoint over `registry` in the Prometheus text format: `GET` and `HEAD`; any other method is
 * answered 405. The host decides the path and who may read it (put it behind its own auth, or on a port of its own).
 */
export function metricsHandler(registry: Registry = defaultRegistry): MetricsHandler {
  return (request) => scrape(registry, request.method);
}

/** `metricsHandler` for a Node `(req, res)`: a scrape has no body, its method is all that is read. */
export function nodeMetricsHandler(registry: Registry = defaultRegistry): NodeMetricsHandler {
  return (req, res) => {
    scrape(registry, req.method ?? 'GET')
      .then((response) => writeWebResponse(res, response))
      .catch(() => res.destroy());
  };
}

async function scrape(registry: Registry, method: string): Promise<Response> {
  if (method !== 'GET' && method !== 'HEAD') {
    return new Response('Method Not Allowed: GET or HEAD\n', { status: 405, headers: { allow: 'GET, HEAD', 'content-type': 'text/plain; charset=utf-8', ...NO_STORE } });
  }
  let text: string;
  try {
    text = await registry.metrics();
  } catch (error) {
    // A collect callback of the host's threw: say which, not a stack.
    return new Response(`Metrics could not be collected: ${error instanceof Error ? error.message : String(error)}\n`, {
      status: 500,
      headers: { 'content-type': 'text/plain; charset=utf-8', ...NO_STORE },
    });
  }
  return new Response(method === 'HEAD' ? null : text, { status: 200, headers: { 'content-type': registry.contentType, ...NO_STORE } });
}
