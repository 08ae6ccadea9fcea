import {
  classifyInboundRequest,
  PROTOCOL_VERSION_META_KEY,
  ProtocolError,
  ProtocolErrorCode,
  type Server,
  SUPPORTED_PROTOCOL_VERSIONS,
} from '@modelcontextprotocol/server';
import { isPlainObject } from '../validation/zod-issues.js';
import { answer, type EndpointHandlers, type EndpointScope, type Served } from './server.js';
import { answerTail, type ToolsAnswers } from './tools-answers.js';

/**
 * The lean road of a 2025 session (docs/performance.md "mcp-lean"): a POST of one `tools/call` or `tools/list` that
 * streams nothing before its answer is served by the endpoint's own handlers (`endpointHandlers`, the ones the SDK's
 * `Server` dispatches to) and answered as one JSON body, without the SDK's transport (a `Request` read, a stream per
 * POST, SSE framing read back) or its per-message schema validation of a request already known well formed. What
 * the SDK decides stays the SDK's: the session's wire codec (its negotiated era) validates and encodes the result
 * and maps the error codes; the `Server`'s own map of running requests holds the call, so `notifications/cancelled`
 * (on another POST, through the SDK) and the session's close abort it as they abort a call of the SDK's road.
 * Anything the lean road is not sure of goes the SDK's road.
 */

/** One JSON-RPC request the lean road takes (`hotRequest`). */
export interface HotRequest {
  jsonrpc: '2.0';
  id: string | number;
  method: 'tools/call' | 'tools/list';
  params?: Record<string, unknown>;
}

const isPlain = isPlainObject;
const only = (object: Record<string, unknown>, keys: readonly string[]) => Object.keys(object).every((key) => keys.includes(key));

/**
 * The POST body as a request the lean road takes, or `undefined` for the SDK's road: one request (not a batch) of
 * `tools/call` or `tools/list`, of a shape the SDK's 2025 schemas accept as it is (nothing they would refuse or
 * rewrite: no unknown member, no `cursor`, no `_meta.progressToken` — its progress streams — and no wire-only
 * `io.modelcontextprotocol/` material, which the SDK lifts out of `_meta`).
 */
export function hotRequest(body: unknown): HotRequest | undefined {
  if (!isPlain(body) || body['jsonrpc'] !== '2.0' || !only(body, ['jsonrpc', 'id', 'method', 'params'])) return undefined;
  const { id, method, params } = body;
  if (typeof id !== 'string' && !Number.isSafeInteger(id)) return undefined;
  if (params !== undefined && !isPlain(params)) return undefined;
  const meta = params?.['_meta'];
  if (meta !== undefined && (!isPlain(meta) || 'progressToken' in meta || Object.keys(meta).some((key) => key.startsWith('io.modelcontextprotocol/')))) {
    return undefined;
  }
  if (method === 'tools/list') return params === undefined || only(params, ['_meta']) ? (body as unknown as HotRequest) : undefined;
  if (method !== 'tools/call' || params === undefined || typeof params['name'] !== 'string' || !only(params, ['name', 'arguments', '_meta'])) return undefined;
  return params['arguments'] === undefined || isPlain(params['arguments']) ? (body as unknown as HotRequest) : undefined;
}

/**
 * The `MCP-Protocol-Version` values (`null`: none) with which a hot request is served by the SDK's 2025 transport as
 * it is (one it supports), and with which the SDK's own routing (`classifyInboundRequest`, what `isLegacyRequest`
 * runs) classifies such a request legacy: asked of the SDK once, here, for a `tools/call` and a `tools/list` of each.
 * A hot request carries no envelope claim (`hotRequest` refuses every `io.modelcontextprotocol/` key of `_meta`, and
 * the claim is one); were the SDK's claim key another, no version is listed and every POST goes the SDK's road.
 */
const LEAN_VERSIONS: ReadonlySet<string | null> = new Set(
  PROTOCOL_VERSION_META_KEY.startsWith('io.modelcontextprotocol/')
    ? [null, ...SUPPORTED_PROTOCOL_VERSIONS].filter((version) =>
        [
          { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'a__b', arguments: {}, _meta: {} } },
          { jsonrpc: '2.0', id: 1, method: 'tools/list' },
        ].every(
          (body) => classifyInboundRequest({ httpMethod: 'POST', ...(version === null ? {} : { protocolVersionHeader: version }), body }).kind === 'legacy',
        ),
      )
    : [],
);

/**
 * Whether the headers of a POST on a live session pass the SDK transport's checks as they are: its `Accept` takes
 * both JSON and SSE (else the SDK answers 406), and its `MCP-Protocol-Version`, if any, is one the SDK supports
 * (else 400) and one its routing classifies legacy (`LEAN_VERSIONS`). A POST that fails them goes the SDK's road,
 * which answers the refusal.
 */
export function hotHeaders(headers: Headers): boolean {
  const accept = headers.get('accept');
  if (accept === null || !accept.includes('application/json') || !accept.includes('text/event-stream')) return false;
  return LEAN_VERSIONS.has(headers.get('mcp-protocol-version'));
}

/**
 * The POST as a request the lean road takes (`hotRequest` of its body, with `hotHeaders`), or `undefined`. The SDK's
 * routing classifies every such POST legacy (`LEAN_VERSIONS`: no envelope claim, no modern version header), so the
 * endpoint routes it to its 2025 sessions without asking `isLegacyRequest`, whose zod predicates (three of four
 * failing, each building its issues) were a per-POST cost of the hot road.
 */
export function hotPost(body: unknown, headers: Headers): HotRequest | undefined {
  const hot = hotRequest(body);
  return hot !== undefined && hotHeaders(headers) ? hot : undefined;
}

type Validated = { ok: true; value: unknown } | { ok: false; reason: string; message?: string };

/** What the lean road uses of the SDK's `Server` of a session: members its own road uses, read, never replaced. */
interface SdkServerParts {
  /** The wire codec of the session's negotiated era. */
  codec: {
    validateResult(method: string, raw: unknown): Validated;
    encodeResult(method: string, result: unknown, serverInfo: unknown): unknown;
    encodeErrorCode(code: number): number;
  };
  serverInfo: unknown;
  /** The running requests by id: what `notifications/cancelled` and the session's close abort (their `abort` alone). */
  running: Map<unknown, Pick<AbortController, 'abort'>>;
}

/** The parts of the SDK's `Server` the lean road needs, or `undefined` (another SDK version): then the SDK's road. */
export function partsOf(server: Server): SdkServerParts | undefined {
  const inner = server as unknown as {
    _negotiatedWireCodec?: () => Partial<SdkServerParts['codec']> | undefined;
    _outboundServerInfo?: () => unknown;
    _requestHandlerAbortControllers?: unknown;
  };
  if (typeof inner._negotiatedWireCodec !== 'function' || !(inner._requestHandlerAbortControllers instanceof Map)) return undefined;
  const codec = inner._negotiatedWireCodec();
  if (typeof codec?.validateResult !== 'function' || typeof codec.encodeResult !== 'function' || typeof codec.encodeErrorCode !== 'function') return undefined;
  return {
    codec: codec as SdkServerParts['codec'],
    serverInfo: typeof inner._outboundServerInfo === 'function' ? inner._outboundServerInfo() : undefined,
    running: inner._requestHandlerAbortControllers as SdkServerParts['running'],
  };
}

/** What the lean road needs of a live 2025 session. */
export interface LeanSession {
  id: string;
  server: Server;
  /** Aborted when the session closes in this process. */
  closed: AbortSignal;
}

/** The SDK's `normalizeContentlessToolResult`: a result without `content` (and of no other family) gets `content: []`. */
function withContent(result: unknown): unknown {
  if (!isPlain(result) || result['content'] !== undefined || ['task', 'inputRequests', 'requestState'].some((key) => key in result)) return result;
  return { ...result, content: [] };
}

/**
 * A lean request's place in the SDK's map of running requests: the SDK only calls its `abort` (`notifications/cancelled`,
 * the session's close), and its signal is made when a handler asks for it (a `tools/call` does; a `tools/list` never
 * does, and then no `AbortController` is made for it).
 */
class Running {
  aborted = false;
  private reason: unknown;
  private controller: AbortController | undefined;

  abort(reason?: unknown): void {
    if (this.aborted) return;
    this.aborted = true;
    this.reason = reason;
    this.controller?.abort(reason);
  }

  get signal(): AbortSignal {
    if (this.controller === undefined) {
      this.controller = new AbortController();
      if (this.aborted) this.controller.abort(this.reason);
    }
    return this.controller.signal;
  }
}

/** What the lean road asks of the HTTP request a hot request came in. */
export interface LeanExchange {
  /** The HTTP request's signal (aborted when the client goes), asked only when a cancelled request waits for it: an adapter may make it on demand. */
  signalOf: () => AbortSignal;
  /** The headers every answer to the request carries (`McpExchange.answerHeaders`), put in the answer as it is made. */
  headers: Record<string, string>;
}

/**
 * Serves a hot request of a live session; `undefined` when it must go the SDK's road after all (the SDK's `Server` is
 * not one the lean road knows). The answer is the JSON-RPC message the SDK's road would put in its one SSE event, as
 * `application/json` (Streamable HTTP lets the server choose; the client accepted both).
 */
export async function serveLean(
  handlers: EndpointHandlers,
  answers: ToolsAnswers,
  session: LeanSession,
  scope: EndpointScope,
  message: HotRequest,
  { signalOf, headers: given }: LeanExchange,
): Promise<Response | undefined> {
  const parts = partsOf(session.server);
  if (parts === undefined) return undefined;
  const { codec, serverInfo, running } = parts;
  const { id } = message;
  const controller = new Running();
  running.set(id, controller);
  const served: Served = {
    scope,
    id,
    sessionId: session.id,
    _meta: message.params?.['_meta'] as Record<string, unknown> | undefined,
    get signal() {
      return controller.signal;
    },
    // Progress is only sent when asked for (`_meta.progressToken`), and such a request goes the SDK's road.
    notify: () => Promise.resolve(),
  };
  let body: string | Buffer[];
  try {
    if (message.method === 'tools/list') {
      const result = await answer('tools/list', message as never, served, handlers['tools/list']);
      // The list's message as made once for its view, when the era's encoding leaves the list as it is (asked once
      // per list), then the request's tail: the same bytes `JSON.stringify` of the message gives, sent as two pieces
      // (`bytesResponse`), never copied into one.
      const kept = answers.messageOf(result.tools, codec, (tools) => {
        const listed = { tools };
        return codec.encodeResult('tools/list', listed, serverInfo) === listed;
      });
      body =
        kept === undefined
          ? JSON.stringify({ result: codec.encodeResult('tools/list', result, serverInfo), jsonrpc: '2.0', id })
          : [kept, answerTail(id)];
    } else {
      // Validated inside the trace, as the SDK's `Server` validates a `tools/call` result inside its handler.
      const result = await answer('tools/call', message as never, served, (request, s) =>
        handlers['tools/call'](request, s).then((raw) => {
          const validated = codec.validateResult('tools/call', withContent(raw));
          if (validated.ok) return validated.value as never;
          throw validated.reason === 'not-in-era'
            ? new ProtocolError(ProtocolErrorCode.InternalError, 'No wire schema for tools/call in the resolved era')
            : new ProtocolError(ProtocolErrorCode.InvalidParams, `Invalid tools/call result: ${validated.message ?? ''}`);
        }),
      );
      body = JSON.stringify({ result: codec.encodeResult('tools/call', result, serverInfo), jsonrpc: '2.0', id });
    }
  } catch (error) {
    const thrown = (error ?? {}) as { code?: unknown; message?: unknown; data?: unknown };
    const code = Number.isSafeInteger(thrown.code) ? (thrown.code as number) : ProtocolErrorCode.InternalError;
    const failure = { code: codec.encodeErrorCode(code), message: thrown.message ?? 'Internal error', ...(thrown.data === undefined ? {} : { data: thrown.data }) };
    body = JSON.stringify({ jsonrpc: '2.0', id, error: failure });
  } finally {
    if (running.get(id) === controller) running.delete(id);
  }
  // Cancelled, or the session closed: the SDK's road sends no answer and leaves the stream open until the client
  // goes or the session closes; so does this, then ends an empty stream.
  if (controller.aborted) {
    await gone(signalOf(), session.closed);
    return new Response(null, { status: 200, headers: { ...given, 'content-type': 'text/event-stream', 'mcp-session-id': session.id } });
  }
  const headers = { ...given, 'content-type': 'application/json', 'mcp-session-id': session.id };
  return typeof body === 'string' ? new Response(body, { status: 200, headers }) : bytesResponse(body, headers);
}

/**
 * From this many bytes on, an answer kept in pieces is sent as its pieces rather than copied into one body
 * (`bytesResponse`). Measured (docs/performance.md "mcp-list", 7c): a 1.9 MB list copied per answer cost the fleet
 * about half its CPU per list (the copy, and the scavenges its fresh megabytes set off); a 75 KB one costs a few
 * microseconds to copy, less than the two more socket writes of a body stream (the HTTP layers flush the headers
 * apart, then write each piece).
 */
export const PIECES_FROM = 256 * 1024;

/**
 * An answer of bytes kept in pieces (a list's kept message and the request's tail). Below `PIECES_FROM` bytes, one
 * body of their copy (one write of headers and body); from it on, a body stream of the pieces as they are with their
 * `Content-Length`, so that the HTTP layer writes each piece (the kept one by reference: no per-answer copy or
 * allocation of its size) and frames nothing (no chunked encoding). The bytes on the wire are the same either way.
 */
function bytesResponse(pieces: Buffer[], headers: Record<string, string>): Response {
  let length = 0;
  for (const piece of pieces) length += piece.length;
  if (length < PIECES_FROM) return new Response(Buffer.concat(pieces, length), { status: 200, headers });
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      for (const piece of pieces) controller.enqueue(piece);
      controller.close();
    },
  });
  return new Response(body, { status: 200, headers: { ...headers, 'content-length': String(length) } });
}

/** Resolves when either signal aborts. */
function gone(a: AbortSignal, b: AbortSignal): Promise<void> {
  const either = AbortSignal.any([a, b]);
  return either.aborted ? Promise.resolve() : new Promise((resolve) => either.addEventListener('abort', () => resolve(), { once: true }));
}
