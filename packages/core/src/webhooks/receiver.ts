import { err, ok, type Result } from 'neverthrow';
import { readLimited } from '../util/read-limited.js';
import { type ErrorBody, errorBody, errorResponse, type Meta, requestIdOf } from '../http/envelope.js';
import { newId } from '../util/ids.js';
import type { TEST_EVENT, WebhookEventType } from './schema.js';
import { type HeaderSource, verify, type VerifyOptions, type WebhookVerificationError, webhookRefusal } from './signature.js';
import { checkOption, positiveInteger } from '../util/options.js';

/** Largest delivery body a receiver reads before answering 413, in bytes. */
export const DEFAULT_WEBHOOK_BODY_LIMIT = 1024 * 1024;

export interface WebhookReceiverOptions extends VerifyOptions {
  /** The webhook's secret (`whsec_…`), as `POST /webhooks` answered it once. */
  secret: string;
  /** Largest body read, in bytes; a larger one is refused with 413 before it is verified. @default 1048576 */
  bodyLimit?: number;
}

/** The JSON body of every mcp-fleet delivery (docs/webhooks.md); `data` is redacted as in API responses. */
export interface WebhookPayload {
  /** `evt_…`, the same for every webhook the event fans out to. */
  id: string;
  type: WebhookEventType | typeof TEST_EVENT;
  created_at: string;
  data: Record<string, unknown>;
}

/** A delivery that passed verification. */
export interface VerifiedDelivery<E = WebhookPayload> {
  /** The parsed JSON body: `{ id, type, created_at, data }` for mcp-fleet deliveries. */
  event: E;
  /** The exact bytes that were signed. */
  rawBody: Uint8Array;
  /** `webhook-id`: the delivery id, the same on every retry (use it to drop duplicates). */
  id: string;
  /** `webhook-timestamp`, Unix seconds. */
  timestamp: number;
}

export interface WebhookReceiver {
  /** Verifies bytes already read (a framework that buffered the raw body). */
  verifyBody<E = WebhookPayload>(headers: HeaderSource, body: Uint8Array): Result<VerifiedDelivery<E>, WebhookVerificationError>;
  /** Reads a Fetch `Request` body up to the limit and verifies it. */
  verifyRequest<E = WebhookPayload>(request: Request): Promise<Result<VerifiedDelivery<E>, WebhookVerificationError>>;
  /**
   * The answer to a refused delivery (400, 401 or 413), in the API's error envelope with its headers (JSON,
   * `no-store`, `nosniff`, `X-Request-Id`: the request's own when it sent a valid one). Adapters send it as it is.
   */
  refusal(error: WebhookVerificationError, request?: Request): Response;
  readonly bodyLimit: number;
}

/**
 * The framework-free part of a webhook receiver, which the Hono and Express `verifyWebhook` middlewares wrap:
 * raw body with a size limit, Standard Webhooks verification (timestamp tolerance, constant-time compare), then JSON.
 * The secret is checked for form here, at construction, so a typo fails at start-up and not on the first delivery.
 */
export function createWebhookReceiver(options: WebhookReceiverOptions): WebhookReceiver {
  const { secret } = options;
  if (typeof secret !== 'string' || !secret.startsWith('whsec_')) {
    throw new TypeError('mcp-fleet: verifyWebhook needs the webhook secret ("whsec_…") that POST /webhooks answered');
  }
  verify(secret, '', {}); // throws a TypeError now for a secret that is not whsec_ + base64
  const bodyLimit = checkOption('bodyLimit', options.bodyLimit ?? DEFAULT_WEBHOOK_BODY_LIMIT, positiveInteger);
  const verifyOptions: VerifyOptions = {
    ...(options.toleranceSeconds !== undefined && { toleranceSeconds: options.toleranceSeconds }),
    ...(options.now !== undefined && { now: options.now }),
  };

  const verifyBody = <E>(headers: HeaderSource, body: Uint8Array): Result<VerifiedDelivery<E>, WebhookVerificationError> => {
    if (body.byteLength > bodyLimit) return err(webhookRefusal('PAYLOAD_TOO_LARGE', { limit_bytes: bodyLimit }));
    return verify(secret, body, headers, verifyOptions).andThen(({ id, timestamp }) => {
      let event: E;
      try {
        event = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(body)) as E;
      } catch {
        return err(webhookRefusal('INVALID_BODY'));
      }
      return ok({ event, rawBody: body, id, timestamp });
    });
  };

  const now = options.now ?? Date.now;

  return {
    bodyLimit,
    verifyBody,
    refusal(error, request) {
      const requestId = request === undefined ? newId('request') : requestIdOf(request.headers);
      return errorResponse(error, { timestamp: new Date(now()).toISOString(), request_id: requestId });
    },
    async verifyRequest<E>(request: Request) {
      const declared = request.headers.get('content-length');
      if (declared !== null && Number(declared) > bodyLimit) return err(webhookRefusal('PAYLOAD_TOO_LARGE', { limit_bytes: bodyLimit }));
      const body = await readLimited(request, bodyLimit);
      if (body === undefined) return err(webhookRefusal('PAYLOAD_TOO_LARGE', { limit_bytes: bodyLimit }));
      return verifyBody<E>(request.headers, body);
    },
  };
}

/** The refusal's body alone (`refusal` answers it whole), in the same envelope as the API's own errors; send `meta.request_id` as `X-Request-Id` too. */
export function webhookErrorBody(error: WebhookVerificationError, requestId: string = newId('request')): ErrorBody {
  const meta: Meta = { timestamp: new Date().toISOString(), request_id: requestId };
  return errorBody(error, meta);
}
