import { type Agent, request } from 'undici';
import { classifyUndiciError } from '../net/upstream-error.js';

/** What one delivery attempt found. Never a response body: only its status and the headers retries need. */
export interface SendOutcome {
  statusCode: number | null;
  durationMs: number;
  /** `Retry-After` of a 429 or 503, as sent. */
  retryAfter: string | undefined;
  error: { code: string; message: string } | null;
}

export interface SendInput {
  url: string;
  headers: Record<string, string>;
  body: string;
  timeoutMs: number;
  /** Aborts the attempt (the fleet is closing); the outcome is then thrown away. */
  signal?: AbortSignal;
}

export type Sender = (input: SendInput) => Promise<SendOutcome>;

/**
 * Sends one delivery with undici on the guarded agent: the guard judges the resolved address at connect time,
 * redirects are not followed (a 3xx is a failed attempt), the whole attempt is bounded by `timeoutMs`, and the
 * response body is drained unread so the connection can be reused and nothing the receiver says is stored.
 */
export function createSender(agent: Agent, now: () => number = Date.now): Sender {
  return async ({ url, headers, body, timeoutMs, signal }) => {
    const started = now();
    const timeout = AbortSignal.timeout(timeoutMs);
    const elapsed = () => Math.max(0, Math.round(now() - started));
    try {
      const response = await request(url, {
        method: 'POST',
        headers,
        body,
        dispatcher: agent,
        signal: signal === undefined ? timeout : AbortSignal.any([timeout, signal]),
        headersTimeout: timeoutMs,
        bodyTimeout: timeoutMs,
      });
      await response.body.dump({ limit: 64 * 1024 }).catch(() => undefined);
      const statusCode = response.statusCode;
      const retryAfterHeader = response.headers['retry-after'];
      const retryAfter = statusCode === 429 || statusCode === 503 ? (Array.isArray(retryAfterHeader) ? retryAfterHeader[0] : retryAfterHeader) : undefined;
      const ok = statusCode >= 200 && statusCode < 300;
      return {
        statusCode,
        durationMs: elapsed(),
        retryAfter,
        error: ok ? null : { code: 'UNEXPECTED_STATUS', message: `The receiver answered ${statusCode}; a 2xx was expected.` },
      };
    } catch (error) {
      if (timeout.aborted) {
        return { statusCode: null, durationMs: elapsed(), retryAfter: undefined, error: { code: 'UPSTREAM_TIMEOUT', message: `The receiver did not answer within ${timeoutMs} ms.` } };
      }
      if (signal?.aborted) throw error;
      return { statusCode: null, durationMs: elapsed(), retryAfter: undefined, error: classifyUndiciError(error).toJSON() };
    }
  };
}
