import {
  Client,
  SSEClientTransport,
  StreamableHTTPClientTransport,
  type AuthProvider,
  type ClientOptions,
  type FetchLike,
  type Transport,
} from '@modelcontextprotocol/client';
import type { Dispatcher } from 'undici';
import type { HttpServerConfig, ServerConfig, StdioServerConfig, WebSocketServerConfig } from '../registry/schema.js';
import { traceRequests } from '../trace/publish.js';
import { AnswerReplay, type McpExchange, withLeanRequests } from './lean-requests.js';
import { keepResultValidators } from './result-validators.js';
import { ERROR_HINTS } from '../errors/codes.js';
import { FleetError, type UpstreamError } from '../errors/fleet-error.js';
import { httpStatusOf, timeoutError, toUpstreamError } from './errors.js';
import { ClientCredentialsSource, MemoryTokenCache, stepUp, type TokenCache, withScopeStepUp } from './oauth.js';
import { WebSocketClientTransport } from './websocket-transport.js';

/**
 * The eras of MCP a server may speak: the 2025 revisions (`initialize`, sessions), 2026-07-28 (`server/discover`,
 * stateless), or `2024-11-05`, the legacy HTTP+SSE transport (a GET event stream, POSTs to the endpoint it names)
 * that an http server without Streamable HTTP still speaks, with `initialize`.
 */
export type McpEra = '2024-11-05' | '2025' | '2026-07-28';

/** Opens the MCP transport of a stdio server; `stdio/`'s process supervisor provides it. */
export type StdioTransportFactory = (config: StdioServerConfig, options: { signal: AbortSignal }) => Transport | Promise<Transport>;

/** What the MCP client layer reaches servers with. Every field is injected so the outgoing-connection guard can be. */
export interface McpClientDeps {
  /** fetch for Streamable HTTP, OAuth discovery and token requests (the guarded fetch of `net/`). Redirects are never followed whatever it does. @default globalThis.fetch */
  fetch?: FetchLike;
  /**
   * fetch for the Streamable HTTP transport's own requests (its POSTs, the GET stream, the DELETE): the guarded
   * fetch's `direct`, over undici's dispatcher without fetch's per-request objects. Redirects are never followed
   * whatever it does. @default fetch
   */
  mcpFetch?: FetchLike;
  /**
   * The lean road of the Streamable HTTP transport's hot requests (`withLeanRequests`): one POST over the same
   * dispatcher as `mcpFetch` (the guarded fetch's `exchange`), whose other answers the SDK's transport reads as it
   * reads `mcpFetch`'s. @default undefined: every request goes the SDK transport's way
   */
  mcpExchange?: McpExchange;
  /** The undici dispatcher WebSocket handshakes go through (the guarded Agent of `net/`). @default undici's global dispatcher */
  dispatcher?: Dispatcher;
  /** Where oauth2 tokens are kept between probes and calls; share one per fleet. @default a new MemoryTokenCache per call, so nothing is reused */
  tokens?: TokenCache;
  /** Opens stdio servers' transports. @default undefined: stdio servers cannot be reached */
  stdioTransport?: StdioTransportFactory;
  /** Clock of token expiry. @default Date.now */
  now?: () => number;
  /** Largest WebSocket message read (`maxUpstreamBytes`). @default 4194304 (4 MiB) */
  maxMessageBytes?: number;
}

export interface OpenTransportOptions {
  /** An http server: the legacy HTTP+SSE transport (2024-11-05) instead of Streamable HTTP. @default false */
  legacySse?: boolean;
  /** Aborting it closes the transport and fails what is in flight. @default undefined */
  signal?: AbortSignal;
  /** Bound of a WebSocket handshake. @default 30_000 */
  connectTimeoutMs?: number;
}

const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308]);

const redirected = (status?: number) =>
  new FleetError('UPSTREAM_PROTOCOL_ERROR', {
    message: `The server answered with a redirect${status === undefined ? '' : ` (HTTP ${status})`}; redirects are not followed.`,
  });

/** undici's rejection of a redirect under `redirect: 'error'`: `TypeError('fetch failed')`, cause `unexpected redirect`. */
function isRedirectRefusal(error: unknown): boolean {
  return error instanceof TypeError && error.cause instanceof Error && error.cause.message === 'unexpected redirect';
}

/**
 * `fetch` that never follows a redirect (docs/architecture.md "Outgoing connections"): it asks for `redirect: 'error'`,
 * which undici's fetch answers without a copy of the request (any other mode copies it, its body stream included, on
 * every request), and fails on a 3xx any fetch gives back all the same. The SDK would otherwise follow same-origin
 * redirects itself.
 */
export function withoutRedirects(fetch: FetchLike): FetchLike {
  return async (url, init) => {
    let response: Response;
    try {
      response = await fetch(url, { ...init, redirect: 'error' });
    } catch (error) {
      throw isRedirectRefusal(error) ? redirected() : error;
    }
    if (REDIRECT_STATUSES.has(response.status) || response.type === 'opaqueredirect') {
      await response.body?.cancel().catch(() => {});
      throw redirected(response.status);
    }
    return response;
  };
}

function tokenSource(config: HttpServerConfig | WebSocketServerConfig, deps: McpClientDeps, fetch: FetchLike) {
  const auth = config.authentication;
  if (auth?.type !== 'oauth2') return undefined;
  return new ClientCredentialsSource({
    endpoint: config.endpoint,
    credentials: auth,
    fetch,
    cache: deps.tokens ?? new MemoryTokenCache(),
    ...(deps.now === undefined ? {} : { now: deps.now }),
  });
}

/**
 * The MCP transport of an http or websocket server, with its authentication, not yet started:
 * the SDK's Streamable HTTP transport, or the WebSocket transport of this folder.
 *
 * - bearer: `Authorization: Bearer <token>` on every request (http: `requestInit.headers`; websocket: handshake headers).
 * - oauth2: a client-credentials token, cached until shortly before it expires and fetched again after a 401
 *   (http: as the transport's `authProvider`, which retries once after `onUnauthorized`; websocket: the handshake retries once),
 *   and with the challenged scope after a 403 `insufficient_scope`, once (http: per request; websocket: per handshake).
 */
export function openTransport(
  config: HttpServerConfig | WebSocketServerConfig,
  deps: McpClientDeps = {},
  options: OpenTransportOptions = {},
): Transport {
  const fetch = withoutRedirects(deps.fetch ?? globalThis.fetch);
  const auth = config.authentication;
  const bearer = auth?.type === 'bearer' ? { Authorization: `Bearer ${auth.token}` } : undefined;
  const source = tokenSource(config, deps, fetch);
  const url = new URL(config.endpoint);

  let transport: Transport;
  if (config.type === 'http') {
    const authProvider: AuthProvider | undefined =
      source === undefined
        ? undefined
        : {
            token: () => source.tokenOrChallenge(),
            onUnauthorized: async ({ response }) => source.challenged(response),
          };
    const requestInit: RequestInit = { redirect: 'error', ...(bearer === undefined ? {} : { headers: bearer }) };
    if (options.legacySse === true) {
      // The stream's GET gets the bearer through the fetch: the transport reads no requestInit for it.
      const streamFetch: FetchLike = bearer === undefined ? fetch : (input, init) => fetch(input, { ...init, headers: { ...headersOf(init?.headers), ...bearer } });
      return closeOnAbort(
        new SSEClientTransport(url, { fetch: streamFetch, requestInit, ...(authProvider === undefined ? {} : { authProvider }) }),
        options.signal,
      );
    }
    // With oauth2 every request is the SDK transport's (its token, refresh and step-up): no lean road.
    const lean = source === undefined && deps.mcpFetch !== undefined && deps.mcpExchange !== undefined ? new AnswerReplay() : undefined;
    const mcpFetch = deps.mcpFetch === undefined ? fetch : withoutRedirects(lean === undefined ? deps.mcpFetch : lean.fetch(deps.mcpFetch));
    const streamable = new StreamableHTTPClientTransport(url, {
      fetch: source === undefined ? mcpFetch : withScopeStepUp(mcpFetch, source),
      requestInit,
      ...(authProvider === undefined ? {} : { authProvider }),
      // The SDK's step-up needs an authorization-code provider; withScopeStepUp does it once per request for client
      // credentials, and a refusal after it is final.
      onInsufficientScope: 'throw',
    });
    if (lean !== undefined && deps.mcpExchange !== undefined) withLeanRequests(streamable, deps.mcpExchange, lean);
    transport = streamable;
  } else {
    transport = new WebSocketClientTransport(url, {
      headers: async () => (source === undefined ? (bearer ?? {}) : { Authorization: `Bearer ${await source.token()}` }),
      ...(source === undefined
        ? {}
        : {
            onUnauthorized: () => source.invalidate(),
            // One step-up, as over HTTP: a 403 insufficient_scope handshake is tried once more with a token for that scope.
            onForbidden: (challenge: string | undefined) =>
              challenge !== undefined && stepUp(source, new Response(null, { status: 403, headers: { 'www-authenticate': challenge } })),
          }),
      ...(deps.dispatcher === undefined ? {} : { dispatcher: deps.dispatcher }),
      ...(deps.maxMessageBytes === undefined ? {} : { maxMessageBytes: deps.maxMessageBytes }),
      ...(options.connectTimeoutMs === undefined ? {} : { connectTimeoutMs: options.connectTimeoutMs }),
      ...(options.signal === undefined ? {} : { signal: options.signal }),
    });
  }
  return closeOnAbort(transport, options.signal);
}

/** Aborting `signal` closes the transport (and fails what is in flight). */
function closeOnAbort(transport: Transport, signal: AbortSignal | undefined): Transport {
  if (signal !== undefined) {
    const close = () => void transport.close().catch(() => {});
    if (signal.aborted) close();
    else signal.addEventListener('abort', close, { once: true });
  }
  return transport;
}

function headersOf(headers: RequestInit['headers']): Record<string, string> {
  return Object.fromEntries(new Headers(headers).entries());
}

export const CLIENT_INFO = { name: 'mcp-fleet', version: '0.1.0' } as const;

export interface ConnectClientOptions {
  /** The era this server answered last time: tried first, the other afterwards. @default undefined: 2026-07-28 first, then 2025 */
  era?: McpEra;
  /** Bounds everything: when it aborts, the connection closes and the attempt fails with UPSTREAM_TIMEOUT. */
  signal: AbortSignal;
  /** The bound `signal` stands for, in ms: the time requests may take and the figure of the timeout message. */
  timeoutMs: number;
  /** The server's id, for the trace of each request (`mcp-fleet:mcp.client`). @default none (a probe of a configuration) */
  serverId?: string;
}

export interface ConnectedClient {
  client: Client;
  transport: Transport;
  era: McpEra;
}

/** How one connection attempt negotiates: the SDK's probe-and-fallback, one era straight away, or legacy HTTP+SSE. */
type Attempt = 'auto' | 'legacy' | 'modern' | 'sse';

/**
 * Statuses with which a legacy HTTP+SSE server (2024-11-05) answers a Streamable HTTP POST to its `/sse` endpoint:
 * the SDK documents falling back to the SSE transport on them.
 */
const NOT_STREAMABLE_HTTP = new Set([400, 404, 405]);

/**
 * A remembered era goes first; without one the SDK's `auto` negotiation runs (`server/discover`, then
 * `initialize` on a reply that is no MCP 2026 answer). Over a channel that is not HTTP, a server that stays
 * silent on `server/discover` may be a 2025 server that ignores unknown methods, so `initialize` follows.
 */
function plan(era: McpEra | undefined, kind: ServerConfig['type']): Attempt[] {
  if (era === '2024-11-05' && kind === 'http') return ['sse', 'auto'];
  if (era === '2025') return ['legacy', 'auto'];
  if (era === '2026-07-28') return ['modern', 'auto'];
  return kind === 'http' ? ['auto'] : ['auto', 'legacy'];
}

/** Whether the next attempt may still succeed where this one failed: an era mismatch, or a silent discover off HTTP. */
function worthAnotherAttempt(error: UpstreamError, kind: ServerConfig['type']): boolean {
  return error.code === 'UPSTREAM_PROTOCOL_ERROR' || (kind !== 'http' && error.code === 'UPSTREAM_TIMEOUT');
}

async function createTransport(config: ServerConfig, deps: McpClientDeps, signal: AbortSignal, remainingMs: number, legacySse: boolean): Promise<Transport> {
  if (config.type !== 'stdio') return openTransport(config, deps, { signal, connectTimeoutMs: remainingMs, legacySse });
  if (deps.stdioTransport === undefined) {
    throw new FleetError('UPSTREAM_UNREACHABLE', { message: 'stdio servers are not enabled on this service.', details: { hint: ERROR_HINTS.stdioDisabled } });
  }
  return deps.stdioTransport(config, { signal });
}

/**
 * The fleet answers no input request (elicitation, sampling, roots: there is no user or model behind it), so an
 * `input_required` result is not fulfilled; the SDK fails it, and `toUpstreamError` says so (UPSTREAM_INPUT_REQUIRED).
 */
const NO_INPUT: ClientOptions = { inputRequired: { autoFulfill: false } };

function clientOptions(attempt: Attempt, kind: ServerConfig['type'], remainingMs: number): ClientOptions {
  if (attempt === 'modern') return { ...NO_INPUT, versionNegotiation: { mode: { pin: '2026-07-28' } } };
  if (attempt === 'legacy' || attempt === 'sse') return NO_INPUT;
  // Off HTTP a discover that goes unanswered is followed by `initialize`, so it may use only half the time.
  return { ...NO_INPUT, versionNegotiation: { mode: 'auto', ...(kind === 'http' ? {} : { probe: { timeoutMs: Math.max(1, Math.floor(remainingMs / 2)) } }) } };
}

/**
 * A result without `resultType` is complete: 2026-07-28 says "the client MUST treat the absent field as complete",
 * while the SDK's codec of that revision refuses it as invalid. The field is added to every JSON-RPC result as it
 * arrives, before the SDK reads it; the 2025 codec drops the field again, so earlier eras see no change.
 */
export function completeByDefault(transport: Transport): Transport {
  let handler: Transport['onmessage'];
  Object.defineProperty(transport, 'onmessage', {
    configurable: true,
    enumerable: true,
    get: () => handler,
    set: (next: Transport['onmessage']) => {
      handler = next === undefined ? undefined : (message, extra) => next(withResultType(message), extra);
    },
  });
  return transport;
}

function withResultType<T>(message: T): T {
  if (typeof message !== 'object' || message === null || !('result' in message) || 'method' in message) return message;
  const { result } = message as { result: unknown };
  if (typeof result !== 'object' || result === null || Array.isArray(result) || 'resultType' in result) return message;
  return { ...message, result: { ...result, resultType: 'complete' } };
}

/** Rejects when `signal` aborts, whatever `promise` does; `promise`'s own later rejection is absorbed. */
function bounded<T>(promise: Promise<T>, signal: AbortSignal, onAbort: () => Error): Promise<T> {
  promise.catch(() => {});
  if (signal.aborted) return Promise.reject(onAbort());
  return new Promise<T>((resolve, reject) => {
    const abort = () => reject(onAbort());
    signal.addEventListener('abort', abort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener('abort', abort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', abort);
        reject(error);
      },
    );
  });
}

/**
 * An MCP client connected to the server, with the era it answered in: 2026-07-28 (`server/discover` answered,
 * nothing else sent) or 2025 (`initialize` answered and `notifications/initialized` sent). The SDK's `Client`
 * does the negotiation; this picks the order of attempts and bounds them. Throws an upstream `FleetError`.
 * The caller closes the client with `closeClient`.
 */
export async function connectClient(config: ServerConfig, deps: McpClientDeps, options: ConnectClientOptions): Promise<ConnectedClient> {
  const { signal, timeoutMs } = options;
  const deadline = performance.now() + timeoutMs;
  const remaining = () => Math.max(1, Math.round(deadline - performance.now()));
  const timedOut = () => timeoutError(timeoutMs);
  const attempts = plan(options.era, config.type);
  // Iterated while it grows: a failed Streamable HTTP attempt may add the legacy SSE one.
  let lastError: UpstreamError = timedOut();

  for (const [index, attempt] of attempts.entries()) {
    if (signal.aborted) throw timedOut();
    let client: Client | undefined;
    let transport: Transport | undefined;
    try {
      const creating = createTransport(config, deps, signal, remaining(), attempt === 'sse');
      // A transport that arrives after the deadline (a slow stdio spawn) is closed, not leaked.
      creating
        .then((late) => {
          if (signal.aborted) void late.close().catch(() => {});
        })
        .catch(() => {});
      transport = completeByDefault(await bounded(creating, signal, timedOut));
      const connected = new Client(CLIENT_INFO, clientOptions(attempt, config.type, remaining()));
      client = connected;
      const opened = transport;
      await bounded(
        connected.connect(opened, { timeout: remaining(), signal, ...(attempt === 'legacy' || attempt === 'sse' ? { prior: { kind: 'legacy' } } : {}) }),
        signal,
        timedOut,
      );
      const era = attempt === 'sse' ? '2024-11-05' : connected.getProtocolEra() === 'modern' ? '2026-07-28' : '2025';
      keepResultValidators(connected);
      traceRequests(connected, config, era, options.serverId);
      return { client: connected, transport: opened, era };
    } catch (error) {
      await closeClient(client, transport, 0);
      lastError = signal.aborted ? timedOut() : toUpstreamError(error, timeoutMs);
      // A POST the endpoint has no handler for: a legacy HTTP+SSE server, tried once the others failed.
      const status = httpStatusOf(error);
      if (config.type === 'http' && !attempts.includes('sse') && status !== undefined && NOT_STREAMABLE_HTTP.has(status)) attempts.push('sse');
      const last = index === attempts.length - 1;
      if (last || !(worthAnotherAttempt(lastError, config.type) || attempts[index + 1] === 'sse')) throw lastError;
    }
  }
  throw lastError;
}

/**
 * Ends a connection quietly: a 2025 Streamable HTTP session is deleted (best effort, waiting at most `waitMs`),
 * then the client and its transport close, which aborts anything still in flight.
 */
export async function closeClient(client: Client | undefined, transport: Transport | undefined, waitMs = 1000): Promise<void> {
  if (waitMs > 0 && transport instanceof StreamableHTTPClientTransport && transport.sessionId !== undefined) {
    let timer: NodeJS.Timeout | undefined;
    const waited = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, waitMs);
    });
    await Promise.race([transport.terminateSession().catch(() => {}), waited]);
    clearTimeout(timer);
  }
  if (client !== undefined) await client.close().catch(() => {});
  else await transport?.close().catch(() => {});
}

