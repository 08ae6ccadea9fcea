import { parseJSONRPCMessage, type FetchLike, type JSONRPCMessage, type StreamableHTTPClientTransport, type TransportSendOptions } from '@modelcontextprotocol/client';
import { type ExchangeInit, type PlainAnswer, USER_AGENT } from '../net/dispatch-fetch.js';

/** One POST over the guarded dispatcher whose plain `200` JSON answer comes as its text (`GuardedFetch.exchange`). */
export type McpExchange = (url: URL, init: ExchangeInit) => Promise<Response | PlainAnswer>;

/**
 * The members of the SDK's `StreamableHTTPClientTransport` (`@modelcontextprotocol/client` 2.4.0) the lean requests
 * read: where it is sending, its session and protocol version, its authentication, its lifetime's signal, and the two
 * functions that make a POST's headers. Were one of them gone (another SDK), the transport keeps its own `send` alone.
 */
interface TransportInternals {
  _url: URL;
  _sessionId?: string;
  _protocolVersion?: string;
  _authProvider?: unknown;
  _abortController?: AbortController;
  _commonHeaders(): Promise<Headers>;
  _applyBodyDerivedHeaders(headers: { set(name: string, value: string): void }, message: JSONRPCMessage): void;
}

function hasInternals(transport: object): boolean {
  const inner = transport as Partial<TransportInternals>;
  return inner._url instanceof URL && typeof inner._commonHeaders === 'function' && typeof inner._applyBodyDerivedHeaders === 'function';
}

/** A session's POST headers as made by the SDK transport, with the session id and protocol version they were made for. */
interface KeptHeaders {
  sessionId: string | undefined;
  protocolVersion: string | undefined;
  headers: Map<string, string>;
  flat: string[];
}

/** The requests a tool call and a listing make, whose answer is one JSON-RPC response: the lean road's. */
const LEAN_METHODS = new Set(['tools/call', 'tools/list', 'ping']);

/**
 * Answers handed back to the SDK transport's own `send`: the transport's fetch, asked for a body an answer was kept
 * for, is given that answer instead of sending the request again. Keyed by the body's text, which is the
 * `JSON.stringify` of the very message the transport stringifies again (its JSON-RPC id makes it unique among the
 * requests in flight on one transport).
 */
export class AnswerReplay {
  private readonly kept = new Map<string, Promise<Response>>();

  /** The transport's fetch: the kept answer for its body, or `fetch`. */
  fetch(fetch: FetchLike): FetchLike {
    return (url, init) => {
      const body = init?.body;
      if (this.kept.size > 0 && typeof body === 'string') {
        const answer = this.kept.get(body);
        if (answer !== undefined) {
          this.kept.delete(body);
          return answer;
        }
      }
      return fetch(url, init);
    };
  }

  /** Runs `send` with `answer` kept for `body` (and forgets it however `send` ends). */
  async handBack(body: string, answer: Promise<Response>, send: () => Promise<void>): Promise<void> {
    answer.catch(() => {});
    this.kept.set(body, answer);
    try {
      await send();
    } finally {
      this.kept.delete(body);
    }
  }
}

/**
 * Gives a Streamable HTTP transport a lean road for the hot requests (docs/performance.md, "mcp-lean2"): a
 * `tools/call`, `tools/list` or `ping` of an established connection is sent by one `exchange` over the guarded
 * dispatcher, with the very headers and body the SDK's `send` would send, and a `200` answer of one JSON-RPC message
 * (JSON, or an event stream of one response event) is handed to the client as the SDK's JSON road hands it: each
 * message through the SDK's `parseJSONRPCMessage`, then `onmessage`. The SDK's `send` builds a `Headers` per
 * request (and awaits it), a signal combining the request's and the transport's, a standard `Response` and its `json()`;
 * here the headers of a session are made once by the SDK's own `_commonHeaders` and kept while its session id and
 * protocol version stay, and the answer is text.
 *
 * Everything else is the SDK's: any other answer (another status, a stream of progress before the result, an
 * error, a text that does not parse) or a failure is handed to the SDK's own `send` as the answer its fetch gets
 * (`AnswerReplay`), which then does what it does today — the 401/403 handling, a 404's `SdkHttpError` (a lost
 * session), 202, the event stream's reading with its progress, `onerror`. Requests with authentication of a
 * provider (oauth2: its token and refresh), a resumption token, extra headers (`Mcp-Param-*` mirroring) or another
 * method, notifications and batches go to the SDK's `send` straight away. Cancellation is the SDK's: the `Protocol`
 * sends `notifications/cancelled` (a notification: the SDK's road) and aborts a 2026-07-28 request's own signal,
 * which ends this exchange as it would have ended the SDK's fetch.
 */
export function withLeanRequests(transport: StreamableHTTPClientTransport, exchange: McpExchange, replay: AnswerReplay): void {
  if (!hasInternals(transport)) return;
  const inner = transport as unknown as TransportInternals;
  const sdkSend = transport.send.bind(transport);
  /** The headers every POST of the session carries, kept with the session id and protocol version they were made for. */
  let kept: KeptHeaders | undefined;

  const makeSessionHeaders = async (sessionId: string | undefined, protocolVersion: string | undefined): Promise<KeptHeaders> => {
    const common = await inner._commonHeaders();
    // As the SDK's send sets them on every POST, after the body's own headers (which never name these two).
    common.set('content-type', 'application/json');
    const accept = [...(common.get('accept')?.split(',').map((type) => type.trim().toLowerCase()) ?? []), 'application/json', 'text/event-stream'];
    common.set('accept', [...new Set(accept)].join(', '));
    const headers = new Map<string, string>();
    common.forEach((value, name) => headers.set(name, value));
    const made = { sessionId, protocolVersion, headers, flat: flat(headers) };
    kept = made;
    return made;
  };

  /** The session's headers: those kept while its session id and protocol version stay (no promise), else made anew. */
  const sessionHeaders = (): KeptHeaders | Promise<KeptHeaders> => {
    const { _sessionId: sessionId, _protocolVersion: protocolVersion } = inner;
    if (kept !== undefined && kept.sessionId === sessionId && kept.protocolVersion === protocolVersion) return kept;
    return makeSessionHeaders(sessionId, protocolVersion);
  };

  /** The POST's headers: the session's, with those the SDK derives from the message's envelope (2026-07-28). */
  const withDerived = (session: KeptHeaders, message: JSONRPCMessage): string[] => {
    let derived: Map<string, string> | undefined;
    inner._applyBodyDerivedHeaders(
      {
        set: (name, value) => {
          derived ??= new Map(session.headers);
          derived.set(name.toLowerCase(), value);
        },
      },
      message,
    );
    return derived === undefined ? session.flat : flat(derived);
  };

  const leanSend = async (message: JSONRPCMessage, options: TransportSendOptions | undefined): Promise<void> => {
    const body = JSON.stringify(message);
    const handBack = (answer: Promise<Response>) => replay.handBack(body, answer, () => sdkSend(message, options));
    // The request's signal and the transport's: either ends the exchange, as the SDK's send combines them.
    const transportSignal = inner._abortController?.signal;
    const requestSignal = options?.requestSignal;
    const signals = requestSignal === undefined ? (transportSignal === undefined ? [] : [transportSignal]) : transportSignal === undefined ? [requestSignal] : [transportSignal, requestSignal];
    let answer: Response | PlainAnswer;
    try {
      const session = sessionHeaders();
      const headers = withDerived(session instanceof Promise ? await session : session, message);
      answer = await exchange(inner._url, { headers, body, signals });
    } catch (error) {
      return handBack(Promise.reject(error));
    }
    if (answer instanceof Response) return handBack(Promise.resolve(answer));
    let messages: JSONRPCMessage[];
    try {
      const data: unknown = JSON.parse(answer.plain);
      messages = Array.isArray(data) ? data.map((item) => parseJSONRPCMessage(item)) : [parseJSONRPCMessage(data)];
    } catch {
      return handBack(Promise.resolve(new Response(answer.plain, { status: 200, headers: { 'content-type': 'application/json' } })));
    }
    for (const each of messages) transport.onmessage?.(each);
  };

  transport.send = (message, options) =>
    !Array.isArray(message) && isLeanRequest(message, options) && inner._authProvider === undefined && inner._abortController !== undefined
      ? leanSend(message, options)
      : sdkSend(message, options);
}

/** One request of a lean method, with nothing the SDK's send would do besides a plain POST. */
function isLeanRequest(message: JSONRPCMessage, options: TransportSendOptions | undefined): boolean {
  if (!('method' in message) || !('id' in message) || !LEAN_METHODS.has(message.method)) return false;
  return options?.resumptionToken === undefined && (options as { headers?: unknown } | undefined)?.headers === undefined;
}

/** Headers as undici's flat `[name, value, …]` in the order a `Headers` iterates them (sorted), with fetch's `User-Agent`. */
function flat(headers: Map<string, string>): string[] {
  const names = [...headers.keys()].sort();
  const pairs: string[] = [];
  for (const name of names) pairs.push(name, headers.get(name) as string);
  if (!headers.has('user-agent')) pairs.push('user-agent', USER_AGENT);
  return pairs;
}
