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

/**
 * The request body as a Web stream. Unlike `Readable.toWeb`, cancelling it (the core stops reading at the body
 * limit) does not destroy the request, which would reset the connection; and `drain` drops whatever the core left
 * unread (a 401 or 413 answered before the body arrived), so a kept-alive connection stays usable, as Node does for
 * bodies nobody reads.
 */
function bodyStream(req: Request): { body: ReadableStream<Uint8Array>; drain: () => void } {
  let draining = false;
  const drain = () => {
    if (draining) return;
    draining = true;
    req.resume();
  };
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      req.on('data', (chunk: Buffer) => {
        if (draining) return;
        controller.enqueue(new Uint8Array(chunk)); // a copy: the chunk's memory may be pooled
        if ((controller.desiredSize ?? 0) <= 0) req.pause();
      });
      req.once('end', () => {
        if (!draining) controller.close();
      });
      req.on('error', (error) => {
        if (!draining) controller.error(error);
      });
    },
    pull() {
      if (!draining) req.resume();
    },
    cancel() {
      drain();
    },
  });
  return { body, drain };
}

const nothingToDrain = () => {};

function toWebRequest(req: Request): { request: globalThis.Request; drain: () => void } {
  const headers = new Headers();
  for (let i = 0; i < req.rawHeaders.length; i += 2) headers.append(req.rawHeaders[i] as string, req.rawHeaders[i + 1] as string);
  const url = `${req.protocol}://${req.get('host') ?? 'localhost'}${req.originalUrl}`;
  const method = req.method;
  if (method === 'GET' || method === 'HEAD') return { request: new globalThis.Request(url, { method, headers }), drain: nothingToDrain };
  const consumed = parsedBody(req);
  if (consumed !== undefined) {
    headers.delete('content-length');
    return { request: new globalThis.Request(url, { method, headers, body: consumed }), drain: nothingToDrain };
  }
  const { body, drain } = bodyStream(req);
  return { request: new globalThis.Request(url, { method, headers, body, duplex: 'half' } as RequestInit), drain };
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
    const { request, drain } = toWebRequest(req);
    fleet
      .handle(request, address === undefined ? { path } : { path, clientAddress: address })
      .then((response) => send(res, response))
      .then(drain, (error: unknown) => {
        drain();
        next(error);
      });
  };
}
