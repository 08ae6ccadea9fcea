/**
 * `@mcp-fleet/core/webhooks`: the receiving side of mcp-fleet webhooks alone, for an app that only receives
 * deliveries: `verify` (and `sign`, to test a receiver), and `createWebhookReceiver` with its envelope refusals.
 * The same modules as the root export.
 */
export {
  DEFAULT_TOLERANCE_SECONDS,
  isWebhookSecret,
  newWebhookSecret,
  serviceSignature,
  sign,
  verify,
  verifyServiceSignature,
  type HeaderSource,
  type SignOptions,
  type SignatureHeaders,
  type VerifiedWebhook,
  type VerifyOptions,
  type WebhookVerificationError,
  type WebhookVerificationErrorCode,
} from './signature.js';
export {
  DEFAULT_WEBHOOK_BODY_LIMIT,
  createWebhookReceiver,
  webhookErrorBody,
  type VerifiedDelivery,
  type WebhookPayload,
  type WebhookReceiver,
  type WebhookReceiverOptions,
} from './receiver.js';
export type { WebhookEventType } from './schema.js';
