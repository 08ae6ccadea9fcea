import type { Fleet } from '@mcp-fleet/core';
import { createWebhookReceiver, type VerifiedDelivery, type WebhookReceiverOptions } from '@mcp-fleet/core/webhooks';
import { mountPath, toWebRequest, writeWebResponse } from '@mcp-fleet/core/node';
import type { NextFunction, Request, RequestHandler, Response } from 'express';

export interface FleetExpressOptions {
  /**
   * The client's address, for the limit on unauthenticated requests. Behind a proxy, set Express's
   * `trust proxy` and return `req.ip`, or read the header your proxy sets. @default req.socket.remoteAddress
   */
  clientAddress?: (req: Request) => string | undefined;
}

/**
 * Express middleware serving the fleet's HTTP API at `fleet.prefix` below wherever it is mounted:
 * `app.use(fleetMiddleware(fleet))` serves `/v1/...`; `app.use('/api', ...)` serves `/api/v1/...`.
 * Other paths pass through to `next()`. Best mounted before any body parser, so that the body limit and JSON rules
 * of the API apply to the bytes the client sent; after one, the parsed body is passed on re-serialised
 * (docs/configuration.md, "Behind a body parser").
 */
export function fleetMiddleware(fleet: Fleet, options: FleetExpressOptions = {}): RequestHandler {
  const clientAddress = options.clientAddress ?? ((req: Request) => req.socket.remoteAddress);
  return (req: Request, res: Response, next: NextFunction) => {
    // req.url is below Express's mount point; the raw path, which the core decodes once.
    const query = req.url.indexOf('?');
    const path = mountPath(query < 0 ? req.url : req.url.slice(0, query), fleet.prefix);
    if (path === undefined) return next();
    // Called at once, not from a promise turn: a turn less per request; a synchronous throw still reaches next().
    let answered: ReturnType<Fleet['handle']>;
    try {
      // writeWebResponse sends the answer: envelopes are made for it, without undici's Response (`writesAnswer`).
      answered = fleet.handle(toWebRequest(req, res, { target: req.originalUrl }), { path, clientAddress: clientAddress(req), writesAnswer: true });
    } catch (error) {
      return next(error);
    }
    answered.then((response) => writeWebResponse(res, response)).then(undefined, next);
  };
}

export interface FleetWellKnownOptions {
  /**
   * Where the fleet's middleware is mounted (`/api` for `app.use('/api', fleetMiddleware(fleet))`), unless the
   * `oauth.resource` option names it. @default '' (the root)
   */
  mount?: string;
}

/**
 * Express middleware serving the fleet's documents at the host's root, outside the mount: the OAuth Protected
 * Resource Metadata (`/.well-known/oauth-protected-resource/v1/mcp`…) agents discover the fleet's identity provider
 * by. `app.use(fleetWellKnownMiddleware(fleet))`, at the root. Other requests pass through to `next()`; without the
 * fleet's `oauth` option it serves nothing.
 */
export function fleetWellKnownMiddleware(fleet: Fleet, options: FleetWellKnownOptions = {}): RequestHandler {
  return (req: Request, res: Response, next: NextFunction) => {
    if ((req.method !== 'GET' && req.method !== 'HEAD') || !req.originalUrl.startsWith('/.well-known/')) return next();
    const answer = fleet.wellKnown(toWebRequest(req, res, { target: req.originalUrl }), options);
    if (answer === undefined) return next();
    writeWebResponse(res, answer).then(undefined, next);
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
 * consume the bytes the signature covers: after it, every request fails with an error passed to `next`.
 */
export function verifyWebhook(options: VerifyWebhookOptions): RequestHandler {
  const receiver = createWebhookReceiver(options);
  return (req: Request, res: Response, next: NextFunction) => {
    // The limit, the 413, the verification and the refusal are the core receiver's; this only carries bytes.
    const verified = async () => {
      const request = toWebRequest(req, res, { target: req.originalUrl, exactBody: true });
      const result = await receiver.verifyRequest(request);
      if (result.isErr()) {
        await writeWebResponse(res, receiver.refusal(result.error, request));
        return false;
      }
      const { rawBody, event } = result.value;
      req.rawBody = Buffer.from(rawBody.buffer, rawBody.byteOffset, rawBody.byteLength);
      req.body = event;
      req.webhook = result.value;
      return true;
    };
    verified().then((passed) => passed && next(), next);
  };
}
