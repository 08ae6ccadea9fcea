import {
  createWebhookReceiver,
  type Fleet,
  type VerifiedDelivery,
  type WebhookReceiverOptions,
  type WebhookVerificationError,
  webhookErrorBody,
} from '@mcp-fleet/core';
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

export interface VerifyWebhookOptions extends WebhookReceiverOptions {}

declare module 'express-serve-static-core' {
  interface Request {
    /** The exact bytes of a webhook delivery, set by `verifyWebhook`. */
    rawBody?: Buffer;
    /** The verified delivery, set by `verifyWebhook`. */
    webhook?: VerifiedDelivery<unknown>;
  }
}

/**
 * Express middleware for an endpoint that receives mcp-fleet webhooks: reads the raw body itself (or takes the Buffer
 * left by `express.raw()`), checks the Standard Webhooks signature and timestamp with the webhook's secret, and passes
 * on with `req.body` = the parsed event, `req.rawBody` = the signed bytes and `req.webhook` = the delivery. A refused
 * delivery is answered 400, 401 or 413 in the API's error envelope. Mount it before `express.json()`, which would
 * consume the bytes the signature covers.
 */
export function verifyWebhook(options: VerifyWebhookOptions): RequestHandler {
  const receiver = createWebhookReceiver(options);
  const refuse = (res: Response, error: WebhookVerificationError) => {
    const body = webhookErrorBody(error);
    res.status(error.status).setHeader('x-request-id', body.meta.request_id).json(body);
  };
  return (req: Request, res: Response, next: NextFunction) => {
    const buffered = Buffer.isBuffer(req.body) ? (req.body as Buffer) : undefined;
    // Another parser already read the stream (its result is on req.body, or the stream has ended): the exact bytes
    // are gone, and waiting for them would hang.
    if (buffered === undefined && (req.body !== undefined || req.readableEnded || (req as Request & { _body?: boolean })._body === true)) {
      next(new TypeError('mcp-fleet: verifyWebhook needs the exact bytes that were signed: mount it before express.json(), or after an express.raw() whose type matches the request'));
      return;
    }
    // The limit, the 413 and the verification are the core receiver's; this only hands it the bytes.
    let drain = nothingToDrain;
    let verified;
    if (buffered === undefined) {
      const web = toWebRequest(req);
      drain = web.drain;
      verified = receiver.verifyRequest(web.request);
    } else {
      verified = Promise.resolve(receiver.verifyBody(req.headers, buffered));
    }
    verified.then(
      (result) => {
        if (result.isErr()) {
          refuse(res, result.error);
          drain();
          return;
        }
        req.rawBody = Buffer.from(result.value.rawBody.buffer, result.value.rawBody.byteOffset, result.value.rawBody.byteLength);
        req.body = result.value.event;
        req.webhook = result.value;
        next();
      },
      (error: unknown) => {
        drain();
        next(error);
      },
    );
  };
}
