import type { IncomingMessage, ServerResponse } from 'node:http';
import { delegate } from '../util/stand-in.js';

export interface ToWebRequestOptions {
  /**
   * The request target (path and query) to put in the URL. Express rewrites `req.url` below a mount point: pass
   * `req.originalUrl`. @default req.url
   */
  target?: string;
  /**
   * Throw a `TypeError` when another middleware already parsed the body into anything but a `Buffer`: for readers
   * that need the exact bytes, such as a webhook signature check. @default false (a parsed body is re-serialised)
   */
  exactBody?: boolean;
}

/** The request as a body parser (body-parser, `express.json()`…) may have left it. */
type ParsedRequest = IncomingMessage & { body?: unknown; _body?: boolean };

/**
 * The Node request as a Web `Request`, for a handler on the Fetch API:
 * - headers from `rawHeaders`, repeated ones kept;
 * - the body streamed with backpressure; or, when a body parser already read the stream, what it left on `req.body`:
 *   a `Buffer` or a string as it is, any other value re-serialised as JSON (docs/configuration.md);
 * - `signal` aborts when the client goes away before `res` is finished.
 * Whatever the handler leaves unread is drained once `res` finishes (or at once when the handler cancels the body,
 * at its size limit): an answer given before the body was read (401, 413) leaves a kept-alive connection usable.
 *
 * Most API requests are answered from the method, the URL and a header or two: building undici's `Headers`,
 * `AbortController` and `Request` for each was most of what the Express adapter cost beyond Express. So the result is
 * a stand-in (`instanceof Request` holds) whose `method`, `url` and `headers.get`/`has` read the Node request; the
 * real `Request`, with the body and the abort wiring, is made the first time anything else is touched (`body`,
 * `signal`, `text()`, `clone()`…), and answers from then on. Every member gives what the real `Request` gives; one
 * difference remains: `new Request(result)` needs a real `Request`, which `result.clone()` is.
 * A request whose body a parser already read, with a method undici would fold or refuse, or with a URL `new Request`
 * refuses, gets the real `Request` at once, as before (docs/performance.md, "Express: the request without a Request").
 */
export function toWebRequest(req: IncomingMessage, res: ServerResponse, options: ToWebRequestOptions = {}): Request {
  const method = req.method ?? 'GET';
  const url = requestUrl(req, options.target ?? req.url ?? '/');
  const exact = options.exactBody === true;
  if (typeof url !== 'string' && LIGHT_METHODS.has(method) && !bodyRead(req as ParsedRequest, method)) {
    return new NodeRequest(req, res, method, url.href, exact) as unknown as Request;
  }
  return webRequest(req, res, method, typeof url === 'string' ? url : url.href, headersOf(req.rawHeaders), exact);
}

/** Methods undici keeps as they are (no case folding, no refusal): the stand-in may report them itself. */
const LIGHT_METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);

/** Whether a parser read the body before us (then the headers change with it: see `parsedBody`). */
function bodyRead(req: ParsedRequest, method: string): boolean {
  return method !== 'GET' && method !== 'HEAD' && (req.readableEnded || req._body === true);
}

function headersOf(rawHeaders: string[]): Headers {
  const headers = new Headers();
  for (let i = 0; i < rawHeaders.length; i += 2) headers.append(rawHeaders[i] as string, rawHeaders[i + 1] as string);
  return headers;
}

/** The real `Request`: what `toWebRequest` always built before it had a stand-in. */
function webRequest(req: IncomingMessage, res: ServerResponse, method: string, url: string, headers: Headers, exact: boolean): Request {
  const aborted = new AbortController();
  // Made late, the request may find the client already gone.
  if (res.closed && !res.writableFinished) aborted.abort();
  else {
    res.once('close', () => {
      if (!res.writableFinished) aborted.abort();
    });
  }
  const init: RequestInit & { duplex?: 'half' } = { method, headers, signal: aborted.signal };
  if (method !== 'GET' && method !== 'HEAD') {
    const parsed = parsedBody(req as ParsedRequest, headers, exact);
    if (parsed !== undefined) init.body = parsed;
    else {
      const { body, drain } = bodyStream(req);
      res.once('finish', drain);
      init.body = body;
      init.duplex = 'half';
    }
  }
  return new Request(url, init);
}
const REAL = Symbol('mcp-fleet.realRequest');
const NATIVE = Symbol('mcp-fleet.nativeHeaders');
const ADOPT = Symbol('mcp-fleet.adoptHeaders');

/** The stand-in `toWebRequest` gives: see there. */
class NodeRequest {
  readonly #req: IncomingMessage;
  readonly #res: ServerResponse;
  readonly #method: string;
  readonly #url: string;
  readonly #exact: boolean;
  #headers: NodeHeaders | undefined;
  #real: Request | undefined;

  constructor(req: IncomingMessage, res: ServerResponse, method: string, url: string, exact: boolean) {
    this.#req = req;
    this.#res = res;
    this.#method = method;
    this.#url = url;
    this.#exact = exact;
  }

  get method(): string {
    return this.#method;
  }

  get url(): string {
    return this.#url;
  }

  get headers(): Headers {
    this.#headers ??= new NodeHeaders(this.#req.rawHeaders);
    return this.#headers as unknown as Headers;
  }

  [REAL](): Request {
    if (this.#real === undefined) {
      // Headers the handler changed on the stand-in go into the real request, which owns them from then on.
      const headers = this.#headers === undefined ? headersOf(this.#req.rawHeaders) : this.#headers[NATIVE]();
      this.#real = webRequest(this.#req, this.#res, this.#method, this.#url, headers, this.#exact);
      this.#headers?.[ADOPT](this.#real.headers);
    }
    return this.#real;
  }
}

/**
 * `Request#headers` read from `rawHeaders` as `Headers` would join them (`, `, or `; ` for `Cookie`), trimmed as it
 * trims them; anything but `get`/`has`, and any name or value `Headers` would refuse, goes to a real `Headers`.
 */
class NodeHeaders {
  readonly #raw: string[];
  #native: Headers | undefined;

  constructor(raw: string[]) {
    this.#raw = raw;
  }

  get(name: string): string | null {
    if (this.#native === undefined) {
      const value = lookup(this.#raw, name);
      if (value !== undefined) return value;
    }
    return this[NATIVE]().get(name);
  }

  has(name: string): boolean {
    if (this.#native === undefined) {
      const value = lookup(this.#raw, name);
      if (value !== undefined) return value !== null;
    }
    return this[NATIVE]().has(name);
  }

  forEach(callback: (value: string, name: string, parent: Headers) => void, thisArg?: unknown): void {
    this[NATIVE]().forEach((value, name) => callback.call(thisArg, value, name, this as unknown as Headers));
  }

  [NATIVE](): Headers {
    this.#native ??= headersOf(this.#raw);
    return this.#native;
  }

  [ADOPT](headers: Headers): void {
    this.#native = headers;
  }
}

const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
const NOT_IN_VALUE = /[\0\r\n]/;

/** The joined value of `name`, `null` when absent, `undefined` to leave the answer (or the `TypeError`) to `Headers`. */
function lookup(raw: string[], name: string): string | null | undefined {
  if (typeof name !== 'string' || !TOKEN.test(name)) return undefined;
  const lower = name.toLowerCase();
  let joined: string | null = null;
  for (let i = 0; i < raw.length; i += 2) {
    const rawName = raw[i] as string;
    if (rawName.length !== lower.length || rawName.toLowerCase() !== lower) continue;
    const value = trimHttpWhitespace(raw[i + 1] as string);
    if (NOT_IN_VALUE.test(value)) return undefined;
    joined = joined === null ? value : `${joined}${lower === 'cookie' ? '; ' : ', '}${value}`;
  }
  return joined;
}

function isHttpWhitespace(code: number): boolean {
  return code === 0x20 || code === 0x09 || code === 0x0a || code === 0x0d;
}

function trimHttpWhitespace(value: string): string {
  let start = 0;
  let end = value.length;
  while (start < end && isHttpWhitespace(value.charCodeAt(start))) start++;
  while (end > start && isHttpWhitespace(value.charCodeAt(end - 1))) end--;
  return start === 0 && end === value.length ? value : value.slice(start, end);
}

delegate(NodeRequest.prototype, Request.prototype, (self: NodeRequest) => self[REAL]());
delegate(NodeHeaders.prototype, Headers.prototype, (self: NodeHeaders) => self[NATIVE]());

/**
 * The URL from the socket's protocol, the `Host` header and the target; a `Host` that makes no URL gives `localhost`.
 * Parsed, as `new Request` would parse it, when it parses: a string left for `new Request` to refuse otherwise.
 * The common case costs no parse: see `plainHref`.
 */
function requestUrl(req: IncomingMessage, target: string): { href: string } | string {
  const scheme = 'encrypted' in req.socket && req.socket.encrypted === true ? 'https' : 'http';
  const host = req.headers.host ?? 'localhost';
  const href = plainHref(scheme, host, target);
  if (href !== undefined) return { href };
  try {
    const url = new URL(`${scheme}://${host}${target}`);
    return url.username === '' && url.password === '' ? url : url.href;
  } catch {
    return `${scheme}://localhost${target}`;
  }
}

/** A `Host` of a name, an IPv4 or a bracketed IPv6 address and a port: nothing that could end the authority early. */
const PLAIN_HOST = /^(?:[A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\])(?::\d{1,5})?$/;
/**
 * A target the URL parser leaves as it is: none of the bytes it percent-encodes in a path or a special URL's query
 * (space, quotes, `<>`, backtick, braces, non-ASCII…), no backslash (a `/` to it), no fragment, no dot segment, plain
 * or encoded (`%2e`); any other `%` it keeps as it is.
 */
const PLAIN_TARGET = /^\/[A-Za-z0-9\-._~!$&()*+,;=:@/?%]*$/;
const DOT_SEGMENT = /\/\.\.?(?:[/?]|$)|%2e/i;
/** Scheme and `Host` → the origin as the URL parser writes it (lower case, default port dropped); bounded, as clients pick the `Host`. */
const origins = new Map<string, string | null>();

/**
 * `new URL(scheme://host + target).href` without parsing the target, when the target is plain (`PLAIN_TARGET`):
 * then the href is the origin as the parser writes it, which depends on the host alone, followed by the target.
 * `undefined` for anything else, and for a host with credentials or that makes no URL: the caller parses.
 */
function plainHref(scheme: string, host: string, target: string): string | undefined {
  if (!PLAIN_TARGET.test(target) || DOT_SEGMENT.test(target)) return undefined;
  const key = `${scheme}://${host}`;
  let origin = origins.get(key);
  if (origin === undefined) {
    origin = null;
    if (PLAIN_HOST.test(host)) {
      try {
        const url = new URL(`${key}/`);
        origin = url.href.slice(0, -1);
      } catch {
        // No URL: the caller's parse fails the same way and takes `localhost`.
      }
    }
    if (origins.size >= 256) origins.clear();
    origins.set(key, origin);
  }
  return origin === null ? undefined : `${origin}${target}`;
}

/**
 * The body a parser that ran before us left, as bytes, or `undefined` when the stream is still unread. Consumption
 * is told by the stream itself (`readableEnded`), whatever parser read it; body-parser 1's `_body` marker counts too.
 * A `Buffer` (`express.raw()`) and a string (`express.text()`) pass as they are; any other value (`express.json()`,
 * `express.urlencoded()`) is re-serialised as JSON. The original `Content-Type` stays, so that the handler's
 * media-type rule still applies (a form re-serialised is still a form: 415); only an `application/json` one loses
 * its parameters, the bytes now being UTF-8. `Content-Length` becomes that of the bytes passed on.
 */
function parsedBody(req: ParsedRequest, headers: Headers, exact: boolean): Uint8Array | undefined {
  if (!req.readableEnded && req._body !== true) return undefined;
  const { body } = req;
  if (exact && !Buffer.isBuffer(body)) {
    throw new TypeError(
      'mcp-fleet: this needs the exact bytes of the request body, which another middleware has already parsed: mount it before express.json(), or after an express.raw() whose type matches the request',
    );
  }
  if (body === undefined && (headers.has('transfer-encoding') || Number(headers.get('content-length') ?? 0) > 0)) {
    throw new TypeError('mcp-fleet: another middleware read the request body and left nothing on req.body: mount mcp-fleet before it');
  }
  let bytes: Uint8Array;
  if (Buffer.isBuffer(body)) bytes = new Uint8Array(body.buffer, body.byteOffset, body.byteLength);
  else if (typeof body === 'string') bytes = Buffer.from(body, 'utf8');
  else {
    bytes = Buffer.from(body === undefined ? '' : JSON.stringify(body), 'utf8');
    const media = headers.get('content-type')?.split(';', 1)[0]?.trim().toLowerCase();
    if (media === 'application/json') headers.set('content-type', 'application/json');
  }
  // The parser inflated any Content-Encoding, and the bytes may differ from those the client counted.
  headers.delete('content-encoding');
  headers.delete('transfer-encoding');
  headers.set('content-length', String(bytes.byteLength));
  return bytes;
}

/**
 * The request body as a Web stream. Unlike `Readable.toWeb`, cancelling it (the handler stops reading at its body
 * limit) does not destroy the request, which would reset the connection; and `drain` drops whatever was left
 * unread, so a kept-alive connection stays usable, as Node does for bodies nobody reads.
 */
function bodyStream(req: IncomingMessage): { body: ReadableStream<Uint8Array>; drain: () => void } {
  let draining = false;
  const drain = () => {
    if (draining) return;
    draining = true;
    req.resume();
  };
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      req.on('data', (chunk: Buffer) => {
        if (draining) return;
        controller.enqueue(new Uint8Array(chunk)); // a copy: the chunk's memory may be pooled
        if ((controller.desiredSize ?? 0) <= 0) req.pause();
      });
      req.once('end', () => {
        if (!draining) controller.close();
      });
      req.on('error', (error) => {
        if (!draining) controller.error(error);
      });
    },
    pull() {
      if (!draining) req.resume();
    },
    cancel() {
      drain();
    },
  });
  return { body, drain };
}
