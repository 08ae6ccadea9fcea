import { FleetError } from '../errors/fleet-error.js';

/** The refusal of an upstream answer larger than `limit` bytes (`maxUpstreamBytes`). */
export const tooLarge = (limit: number) =>
  new FleetError('UPSTREAM_RESPONSE_TOO_LARGE', { message: `The upstream's answer is larger than ${limit} bytes (maxUpstreamBytes).`, details: { limit_bytes: limit } });

/** How a body cut off at the limit fails to be read: as undici fails a body it cut off, the reason as the cause. */
export const cutOff = (limit: number) => new TypeError('terminated', { cause: tooLarge(limit) });

/** The refusal of an answer whose `Content-Length` says it is over `limit` before any of it is read, else `undefined`. */
export function declaredTooLarge(contentLength: string | null, limit: number): FleetError | undefined {
  return contentLength !== null && Number(contentLength) > limit ? tooLarge(limit) : undefined;
}
