// The receiver side of webhooks, for a service that only receives mcp-fleet deliveries: `@mcp-fleet/core/webhooks`.
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
