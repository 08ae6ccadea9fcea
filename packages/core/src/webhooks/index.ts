/**
 * `@mcp-fleet/core/webhooks`: the receiving side of mcp-fleet webhooks alone, for an app that only receives
 * deliveries: `verify` (and `sign`, to test a receiver), and `createWebhookReceiver` with its envelope refusals.
 * The same modules as the root export: one `WebhookVerificationError` class, whichever entry it came from.
 */
export {
  DEFAULT_TOLERANCE_SECONDS,
  WEBHOOK_VERIFICATION_ERRORS,
  WebhookVerificationError,
  sign,
  verify,
  verifyServiceSignature,
  type HeaderSource,
  type SignOptions,
  type SignatureHeaders,
  type VerifiedWebhook,
  type VerifyOptions,
  type WebhookVerificationErrorCode,
} from './signature.js';
export {
  DEFAULT_WEBHOOK_BODY_LIMIT,
  createWebhookReceiver,
  type VerifiedDelivery,
  type WebhookPayload,
  type WebhookReceiver,
  type WebhookReceiverOptions,
} from './receiver.js';
export type { WebhookEventType } from './schema.js';
