import { isJSONRPCResponse } from '@modelcontextprotocol/client';
import type { Dispatcher } from 'undici';
import { FleetError } from '../errors/fleet-error.js';
import { declaredTooLarge } from './response-bound.js';

/** The standard `fetch`, which `createDispatchFetch` hands every request it does not serve itself. */
export type Fetch = (input: string | URL | Request, init?: RequestInit) => Promise<Response>;

/** What undici's fetch sends as `User-Agent` when there is none: the same bytes reach the upstream either way. */
export const USER_AGENT = 'undici';

/**
 * An answer's headers as `[name, value]` pairs, in the order they came: the `Response` builds its `Headers` from
 * them once (the same `append` of each pair). Filling a `Headers` here first had the `Response` copy it into another:
 * two fills and a sort per upstream answer.
 */
type HeaderPairs = [string, string][];

/** Statuses whose answer has no body (the Fetch standard's "null body status"): the `Response` is built with none. */
const NULL_BODY = new Set([101, 103, 204, 205, 304]);

/** A `Content-Type`'s media type without its parameters, lower case (`application/json`, `text/event-stream`). */
function essence(contentType: string | undefined): string | undefined {
  if (contentType === undefined) return undefined;
  const semi = contentType.indexOf(';');
  return (semi === -1 ? contentType : contentType.slice(0, semi)).trim().toLowerCase();
}

function firstValue(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

const LF = 0x0a;
const CR = 0x0d;
const BLANK_LINE = Buffer.from('\n\n');
const EVENT_MESSAGE = /^event: ?message$/;
const DATA = /^data: ?/;

/**
 * What the bytes of an event stream held so far are: `'wait'` while no event is complete (nothing a reader of the
 * stream could act on yet: an event is dispatched at its blank line), the `data` of the stream's one event when they
 * are exactly one complete event of type `message` (or none) with one `data` line holding one JSON-RPC response, and
 * nothing else; `undefined` for anything else (another event, a comment, an `id` or `retry` field, CR line ends,
 * several `data` lines, a notification or request, text that is not JSON).
 */
function oneResponseEvent(held: Buffer): string | 'wait' | undefined {
  if (held.includes(CR) || held[0] === LF) return undefined;
  const end = held.indexOf(BLANK_LINE);
  if (end === -1) return 'wait';
  if (end + 2 !== held.length) return undefined;
  const lines = held.subarray(0, end).toString('utf8').split('\n');
  if (lines.length === 2 && EVENT_MESSAGE.test(lines[0] as string)) lines.shift();
  const line = lines.length === 1 ? (lines[0] as string) : '';
  const prefix = DATA.exec(line);
  if (prefix === null || line.length === prefix[0].length) return undefined;
  const data = line.slice(prefix[0].length);
  try {
    return isJSONRPCResponse(JSON.parse(data)) ? data : undefined;
  } catch {
    return undefined;
  }
}

/** Whether `fetch` would send this request as it is: a URL, a method, plain headers, a text body, a signal. */
function isPlain(input: string | URL | Request, init: RequestInit | undefined): input is string | URL {
  if (typeof input !== 'string' && !(input instanceof URL)) return false;
  if (init === undefined) return true;
  const { body, headers } = init;
  if (body !== undefined && body !== null && typeof body !== 'string') return false;
  return headers === undefined || headers instanceof Headers || (typeof headers === 'object' && !Array.isArray(headers));
}

/** The request's headers as undici's flat `[name, value, …]`, with the `User-Agent` fetch would add. */
function flatHeaders(headers: RequestInit['headers']): string[] {
  const flat: string[] = [];
  let agent = false;
  const add = (name: string, value: string) => {
    if (!agent && name.toLowerCase() === 'user-agent') agent = true;
    flat.push(name, value);
  };
  if (headers instanceof Headers) headers.forEach((value, name) => add(name, value));
  else if (headers !== undefined) for (const [name, value] of Object.entries(headers as Record<string, string>)) add(name, value);
  if (!agent) flat.push('user-agent', USER_AGENT);
  return flat;
}

/** How undici's fetch rejects on a failure before the answer: `TypeError('fetch failed')` with the cause. */
const fetchFailed = (cause: unknown) => new TypeError('fetch failed', { cause });

/** How undici's fetch fails a body cut off midway: `TypeError('terminated')` with the cause. */
const terminated = (cause: unknown) => new TypeError('terminated', { cause });

const abortReason = (signal: AbortSignal): unknown => signal.reason ?? new DOMException('This operation was aborted', 'AbortError');

/**
 * A `fetch` straight over an undici dispatcher, for the requests of the MCP client's Streamable HTTP transport
 * (docs/performance.md, "upstream-client"): no `Request`, no request body stream, no fetch controller per request.
 * undici's own `fetch` builds all of those, and they cost the fleet's client about as much CPU again as the rest of
 * a tool call's exchange. It answers a standard `Response`, as `fetch` would:
 *
 * - a plain request only (a string or `URL`, headers as `Headers` or a record, a text body or none); anything else
 *   goes to `fallback`, the standard fetch on the same dispatcher;
 * - an `application/json` answer is read whole before the `Response` is given (the client reads it whole at once),
 *   any other is streamed as it arrives (the chunks the reader has not taken yet are held for it, never more than
 *   the bound below);
 * - an event stream answering a POST that holds one event, a JSON-RPC response, and ends is answered as
 *   `application/json` with that event's data (docs/performance.md, "mcp-hop"): the MCP client's transport then
 *   hands on the very message its SSE reading would have, without a decoder and a parser stream per call. Its bytes
 *   are held only until its first event is complete (before which a reader could act on nothing), and once that
 *   event is the response, until the answer ends or the next turn of the event loop, whichever comes first; anything
 *   else (more events, a notification first, an `id`, a failure) gives the reader the stream as it came, from its
 *   first byte;
 * - no redirect is followed (a 3xx is the answer itself), no compression is asked for, and an answer compressed
 *   anyway fails as a protocol error: nothing decodes it;
 * - failures reject as undici's fetch rejects (`TypeError('fetch failed')` with the cause before the answer,
 *   `TypeError('terminated')` on its body) and an abort with the signal's reason, so `classifyUndiciError` reads
 *   them alike;
 * - the answer's bound: a `Content-Length` over `maxResponseBytes` fails at once; the bytes of any other are counted
 *   by the dispatcher's own bound (`createGuardedFetch`), which cuts the answer off past it.
 */
export function createDispatchFetch(dispatcher: Dispatcher, fallback: Fetch, maxResponseBytes: number): Fetch {
  return (input, init) => {
    if (!isPlain(input, init)) return fallback(input, init);
    const url = typeof input === 'string' ? new URL(input) : input;
    if (url.protocol !== 'http:' && url.protocol !== 'https:') return fallback(input, init);
    const signal = init?.signal;
    const request = { method: init?.method, headers: flatHeaders(init?.headers), body: init?.body, signals: signal === undefined || signal === null ? NO_SIGNALS : [signal] };
    return dispatched(dispatcher, maxResponseBytes, url, request, false) as Promise<Response>;
  };
}

/**
 * The body of a `200` answer to a POST that is one JSON text: an `application/json` answer's, or the data of an event
 * stream of one response event (what the dispatch fetch turns into JSON). Anything else is answered as a `Response`.
 */
export interface PlainAnswer {
  readonly plain: string;
}

/** What `createDispatchExchange` is given: a POST's headers already flat (`[name, value, …]`), its text body, its signals. */
export interface ExchangeInit {
  headers: string[];
  body: string;
  /**
   * The exchange ends when any of them aborts, with the reason of the first that did: what a fetch given
   * `AbortSignal.any(signals)` does, without a signal made per request (and kept by each source until collected).
   */
  signals: readonly AbortSignal[];
}

const NO_SIGNALS: readonly AbortSignal[] = [];

/**
 * One POST of the MCP client's lean requests (`mcp/lean-requests.ts`) over the dispatcher: the dispatch fetch's very
 * road (the same bounds, refusals, failures and turning of a one-event stream), except that a `200` answer which is
 * one JSON text is given as that text (`PlainAnswer`) without a `Response` around it; any other answer is the
 * `Response` the dispatch fetch would have given. The headers go as they are given: the caller's flat list, its
 * `User-Agent` included.
 */
export function createDispatchExchange(dispatcher: Dispatcher, maxResponseBytes: number): (url: URL, init: ExchangeInit) => Promise<Response | PlainAnswer> {
  return (url, init) => dispatched(dispatcher, maxResponseBytes, url, { method: 'POST', headers: init.headers, body: init.body, signals: init.signals }, true);
}

interface DispatchInit {
  method?: string | undefined;
  headers: string[];
  body?: RequestInit['body'];
  /** Any of them aborting ends the request, with its reason (`ExchangeInit.signals`). */
  signals: readonly AbortSignal[];
}

/** The one road of both: the request over the dispatcher, its answer a `Response` (or, with `plainAnswers`, a plain `200` as its text). */
function dispatched(dispatcher: Dispatcher, maxResponseBytes: number, url: URL, init: DispatchInit, plainAnswers: boolean): Promise<Response | PlainAnswer> {
  const { signals } = init;
  for (const signal of signals) if (signal.aborted) return Promise.reject(abortReason(signal));
  return new Promise<Response | PlainAnswer>((resolve, reject) => {
    let controller: Dispatcher.DispatchController | undefined;
    let stream: ReadableStreamDefaultController<Uint8Array> | undefined;
    let whole: { status: number; statusText: string; headers: HeaderPairs; chunks: Buffer[] } | undefined;
    /** An event stream held while it may turn out one response event (`oneResponseEvent`). */
    let held:
      | { started: Dispatcher.DispatchController; status: number; statusText: string; headers: HeaderPairs; chunks: Buffer[]; data?: string; next?: NodeJS.Immediate }
      | undefined;
    let answered = false;
    let headed = false;
    let cancelled = false;
    let aborted: unknown;
    /** A failure of a released stream, given to its reader once it has read what was held (`pull`). */
    let failAfterHeld: { reason: unknown } | undefined;
    const onAbort = (event: Event) => {
      // The first signal to abort gives the reason, as it would to `AbortSignal.any`.
      if (aborted !== undefined) return;
      aborted = abortReason(event.target as AbortSignal);
      controller?.abort(aborted as Error);
    };
    for (const signal of signals) signal.addEventListener('abort', onAbort, { once: true });
    const done = () => {
      for (const signal of signals) signal.removeEventListener('abort', onAbort);
    };
    const answer = (response: Response | PlainAnswer) => {
      answered = true;
      resolve(response);
    };
    /** Answers the body as a stream, as it arrives. */
    const streamed = (started: Dispatcher.DispatchController, status: number, statusText: string, headers: HeaderPairs) => {
      const body = new ReadableStream<Uint8Array>({
        start: (opened) => {
          stream = opened;
        },
        pull: (opened) => {
          if (failAfterHeld !== undefined) opened.error(failAfterHeld.reason);
        },
        cancel: (reason) => {
          cancelled = true;
          done();
          started.abort(reason instanceof Error ? reason : new Error('The body was cancelled.'));
        },
      });
      answer(new Response(body, { status, statusText, headers }));
    };
    /** The held event stream given to its reader as it came: what was held first, then the rest as it arrives. */
    const release = () => {
      if (held === undefined) return;
      const { started, status, statusText, headers, chunks, next } = held;
      held = undefined;
      if (next !== undefined) clearImmediate(next);
      streamed(started, status, statusText, headers);
      for (const chunk of chunks) stream?.enqueue(chunk);
    };

    dispatcher.dispatch(
      {
        origin: url.origin,
        path: `${url.pathname}${url.search}`,
        method: init.method ?? 'GET',
        headers: init.headers,
        body: (init.body as string | null | undefined) ?? null,
      },
      {
        onRequestStart: (started) => {
          controller = started;
          if (aborted !== undefined) started.abort(aborted as Error);
        },
        onResponseStart: (started, status, raw, message) => {
          const statusText = message ?? '';
          headed = true;
          const headers: HeaderPairs = [];
          for (const name in raw) {
            const value = raw[name];
            if (Array.isArray(value)) for (const item of value) headers.push([name, item]);
            else if (value !== undefined) headers.push([name, value]);
          }
          const encoding = firstValue(raw['content-encoding'])?.trim().toLowerCase();
          if (encoding !== undefined && encoding !== '' && encoding !== 'identity') {
            started.abort(new FleetError('UPSTREAM_PROTOCOL_ERROR', { message: `The server compressed its answer (content-encoding: ${encoding}) though no compression was asked for.` }));
            return;
          }
          const tooLarge = declaredTooLarge(firstValue(raw['content-length']) ?? null, maxResponseBytes);
          if (tooLarge !== undefined) {
            started.abort(tooLarge);
            return;
          }
          if (status < 200 || status > 599) {
            started.abort(new FleetError('UPSTREAM_PROTOCOL_ERROR', { message: `The server answered with HTTP status ${status}, which is no final answer.` }));
            return;
          }
          if (NULL_BODY.has(status) || init.method === 'HEAD' || essence(firstValue(raw['content-type'])) === 'application/json') {
            whole = { status, statusText, headers, chunks: [] };
            return;
          }
          if (status === 200 && init.method === 'POST' && essence(firstValue(raw['content-type'])) === 'text/event-stream') {
            held = { started, status, statusText, headers, chunks: [] };
            return;
          }
          streamed(started, status, statusText, headers);
        },
        onResponseData: (_started, chunk) => {
          if (whole !== undefined) {
            whole.chunks.push(chunk);
            return;
          }
          if (held !== undefined) {
            held.chunks.push(chunk);
            // Anything after the response event, or a CR line end: the stream as it came.
            if (held.data !== undefined || chunk.includes(CR)) return release();
            // No line ended in this chunk: still no event complete.
            if (!chunk.includes(LF)) return;
            const one = oneResponseEvent(held.chunks.length === 1 ? chunk : Buffer.concat(held.chunks));
            if (one === 'wait') return;
            if (one === undefined) return release();
            held.data = one;
            // The response is complete: its answer's end is waited for this turn only, then it goes as a stream.
            held.next = setImmediate(release);
            return;
          }
          if (stream === undefined || cancelled) return;
          // Queued without pausing the connection: the dispatcher's bound cuts any answer off past maxResponseBytes,
          // so what waits here for the reader never exceeds it.
          stream.enqueue(chunk);
        },
        onResponseEnd: () => {
          done();
          if (whole !== undefined) {
            const { status, statusText, headers, chunks } = whole;
            const body = NULL_BODY.has(status) ? null : chunks.length === 1 ? chunks[0] : Buffer.concat(chunks);
            if (plainAnswers && status === 200 && body !== undefined && body !== null) answer({ plain: body.toString('utf8') });
            else answer(new Response(body ?? null, { status, statusText, headers }));
            return;
          }
          if (held?.data !== undefined) {
            const { status, statusText, headers, data, next } = held;
            held = undefined;
            clearImmediate(next);
            if (plainAnswers) return answer({ plain: data });
            const turned: HeaderPairs = headers.filter(([name]) => name.toLowerCase() !== 'content-type');
            turned.push(['content-type', 'application/json']);
            answer(new Response(data, { status, statusText, headers: turned }));
            return;
          }
          release();
          stream?.close();
        },
        onResponseError: (_started, error) => {
          done();
          // After the answer's head, a failure is the body's, as fetch fails a body it cut off midway.
          const reason = aborted ?? (headed ? terminated(error) : fetchFailed(error));
          // A held event stream fails as it would have failed its reader: given as it came, read, then failed.
          const wasHeld = held !== undefined;
          release();
          if (!answered) reject(reason);
          // A body the reader cancelled is not failed again.
          else if (cancelled) return;
          else if (wasHeld && (stream?.desiredSize ?? 1) <= 0) failAfterHeld = { reason };
          else stream?.error(reason);
        },
      },
    );
  });
}
