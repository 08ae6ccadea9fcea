import type { IncomingMessage, ServerResponse } from 'node:http';

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
 */
export function toWebRequest(req: IncomingMessage, res: ServerResponse, options: ToWebRequestOptions = {}): Request {
  const headers = new Headers();
  for (let i = 0; i < req.rawHeaders.length; i += 2) headers.append(req.rawHeaders[i] as string, req.rawHeaders[i + 1] as string);
  const aborted = new AbortController();
  res.once('close', () => {
    if (!res.writableFinished) aborted.abort();
  });
  const init: RequestInit & { duplex?: 'half' } = { method: req.method ?? 'GET', headers, signal: aborted.signal };
  if (init.method !== 'GET' && init.method !== 'HEAD') {
    const parsed = parsedBody(req as ParsedRequest, headers, options.exactBody === true);
    if (parsed !== undefined) init.body = parsed;
    else {
      const { body, drain } = bodyStream(req);
      res.once('finish', drain);
      init.body = body;
      init.duplex = 'half';
    }
  }
  return new Request(requestUrl(req, options.target ?? req.url ?? '/'), init);
}

/** The URL from the socket's protocol, the `Host` header and the target; a `Host` that makes no URL gives `localhost`. */
function requestUrl(req: IncomingMessage, target: string): string {
  const scheme = 'encrypted' in req.socket && req.socket.encrypted === true ? 'https' : 'http';
  const url = `${scheme}://${req.headers.host ?? 'localhost'}${target}`;
  return URL.canParse(url) ? url : `${scheme}://localhost${target}`;
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
