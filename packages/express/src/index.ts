import { Readable } from 'node:stream';
import type { Fleet } from '@mcp-fleet/core';
import type { NextFunction, Request, RequestHandler, Response } from 'express';

export interface FleetExpressOptions {
  /**
   * The client's address, for the limit on unauthenticated requests. Behind a proxy, set Express's
   * `trust proxy` and return `req.ip`, or read the header your proxy sets. @default req.socket.remoteAddress
   */
  clientAddress?: (req: Request) => string | undefined;
}

/** A body parser that ran before us leaves the stream consumed and the parsed value on `req.body`. */
function parsedBody(req: Request): string | undefined {
  return (req as Request & { _body?: boolean })._body === true ? JSON.stringify(req.body) : undefined;
}

function toWebRequest(req: Request): globalThis.Request {
  const headers = new Headers();
  for (let i = 0; i < req.rawHeaders.length; i += 2) headers.append(req.rawHeaders[i] as string, req.rawHeaders[i + 1] as string);
  const url = `${req.protocol}://${req.get('host') ?? 'localhost'}${req.originalUrl}`;
  const method = req.method;
  if (method === 'GET' || method === 'HEAD') return new globalThis.Request(url, { method, headers });
  const consumed = parsedBody(req);
  if (consumed !== undefined) headers.delete('content-length');
  const body = consumed ?? (Readable.toWeb(req) as ReadableStream<Uint8Array>);
  return new globalThis.Request(url, { method, headers, body, duplex: 'half' } as RequestInit);
}

async function send(res: Response, response: globalThis.Response): Promise<void> {
  res.status(response.status);
  response.headers.forEach((value, name) => res.setHeader(name, value));
  res.end(Buffer.from(await response.arrayBuffer()));
}

/**
 * Express middleware serving the fleet's HTTP API at `fleet.prefix` below wherever it is mounted:
 * `app.use(fleetMiddleware(fleet))` serves `/v1/...`; `app.use('/api', ...)` serves `/api/v1/...`.
 * Other paths pass through to `next()`. Mount it before any body parser, so that the body limit and JSON
 * rules of the API apply to the raw bytes.
 */
export function fleetMiddleware(fleet: Fleet, options: FleetExpressOptions = {}): RequestHandler {
  const clientAddress = options.clientAddress ?? ((req: Request) => req.socket.remoteAddress);
  return (req: Request, res: Response, next: NextFunction) => {
    const pathname = req.url.split('?', 1)[0] as string;
    const { prefix } = fleet;
    if (prefix !== '' && pathname !== prefix && !pathname.startsWith(`${prefix}/`)) return next();
    const path = pathname.slice(prefix.length) || '/';
    const address = clientAddress(req);
    fleet
      .handle(toWebRequest(req), address === undefined ? { path } : { path, clientAddress: address })
      .then((response) => send(res, response))
      .catch(next);
  };
}
