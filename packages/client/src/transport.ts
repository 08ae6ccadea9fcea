import { type ErrorCode, FleetApiError, FleetNetworkError, type RateLimit } from './errors.js';

export type Method = 'GET' | 'POST' | 'PUT' | 'DELETE';

export interface ClientOptions {
  /** Where the API is mounted, with its prefix: `https://fleet.example.com/v1` (the document's `servers[0].url`). */
  baseUrl: string | URL;
  /** The API key (`mcpf_…`), sent as `Authorization: Bearer`. @default none: only `/openapi.json` answers without one */
  apiKey?: string;
  /** The `fetch` to send with (a mock, undici's, a proxy-aware one). @default globalThis.fetch */
  fetch?: typeof globalThis.fetch;
  /**
   * Retries after a 429 (any request: a refused request changed nothing) and after a 503 of a GET, PUT or DELETE,
   * waiting `Retry-After` (or 0.5 s, 1 s, 2 s… without one). A POST is never retried after a 503: the fleet may have
   * acted before the store failed (a tool call that ran, then could not be recorded). @default 2
   */
  retries?: number;
  /** The longest wait before a retry, in ms: an answer asking for longer is thrown at once. @default 30000 */
  maxRetryDelay?: number;
  /** Per attempt, in ms, until the whole answer is read; 0: none. @default 60000 */
  timeout?: number;
  /**
   * The most bytes of one answer the client reads: a longer one is cut off and thrown (`too_large`), so a wrong
   * `baseUrl` or a hostile proxy cannot fill the memory. The fleet's own answers stay far below the default (a tool
   * call's result is bounded by the fleet's `maxUpstreamBytes`, 4 MiB by default). @default 33554432 (32 MiB)
   */
  maxResponseBytes?: number;
  /** Sent with every request (an `X-Request-Id` of your own, a tracing header). @default none */
  headers?: Record<string, string>;
}

/** What every method takes last. */
export interface CallOptions {
  /** Cancels the request, and any wait before a retry: the method rejects with the signal's reason. */
  signal?: AbortSignal;
  /** Overrides the client's `timeout` for this call, in ms. */
  timeout?: number;
  /** Added to the client's headers for this call. */
  headers?: Record<string, string>;
}

/** A request as the facade describes it. */
export interface Call {
  method: Method;
  /** Below `baseUrl`, path parameters filled in: `/servers/srv_1`. */
  path: string;
  query?: Record<string, unknown> | undefined;
  body?: unknown;
  options?: CallOptions | undefined;
}

/** A success envelope's `data`, or `{ data, pagination }` for a listing. */
export type Answer = unknown;

const JSON_TYPE = 'application/json';

const DEFAULT_MAX_RESPONSE_BYTES = 32 * 1024 * 1024;

class AnswerTooLarge extends Error {}

/** The answer's body as text, refusing it as soon as it is known to hold more than `max` bytes. */
async function readBounded(response: Response, max: number): Promise<string> {
  const declared = Number(response.headers.get('content-length'));
  if (declared > max) {
    await response.body?.cancel().catch(() => {});
    throw new AnswerTooLarge();
  }
  if (response.body === null) return '';
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let text = '';
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return text + decoder.decode();
    total += value.byteLength;
    if (total > max) {
      await reader.cancel().catch(() => {});
      throw new AnswerTooLarge();
    }
    text += decoder.decode(value, { stream: true });
  }
}

/** `Retry-After` as seconds: delta-seconds or an HTTP date. */
function retryAfterOf(headers: Headers): number | undefined {
  const value = headers.get('retry-after');
  if (value === null) return undefined;
  if (/^\d+$/.test(value.trim())) return Number(value);
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, Math.ceil((at - Date.now()) / 1000));
}

function rateLimitOf(headers: Headers): RateLimit | undefined {
  const [limit, remaining, reset] = ['x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset'].map((name) => headers.get(name));
  if (limit == null || remaining == null || reset == null) return undefined;
  return { limit: Number(limit), remaining: Number(remaining), reset: Number(reset) };
}

/** Waits `ms`, or rejects with the signal's reason as soon as it aborts. */
function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

export interface Transport {
  send(call: Call): Promise<Answer>;
  /** The `X-RateLimit-*` headers of the latest answer that carried them. */
  readonly lastRateLimit: RateLimit | undefined;
}

export function createTransport(options: ClientOptions): Transport {
  const base = String(options.baseUrl).replace(/\/+$/, '');
  if (!/^https?:\/\//.test(base)) throw new TypeError(`createClient: baseUrl must be an http(s) URL such as https://fleet.example.com/v1, got ${JSON.stringify(String(options.baseUrl))}`);
  const fetchImpl = options.fetch ?? globalThis.fetch;
  if (typeof fetchImpl !== 'function') throw new TypeError('createClient: no fetch in this runtime: pass one as the fetch option');
  const retries = options.retries ?? 2;
  if (!Number.isInteger(retries) || retries < 0) throw new TypeError(`createClient: retries must be a whole number of at least 0, got ${retries}`);
  const maxRetryDelay = options.maxRetryDelay ?? 30_000;
  const maxResponseBytes = options.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES;
  if (!Number.isInteger(maxResponseBytes) || maxResponseBytes < 1) throw new TypeError(`createClient: maxResponseBytes must be a whole number of bytes of at least 1, got ${maxResponseBytes}`);
  let lastRateLimit: RateLimit | undefined;

  function urlOf(call: Call): string {
    const url = new URL(base + call.path);
    for (const [name, value] of Object.entries(call.query ?? {})) if (value !== undefined && value !== null) url.searchParams.set(name, String(value));
    return url.href;
  }

  /** One attempt: the answer's status, headers and parsed body, within the timeout. */
  async function attempt(call: Call, url: string, init: RequestInit): Promise<{ response: Response; body: unknown }> {
    const timeout = call.options?.timeout ?? options.timeout ?? 60_000;
    const signal = call.options?.signal;
    if (signal?.aborted) throw signal.reason;
    const controller = new AbortController();
    const onAbort = () => controller.abort(signal?.reason);
    signal?.addEventListener('abort', onAbort, { once: true });
    let timedOut = false;
    const timer =
      timeout > 0
        ? setTimeout(() => {
            timedOut = true;
            controller.abort();
          }, timeout)
        : undefined;
    const what = `${call.method} ${url}`;
    try {
      const response = await fetchImpl(url, { ...init, signal: controller.signal });
      const text = await readBounded(response, maxResponseBytes);
      let body: unknown;
      try {
        body = JSON.parse(text);
      } catch {
        body = undefined;
      }
      const envelope = body as { success?: unknown } | undefined;
      if (typeof envelope !== 'object' || envelope === null || typeof envelope.success !== 'boolean') {
        const type = response.headers.get('content-type') ?? 'no content type';
        throw new FleetNetworkError('invalid_response', `${what} answered ${response.status} (${type}), not the fleet's JSON envelope: is baseUrl the fleet's API, its prefix included (…/v1)?`, { status: response.status });
      }
      return { response, body };
    } catch (error) {
      if (error instanceof FleetNetworkError) throw error;
      if (error instanceof AnswerTooLarge) throw new FleetNetworkError('too_large', `${what} answered more than ${maxResponseBytes} bytes: is baseUrl the fleet's API? (the maxResponseBytes option raises the bound)`);
      if (signal?.aborted) throw signal.reason;
      if (timedOut) throw new FleetNetworkError('timeout', `${what}: no answer within ${timeout} ms (the timeout option)`, { cause: error });
      throw new FleetNetworkError('network', `${what} failed before an answer: ${(error as Error)?.message ?? String(error)} (is the fleet running at ${base}?)`, { cause: error });
    } finally {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
    }
  }

  async function send(call: Call): Promise<Answer> {
    const url = urlOf(call);
    const headers: Record<string, string> = { accept: JSON_TYPE, ...options.headers, ...call.options?.headers };
    if (options.apiKey !== undefined) headers.authorization = `Bearer ${options.apiKey}`;
    const init: RequestInit = { method: call.method, headers };
    if (call.body !== undefined) {
      headers['content-type'] = JSON_TYPE;
      init.body = JSON.stringify(call.body);
    }
    for (let tries = 0; ; tries++) {
      const { response, body } = await attempt(call, url, init);
      const rateLimit = rateLimitOf(response.headers);
      if (rateLimit !== undefined) lastRateLimit = rateLimit;
      const envelope = body as { success: boolean; data?: unknown; pagination?: unknown; error?: { code: ErrorCode; message: string; details?: unknown } };
      if (envelope.success) return envelope.pagination === undefined ? envelope.data : { data: envelope.data, pagination: envelope.pagination };
      const retryAfter = retryAfterOf(response.headers);
      const error = new FleetApiError({
        status: response.status,
        code: envelope.error?.code ?? 'INTERNAL_ERROR',
        message: envelope.error?.message ?? `The fleet answered ${response.status}.`,
        details: envelope.error?.details ?? {},
        requestId: response.headers.get('x-request-id') ?? undefined,
        retryAfter,
        rateLimit,
      });
      const retryable = response.status === 429 || (response.status === 503 && call.method !== 'POST');
      if (!retryable || tries >= retries) throw error;
      const wait = retryAfter === undefined ? 500 * 2 ** tries : retryAfter * 1000;
      if (wait > maxRetryDelay) throw error;
      await sleep(wait, call.options?.signal);
    }
  }

  return {
    send,
    get lastRateLimit() {
      return lastRateLimit;
    },
  };
}
