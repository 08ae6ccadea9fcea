import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { err, ok, type Result } from 'neverthrow';
import type { ReceiverErrorCode } from '../errors/codes.js';
import { FleetError } from '../errors/fleet-error.js';

/**
 * Webhook signatures (docs/webhooks.md). Every delivery carries two signatures over the exact
 * body bytes with the webhook's secret:
 * - the seed's `X-Service-Signature: sha256=<hex>`, HMAC-SHA256 keyed with the secret string as given (UTF-8),
 *   the same scheme as GitHub's `X-Hub-Signature-256`;
 * - the Standard Webhooks headers `webhook-id`, `webhook-timestamp`, `webhook-signature: v1,<base64>`, HMAC-SHA256
 *   of `{id}.{timestamp}.{body}` keyed with the base64-decoded part after `whsec_`, as that specification says, so
 *   any Standard Webhooks verifier accepts our deliveries. Only this one carries a timestamp, so only it stops replays.
 */

const SECRET_PREFIX = 'whsec_';
/** 24 random bytes are 32 base64 characters: `whsec_` + 32 chars, as the contract says. */
const SECRET_BYTES = 24;
const SECRET_PATTERN = /^whsec_[A-Za-z0-9+/]{32}$/;

/** How far a `webhook-timestamp` may be from the receiver's clock, in seconds (docs/webhooks.md: 5 minutes). */
export const DEFAULT_TOLERANCE_SECONDS = 300;

/** A new webhook secret: `whsec_` followed by 32 base64 characters (24 random bytes). */
export function newWebhookSecret(): string {
  return `${SECRET_PREFIX}${randomBytes(SECRET_BYTES).toString('base64')}`;
}

/** Whether `value` has the form of a secret made by `newWebhookSecret`. */
export function isWebhookSecret(value: unknown): value is string {
  return typeof value === 'string' && SECRET_PATTERN.test(value);
}

/** The Standard Webhooks key: the bytes that the part after `whsec_` encodes. */
function standardKey(secret: string): Buffer {
  // Strict base64: Buffer.from() would silently drop stray characters, and a mistyped secret would then fail every
  // delivery with BAD_SIGNATURE instead of failing here, at start-up.
  if (!/^whsec_(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=|[A-Za-z0-9+/]{2,3})?$/.test(secret) || secret.length <= SECRET_PREFIX.length) {
    // Never echo the secret itself.
    throw new TypeError('mcp-fleet: a webhook secret starts with "whsec_" followed by base64 characters');
  }
  return Buffer.from(secret.slice(SECRET_PREFIX.length), 'base64');
}

const bytesOf = (body: string | Uint8Array): Buffer => (typeof body === 'string' ? Buffer.from(body, 'utf8') : Buffer.from(body.buffer, body.byteOffset, body.byteLength));

/** `sha256=<lower-case hex>`: the seed's `X-Service-Signature` value for `body`. */
export function serviceSignature(secret: string, body: string | Uint8Array): string {
  return `sha256=${createHmac('sha256', secret).update(bytesOf(body)).digest('hex')}`;
}

function standardSignature(key: Buffer, id: string, timestamp: number, body: Buffer): string {
  return createHmac('sha256', key).update(`${id}.${timestamp}.`).update(body).digest('base64');
}

export interface SignOptions {
  /** The delivery id (`dlv_…`), the same on every attempt: `webhook-id`. */
  id: string;
  /** Unix time of this attempt in seconds: `webhook-timestamp`. */
  timestamp: number;
}

export interface SignatureHeaders {
  'x-service-signature': string;
  'webhook-id': string;
  'webhook-timestamp': string;
  'webhook-signature': string;
  [name: string]: string;
}

/** The signature headers of one delivery attempt of `body` (the exact bytes sent). */
export function sign(secret: string, body: string | Uint8Array, { id, timestamp }: SignOptions): SignatureHeaders {
  if (!Number.isSafeInteger(timestamp) || timestamp < 0) throw new TypeError('mcp-fleet: sign() needs a timestamp in whole Unix seconds');
  const bytes = bytesOf(body);
  return {
    'x-service-signature': serviceSignature(secret, bytes),
    'webhook-id': id,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': `v1,${standardSignature(standardKey(secret), id, timestamp, bytes)}`,
  };
}

export type WebhookVerificationErrorCode = ReceiverErrorCode;

/**
 * Why a delivery was refused: a `FleetError` of category `receiver`, or `PAYLOAD_TOO_LARGE`; `status` is what a
 * receiver should answer. Never carries the secret or the body.
 */
export type WebhookVerificationError = FleetError<ReceiverErrorCode>;

export function webhookRefusal(code: ReceiverErrorCode, details: Record<string, unknown> = {}): WebhookVerificationError {
  return new FleetError(code, { details, ...(code === 'PAYLOAD_TOO_LARGE' && { message: 'The webhook body is too large.' }) });
}

/** Headers as a Fetch `Headers`, a Node `IncomingHttpHeaders` or a plain record. */
export type HeaderSource = Headers | Record<string, string | readonly string[] | undefined>;

function header(headers: HeaderSource, name: string): string | undefined {
  if (headers instanceof Headers) return headers.get(name) ?? undefined;
  const direct = headers[name] ?? Object.entries(headers).find(([key]) => key.toLowerCase() === name)?.[1];
  // A header sent twice arrives as an array: joined, as Fetch Headers would join it (signatures are space-separated).
  return typeof direct === 'string' ? direct : direct === undefined ? undefined : direct.join(name === 'webhook-signature' ? ' ' : ', ');
}

function equal(a: Buffer, b: Buffer): boolean {
  return a.length === b.length && timingSafeEqual(a, b);
}

export interface VerifyOptions {
  /** Largest accepted distance between `webhook-timestamp` and now, in seconds. @default 300 */
  toleranceSeconds?: number;
  /** Clock in ms, for tests. @default Date.now */
  now?: () => number;
}

export interface VerifiedWebhook {
  id: string;
  /** Unix seconds, as sent in `webhook-timestamp`. */
  timestamp: number;
}

/**
 * Verifies a delivery by its Standard Webhooks headers: the timestamp within the tolerance, and one of the
 * space-separated `v1,` signatures equal (in constant time) to ours over the exact body bytes; and, when present,
 * the seed's `X-Service-Signature` as well.
 */
export function verify(
  secret: string,
  body: string | Uint8Array,
  headers: HeaderSource,
  options: VerifyOptions = {},
): Result<VerifiedWebhook, WebhookVerificationError> {
  const key = standardKey(secret);
  const id = header(headers, 'webhook-id');
  const timestampText = header(headers, 'webhook-timestamp');
  const signatures = header(headers, 'webhook-signature');
  const missing = [
    ...(id === undefined ? ['webhook-id'] : []),
    ...(timestampText === undefined ? ['webhook-timestamp'] : []),
    ...(signatures === undefined ? ['webhook-signature'] : []),
  ];
  if (id === undefined || timestampText === undefined || signatures === undefined) {
    return err(webhookRefusal('MISSING_HEADERS', { missing }));
  }
  if (!/^\d{1,15}$/.test(timestampText)) return err(webhookRefusal('INVALID_HEADERS', { header: 'webhook-timestamp' }));
  const timestamp = Number(timestampText);
  const tolerance = options.toleranceSeconds ?? DEFAULT_TOLERANCE_SECONDS;
  const nowSeconds = Math.floor((options.now ?? Date.now)() / 1000);
  if (Math.abs(nowSeconds - timestamp) > tolerance) {
    return err(webhookRefusal('TIMESTAMP_OUT_OF_TOLERANCE', { tolerance_seconds: tolerance }));
  }
  const expected = Buffer.from(standardSignature(key, id, timestamp, bytesOf(body)), 'base64');
  // Other versions are skipped, as the Standard Webhooks libraries do: no v1 match is a bad signature. Each v1 value
  // must be strict base64 (a lenient decode would accept trailing junk), and every one is compared, so the time
  // taken does not tell which one matched.
  let matched = false;
  for (const candidate of signatures.split(' ')) {
    if (!candidate.startsWith('v1,') || !/^[A-Za-z0-9+/]+={0,2}$/.test(candidate.slice(3))) continue;
    if (equal(Buffer.from(candidate.slice(3), 'base64'), expected)) matched = true;
  }
  if (!matched) return err(webhookRefusal('BAD_SIGNATURE'));
  // The seed's signature, when sent, must hold too: a delivery never carries one good and one bad signature.
  const service = header(headers, 'x-service-signature');
  if (service !== undefined && !verifyServiceSignature(secret, body, service)) return err(webhookRefusal('BAD_SIGNATURE'));
  return ok({ id, timestamp });
}

/** Checks the seed's `X-Service-Signature` value alone (no timestamp, so no replay protection). Constant time. */
export function verifyServiceSignature(secret: string, body: string | Uint8Array, signature: string | undefined | null): boolean {
  if (typeof signature !== 'string' || !/^sha256=[0-9a-f]{64}$/i.test(signature)) return false;
  return equal(Buffer.from(signature.slice(7).toLowerCase(), 'hex'), Buffer.from(serviceSignature(secret, body).slice(7), 'hex'));
}
