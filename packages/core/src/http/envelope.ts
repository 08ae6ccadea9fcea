import { newId } from '../util/ids.js';
import { joinJson, JsonList } from '../util/json-text.js';
import { delegate } from '../util/stand-in.js';
import type { ErrorCode } from '../errors/codes.js';
import type { Pagination } from '../util/pagination.js';
import type { ErrorBody, Meta } from './envelope-schemas.js';

export type { ErrorBody, Meta } from './envelope-schemas.js';

export interface SuccessBody<T> {
  success: true;
  data: T;
  pagination?: Pagination;
  meta: Meta;
}

/** What an error answer is made of: a `FleetError`, and the webhook receiver's `WebhookVerificationError` alike. */
export interface AnsweredError {
  code: ErrorCode;
  status: number;
  message: string;
  details: Record<string, unknown>;
  /** Extra response headers the error needs (`Allow`, `WWW-Authenticate`…). */
  headers?: Readonly<Record<string, string>>;
}

const REQUEST_ID = /^[A-Za-z0-9_-]{1,64}$/;

/** The request id of an answer: the client's `X-Request-Id` when it has the allowed form, else a new `req_…`. */
export function requestIdOf(headers: Headers): string {
  const incoming = headers.get('x-request-id');
  return incoming !== null && REQUEST_ID.test(incoming) ? incoming : newId('request');
}

/**
 * Marks a `Response` the envelope made with the JSON text of its body (`Symbol.for`, so that every copy of core agrees
 * on it). `writeWebResponse` sends that text in one write with a `Content-Length` instead of streaming the body
 * chunk by chunk: the body of a `Response` cannot change, so the text is the body for as long as it is unread.
 */
export const BODY_TEXT = Symbol.for('mcp-fleet.bodyText');

/** The JSON text an envelope `Response` was made with, while its body is unread; `undefined` for any other. */
export function envelopeText(response: Response): string | undefined {
  const text = (response as unknown as Record<symbol, unknown>)[BODY_TEXT];
  return typeof text === 'string' && !response.bodyUsed ? text : undefined;
}

/** `Symbol.for`, as `BODY_TEXT`: the plain headers of an `EnvelopeResponse` nobody has turned into a real one. */
const PLAIN_HEADERS = Symbol.for('mcp-fleet.plainHeaders');
const REAL = Symbol('mcp-fleet.realResponse');

/**
 * The headers of an envelope answer made for an adapter that writes answers itself (`light`), as a plain object,
 * while nothing has asked for the real `Response`: `writeWebResponse` sends them as they are. `undefined` otherwise.
 */
export function envelopeHeaders(response: Response): Readonly<Record<string, string>> | undefined {
  const plain = (response as unknown as { [PLAIN_HEADERS]?: () => Record<string, string> | undefined })[PLAIN_HEADERS];
  return typeof plain === 'function' ? plain.call(response) : undefined;
}

/**
 * A `Response` (`instanceof` holds) for an adapter that writes the answer itself: its status, headers and text are
 * kept as they are, and undici's `Response`, which sets up a body stream for the text (a tenth of the CPU of an
 * Express GET), is made only when something reads more than that; every member of `Response` then answers from it.
 */
class EnvelopeResponse {
  readonly #status: number;
  readonly #headers: Record<string, string>;
  readonly #text: string;
  #real: Response | undefined;

  constructor(status: number, headers: Record<string, string>, text: string) {
    this.#status = status;
    this.#headers = headers;
    this.#text = text;
  }

  get status(): number {
    return this.#status;
  }

  get bodyUsed(): boolean {
    return this.#real?.bodyUsed ?? false;
  }

  get [BODY_TEXT](): string {
    return this.#text;
  }

  [PLAIN_HEADERS](): Record<string, string> | undefined {
    // Once the real one exists its headers may have been changed: they are the answer's then.
    return this.#real === undefined ? this.#headers : undefined;
  }

  [REAL](): Response {
    this.#real ??= new PlatformResponse(this.#text, { status: this.#status, headers: this.#headers });
    return this.#real;
  }
}

/** The runtime's own `Response`, even where a framework replaces the global one later (`@hono/node-server`). */
const PlatformResponse = globalThis.Response;
delegate(EnvelopeResponse.prototype, PlatformResponse.prototype, (self: EnvelopeResponse) => self[REAL]());

/**
 * The envelope's text. A `JsonList` of data is joined from its items' texts, which `JSON.stringify` would have
 * written the same way (same keys, same order: `success`, `data`, `pagination`, `meta`).
 */
function bodyText(body: SuccessBody<unknown> | ErrorBody): string {
  if (!body.success || !(body.data instanceof JsonList)) return JSON.stringify(body);
  let text = `{"success":true,"data":[${joinJson(body.data.items)}]`;
  if (body.pagination !== undefined) text += `,"pagination":${JSON.stringify(body.pagination)}`;
  return `${text},"meta":${JSON.stringify(body.meta)}}`;
}

/**
 * `light`: the adapter writes the answer itself with `writeWebResponse` (Express), which takes an envelope's text and
 * plain headers as they are: an `EnvelopeResponse`. Otherwise a `Response` of the global class, which a framework
 * may have made light itself (`@hono/node-server`).
 */
function json(status: number, body: SuccessBody<unknown> | ErrorBody, meta: Meta, extra: Record<string, string> | undefined, light: boolean): Response {
  const text = bodyText(body);
  // The base headers first, then the answer's own, then the request id: an object literal, not three spreads.
  const headers: Record<string, string> = {
    'content-type': 'application/json; charset=utf-8',
    // Responses describe an account's servers; no shared cache may keep them.
    'cache-control': 'no-store',
    'x-content-type-options': 'nosniff',
  };
  if (extra !== undefined) for (const name in extra) headers[name] = extra[name] as string;
  headers['x-request-id'] = meta.request_id;
  if (light) return new EnvelopeResponse(status, headers, text) as unknown as Response;
  const response = new Response(text, { status, headers });
  // Set, not `Object.defineProperty`: a define is a call into the runtime on every answer, where a set of the same
  // key on the same class of object is a cached store. Only `envelopeText` reads it.
  (response as unknown as Record<symbol, unknown>)[BODY_TEXT] = text;
  return response;
}

export function successResponse<T>(status: number, data: T, meta: Meta, page?: Pagination, headers?: Record<string, string>, light = false): Response {
  const body: SuccessBody<T> = page === undefined ? { success: true, data, meta } : { success: true, data, pagination: page, meta };
  return json(status, body, meta, headers, light);
}

export function errorBody(error: AnsweredError, meta: Meta): ErrorBody {
  // An INVALID_REQUEST's details are `invalidRequest`'s; the HTTP suite checks every answer against the schema.
  return { success: false, error: { code: error.code, message: error.message, details: error.details } as ErrorBody['error'], meta };
}

export function errorResponse(error: AnsweredError, meta: Meta, headers?: Record<string, string>, light = false): Response {
  return json(error.status, errorBody(error, meta), meta, { ...error.headers, ...headers }, light);
}
