import { type Agent, type Dispatcher, Request as UndiciRequest, fetch as undiciFetch, type RequestInit as UndiciRequestInit } from 'undici';
import type { FleetError } from '../errors/fleet-error.js';
import { checkOption, positiveInteger } from '../util/options.js';
import { badPortRefusal, hasBadPort } from './bad-ports.js';
import { createDispatchExchange, createDispatchFetch, type ExchangeInit, type PlainAnswer } from './dispatch-fetch.js';
import { createGuardedAgent, isGuardedAgent, type GuardedAgentOptions } from './guarded-agent.js';
import { cutOff, declaredTooLarge, tooLarge } from './response-bound.js';

/**
 * A `fetch` whose connections all pass the guard and which never follows a redirect. Its shape is the standard
 * `fetch` (what the MCP SDK transports take as their `fetch` option); `dispatcher` is the guarded agent behind it,
 * for undici's `WebSocket` (`new WebSocket(url, { dispatcher })`) and anything else that takes a dispatcher.
 */
export interface GuardedFetch {
  (input: string | URL | Request, init?: RequestInit): Promise<Response>;
  readonly dispatcher: Agent;
  /** The bound of every read from an upstream (`maxUpstreamBytes`): WebSocket messages are held to it too. */
  readonly maxResponseBytes: number;
  /**
   * The same guarded, bounded fetch straight over the dispatcher (`createDispatchFetch`), for the MCP client's
   * Streamable HTTP requests: plain requests without undici fetch's per-request objects; anything else it hands to
   * this fetch.
   */
  readonly direct: (input: string | URL | Request, init?: RequestInit) => Promise<Response>;
  /**
   * `direct`'s road for the MCP client's lean requests (`createDispatchExchange`): a POST of flat headers and a text
   * body, whose `200` answer of one JSON text comes as that text, any other as the `Response` `direct` would give.
   */
  readonly exchange: (url: URL, init: ExchangeInit) => Promise<Response | PlainAnswer>;
}

export interface GuardedFetchOptions extends GuardedAgentOptions {
  /**
   * An agent made by `createGuardedAgent` to share (one connection pool for HTTP and WebSocket). Any other
   * dispatcher is refused, since it would bypass the guard. When given, the agent options above must be absent.
   * @default a new guarded agent from the other options
   */
  agent?: Agent;
  /**
   * Largest response body read, in bytes (decoded, for a compressed one): past it reading the body fails as undici
   * fails a body it cut off, `TypeError('terminated')`, with the `UPSTREAM_RESPONSE_TOO_LARGE` `FleetError` as its
   * cause, and the rest is never read, so one upstream cannot fill the service's memory. @default 4194304 (4 MiB)
   */
  maxResponseBytes?: number;
}

export const DEFAULT_MAX_UPSTREAM_BYTES = 4 * 1024 * 1024;

/**
 * An undici interceptor that counts the bytes of each response body as they come off the connection and cuts the
 * response off past `limit`: the reader then fails with `cutOff`. No stream of ours stands between the body and its
 * reader, which on every tool call (an SSE answer, chunked) cost more than the rest of the fleet's own work.
 *
 * The cut is made on the next turn of the event loop, not in the data callback: undici's `fetch` loses an error given
 * before it has set up the body it resolved with (a first chunk already past the limit), and the reader then waits
 * for ever. Nothing more is passed on meanwhile; a response that ends meanwhile is failed instead of ended.
 */
function boundedBodies(limit: number): Dispatcher.DispatcherComposeInterceptor {
  return (dispatch) => (options, handler) => {
    let seen = 0;
    let refusal: FleetError | undefined;
    let ended = false;
    let failed = false;
    const fail = (controller: Dispatcher.DispatchController, error: Error) => {
      if (failed) return;
      failed = true;
      handler.onResponseError?.(controller, error);
    };
    return dispatch(options, {
      onRequestStart: (controller, context) => handler.onRequestStart?.(controller, context),
      onRequestUpgrade: (controller, status, headers, socket) => handler.onRequestUpgrade?.(controller, status, headers, socket),
      onResponseStart: (controller, status, headers, message) => handler.onResponseStart?.(controller, status, headers, message),
      onResponseData: (controller, chunk) => {
        if (refusal !== undefined) return;
        seen += chunk.byteLength;
        if (seen <= limit) {
          handler.onResponseData?.(controller, chunk);
          return;
        }
        // The reason as it is: fetch fails the body with `TypeError('terminated')` around it, as `cutOff` does.
        const error = (refusal = tooLarge(limit));
        setImmediate(() => (ended ? fail(controller, error) : controller.abort(error)));
      },
      onResponseEnd: (controller, trailers) => {
        if (refusal === undefined) handler.onResponseEnd?.(controller, trailers);
        else ended = true;
      },
      onResponseError: (controller, error) => fail(controller, refusal ?? error),
    });
  };
}

/**
 * The response with its body held to `limit` bytes. Past them, reading it fails (`cutOff`), and the rest is never read:
 * - a `Content-Length` over the limit fails at once, without reading;
 * - an encoded body (gzip, br…) is counted as it is decoded, by a stream of ours: `boundedBodies` counts the bytes on
 *   the wire, and a small compressed body can open up to far more;
 * - any other body was counted on the wire (`boundedBodies`), and is given back as it is.
 */
function bounded(response: Response, limit: number): Response {
  if (response.body === null) return response;
  if (declaredTooLarge(response.headers.get('content-length'), limit) !== undefined) {
    void response.body.cancel().catch(() => {});
    const failing = new ReadableStream<Uint8Array>({ start: (controller) => controller.error(cutOff(limit)) });
    return new Response(failing, { status: response.status, statusText: response.statusText, headers: response.headers });
  }
  const encoding = response.headers.get('content-encoding');
  if (encoding === null || encoding.trim().toLowerCase() === 'identity') return response;
  const reader = response.body.getReader();
  let seen = 0;
  const counted = new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        const { done, value } = await reader.read();
        if (done) {
          controller.close();
          return;
        }
        seen += value.byteLength;
        if (seen > limit) {
          controller.error(cutOff(limit));
          await reader.cancel().catch(() => {});
        } else controller.enqueue(value);
      },
      cancel: (reason) => reader.cancel(reason),
    },
    { highWaterMark: 0 },
  );
  return new Response(counted, { status: response.status, statusText: response.statusText, headers: response.headers });
}

/** A `Request` from another copy of undici (Node's global one) is not an instance of ours: carry its parts over. */
function toUndiciInput(input: string | URL | Request): string | URL | UndiciRequest {
  if (typeof input === 'string' || input instanceof URL || input instanceof UndiciRequest) return input;
  const init: UndiciRequestInit = {
    method: input.method,
    headers: [...input.headers],
    signal: input.signal,
    keepalive: input.keepalive,
    ...(input.body === null ? {} : { body: input.body, duplex: 'half' }),
  };
  return new UndiciRequest(input.url, init);
}

/**
 * undici's `fetch` on a guarded agent, which never follows a redirect: `redirect: 'manual'` is forced whatever the
 * caller asks, so a 3xx comes back as the response it is (status and `Location` readable), and a public URL cannot
 * redirect the library into a private network. Only `redirect: 'error'` is kept: a 3xx then rejects, as fetch rejects
 * it (`TypeError('fetch failed')`, cause `unexpected redirect`), and undici makes no copy of the request to send it.
 * Refusals and network failures reject as undici's `TypeError('fetch failed')` with the cause attached;
 * `classifyUndiciError` turns them into upstream error codes.
 */
export function createGuardedFetch(options: GuardedFetchOptions = {}): GuardedFetch {
  const { agent: given, maxResponseBytes = DEFAULT_MAX_UPSTREAM_BYTES, ...agentOptions } = options;
  checkOption('maxUpstreamBytes', maxResponseBytes, positiveInteger);
  if (given !== undefined) {
    if (!isGuardedAgent(given)) throw new TypeError('createGuardedFetch: agent must come from createGuardedAgent.');
    if (Object.values(agentOptions).some((value) => value !== undefined)) {
      throw new TypeError('createGuardedFetch: give either agent or the options of a new agent, not both.');
    }
  }
  const agent = given ?? createGuardedAgent(agentOptions);
  // The agent itself stays free of the bound (it may be shared, and WebSocket reads are bounded message by message).
  const dispatcher = agent.compose(boundedBodies(maxResponseBytes));

  /** The port alone is judged at once (the SDK hands its URL object: not parsed again); only a bad one waits. */
  const portRefusal = async (url: URL): Promise<void> => {
    const refused = await badPortRefusal(agent, url);
    // As undici's own failures reject: `TypeError('fetch failed')` with the cause.
    if (refused !== undefined) throw new TypeError('fetch failed', { cause: refused });
  };

  const guardedFetch = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const url = input instanceof URL ? input : new URL(typeof input === 'string' ? input : input.url);
    if (hasBadPort(url)) await portRefusal(url);
    const response = await undiciFetch(toUndiciInput(input), {
      ...(init as UndiciRequestInit | undefined),
      dispatcher,
      redirect: init?.redirect === 'error' ? 'error' : 'manual',
    });
    // undici's Response is the same Fetch-standard class as the global one, from a newer copy of undici.
    return bounded(response as unknown as Response, maxResponseBytes);
  };
  const dispatched = createDispatchFetch(dispatcher, guardedFetch, maxResponseBytes);
  const direct = (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const url = typeof input === 'string' ? new URL(input) : input;
    if (!(url instanceof URL) || !hasBadPort(url)) return dispatched(url, init);
    return portRefusal(url).then(() => dispatched(url, init));
  };
  const exchanged = createDispatchExchange(dispatcher, maxResponseBytes);
  const exchange = (url: URL, init: ExchangeInit): Promise<Response | PlainAnswer> =>
    hasBadPort(url) ? portRefusal(url).then(() => exchanged(url, init)) : exchanged(url, init);
  return Object.assign(guardedFetch, { dispatcher: agent, maxResponseBytes, direct, exchange });
}
