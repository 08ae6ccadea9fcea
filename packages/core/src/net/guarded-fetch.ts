import { Request as UndiciRequest, fetch as undiciFetch, type Agent, type RequestInit as UndiciRequestInit } from 'undici';
import { FleetError } from '../errors/fleet-error.js';
import { checkOption, positiveInteger } from '../util/options.js';
import { badPortRefusal } from './bad-ports.js';
import { createGuardedAgent, isGuardedAgent, type GuardedAgentOptions } from './guarded-agent.js';

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
}

export interface GuardedFetchOptions extends GuardedAgentOptions {
  /**
   * An agent made by `createGuardedAgent` to share (one connection pool for HTTP and WebSocket). Any other
   * dispatcher is refused, since it would bypass the guard. When given, the agent options above must be absent.
   * @default a new guarded agent from the other options
   */
  agent?: Agent;
  /**
   * Largest response body read, in bytes: past it the body errors with `UPSTREAM_RESPONSE_TOO_LARGE` and the rest is
   * never read, so one upstream cannot fill the service's memory. @default 4194304 (4 MiB)
   */
  maxResponseBytes?: number;
}

export const DEFAULT_MAX_UPSTREAM_BYTES = 4 * 1024 * 1024;

const tooLarge = (limit: number) =>
  new FleetError('UPSTREAM_RESPONSE_TOO_LARGE', { message: `The upstream's answer is larger than ${limit} bytes (maxUpstreamBytes).`, details: { limit_bytes: limit } });

/**
 * The response with its body cut off at `limit` bytes: past them, reading it fails with the upstream code. A body
 * whose `Content-Length` is within the limit is left as it is (HTTP framing ends it there: undici never reads past the
 * declared length). Otherwise one pull-driven stream counts the chunks as the reader asks for them, rather than a
 * `pipeThrough` (two more streams and a pipe loop per response, on every tool call).
 */
function bounded(response: Response, limit: number): Response {
  if (response.body === null) return response;
  const length = response.headers.get('content-length');
  const declared = length === null ? Number.NaN : Number(length);
  if (declared > limit) {
    void response.body.cancel().catch(() => {});
    const refusal = tooLarge(limit);
    const failing = new ReadableStream<Uint8Array>({ start: (controller) => controller.error(refusal) });
    return new Response(failing, { status: response.status, statusText: response.statusText, headers: response.headers });
  }
  if (Number.isSafeInteger(declared) && declared >= 0) return response;
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
          controller.error(tooLarge(limit));
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
 * undici's `fetch` on a guarded agent, with `redirect: 'manual'` forced whatever the caller asks: a 3xx comes back
 * as the response it is (status and `Location` readable), so a public URL cannot redirect the library into a
 * private network. Refusals and network failures reject as undici's `TypeError('fetch failed')` with the cause
 * attached; `classifyUndiciError` turns them into upstream error codes.
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

  const guardedFetch = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    // As undici's own failures reject: `TypeError('fetch failed')` with the cause.
    const refused = await badPortRefusal(agent, new URL(typeof input === 'string' || input instanceof URL ? input : input.url));
    if (refused !== undefined) throw new TypeError('fetch failed', { cause: refused });
    const response = await undiciFetch(toUndiciInput(input), {
      ...(init as UndiciRequestInit | undefined),
      dispatcher: agent,
      redirect: 'manual',
    });
    // undici's Response is the same Fetch-standard class as the global one, from a newer copy of undici.
    return bounded(response as unknown as Response, maxResponseBytes);
  };
  return Object.assign(guardedFetch, { dispatcher: agent, maxResponseBytes });
}
