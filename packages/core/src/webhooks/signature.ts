import { createHmac, randomBytes } from 'node:crypto';

/**
 * Minimal signing, written by the webhooks branch because the `signing` branch had not landed by its deadline; the
 * signing branch's `signature.ts` (with `verify` and the receiver middleware) supersedes this file as a whole.
 */

/** `whsec_` + 32 characters: the base64 of 24 random bytes, the Standard Webhooks secret form. */
export function newWebhookSecret(): string {
  return `whsec_${randomBytes(24).toString('base64')}`;
}

/**
 * The signature headers of one delivery attempt:
 * - `x-service-signature`: `sha256=` + lower-case hex HMAC-SHA256 of the exact body bytes, keyed with the secret as
 *   given (the seed's rule, GitHub's scheme);
 * - `webhook-id`, `webhook-timestamp` (Unix seconds), `webhook-signature`: `v1,` + base64 HMAC-SHA256 of
 *   `{id}.{timestamp}.{body}`, keyed with the base64-decoded part after `whsec_` (Standard Webhooks).
 */
export function sign(secret: string, body: string | Uint8Array, { id, timestamp }: { id: string; timestamp: number }): Record<string, string> {
  const bytes = Buffer.from(body);
  const hex = createHmac('sha256', secret).update(bytes).digest('hex');
  const key = Buffer.from(secret.startsWith('whsec_') ? secret.slice('whsec_'.length) : secret, 'base64');
  const standard = createHmac('sha256', key).update(`${id}.${timestamp}.`).update(bytes).digest('base64');
  return {
    'x-service-signature': `sha256=${hex}`,
    'webhook-id': id,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': `v1,${standard}`,
  };
}
