import { parseJSONRPCMessage, type JSONRPCMessage, type Transport } from '@modelcontextprotocol/client';
import { Agent, WebSocket, type Dispatcher } from 'undici';
import type { UpstreamErrorCode } from '../errors/codes.js';
import { FleetError, type UpstreamError } from '../errors/fleet-error.js';
import type { Duplex } from 'node:stream';
import { badPortRefusal } from '../net/bad-ports.js';
import { DEFAULT_MAX_UPSTREAM_BYTES } from '../net/guarded-fetch.js';
import { networkFailure } from './errors.js';

const upstream = (code: UpstreamErrorCode, message: string, cause?: unknown) =>
  new FleetError(code, cause === undefined ? { message } : { message, cause });

/** The WebSocket subprotocol of MCP (docs/http-api.md "Health"). */
export const MCP_SUBPROTOCOL = 'mcp';

export interface WebSocketClientTransportOptions {
  /**
   * Handshake headers (e.g. `Authorization`), read at each connection attempt so a refreshed token is used.
   * undici's `WebSocket` sends them with the upgrade request (its `headers` option, an undici extension).
   * @default {}
   */
  headers?: () => Promise<Record<string, string>> | Record<string, string>;
  /**
   * Called once when the handshake is answered 401; the connection is then tried once more (a token source
   * drops its token here so the retry fetches a new one). Without it a 401 fails at once.
   * @default undefined
   */
  onUnauthorized?: () => Promise<void> | void;
  /**
   * Called once when the handshake is answered 403, with its `WWW-Authenticate`; when it resolves `true` (a
   * token with the scope an `insufficient_scope` challenge names was made ready) the connection is tried once more.
   * Without it a 403 fails at once. @default undefined
   */
  onForbidden?: (wwwAuthenticate: string | undefined) => Promise<boolean> | boolean;
  /** The undici dispatcher the handshake goes through: the guarded Agent of `net/`. @default one undici 7 Agent shared by these transports */
  dispatcher?: Dispatcher;
  /** How long the handshake may take. @default 30_000 */
  connectTimeoutMs?: number;
  /** Aborting it fails a pending handshake and closes an open connection. @default undefined */
  signal?: AbortSignal;
  /**
   * Largest message read from the server, in bytes (`maxUpstreamBytes`): a frame, or the fragments of one message,
   * announcing more fails the connection with `UPSTREAM_RESPONSE_TOO_LARGE` before its payload is buffered.
   * @default 4194304 (4 MiB)
   */
  maxMessageBytes?: number;
}

let defaultAgent: Agent | undefined;

/**
 * Not undici's global dispatcher: once Node's bundled fetch has run, that global is Node's own (older) undici,
 * whose Agent cannot take the handler the observer below passes.
 */
function defaultDispatcher(): Dispatcher {
  defaultAgent ??= new Agent();
  return defaultAgent;
}

/** What the handshake's HTTP exchange showed: undici's WebSocket reports neither the status nor the cause. */
interface HandshakeObservation {
  status?: number;
  /** The `WWW-Authenticate` of a refused handshake. */
  challenge?: string;
  error?: unknown;
  /** Set when the server announced a message larger than the bound (the connection is then destroyed). */
  tooLarge?: boolean;
}

/**
 * Reads the headers of the server's frames as they stream by (RFC 6455 §5.2: 2 bytes, then a 16- or 64-bit length,
 * then a mask key if masked) and says, from a data frame's header alone, when a message (a frame, or the fragments
 * of one) announces more than `limit` bytes: before undici's parser would buffer its payload. Control frames
 * (opcode ≥ 8) are at most 125 bytes and do not count.
 */
export function frameBound(limit: number): (chunk: Buffer) => number {
  const header: number[] = [];
  let payloadLeft = 0;
  let message = 0;
  /** Where in the chunk the header being read started (negative: in an earlier chunk). */
  let headerAt = 0;
  return (chunk) => {
    let at = 0;
    while (at < chunk.length) {
      if (payloadLeft > 0) {
        const take = Math.min(payloadLeft, chunk.length - at);
        payloadLeft -= take;
        at += take;
        continue;
      }
      if (header.length === 0) headerAt = at;
      header.push(chunk[at] as number);
      at += 1;
      if (header.length < 2) continue;
      const short = (header[1] as number) & 0x7f;
      const needed = 2 + (short === 126 ? 2 : short === 127 ? 8 : 0) + ((header[1] as number) & 0x80 ? 4 : 0);
      if (header.length < needed) continue;
      let length = short;
      if (short === 126) length = ((header[2] as number) << 8) | (header[3] as number);
      if (short === 127) length = header.slice(2, 10).reduce((n, byte) => n * 256 + byte, 0);
      const fin = ((header[0] as number) & 0x80) !== 0;
      const opcode = (header[0] as number) & 0x0f;
      header.length = 0;
      payloadLeft = length;
      if (opcode >= 8) continue;
      message = opcode === 0 ? message + length : length;
      if (message > limit) return Math.max(0, headerAt);
      if (fin) message = 0;
    }
    headerAt = -1;
    return -1;
  };
}

/**
 * Bounds what undici's WebSocket reads from `socket`: its `data` listener (added once the handshake is answered) is
 * handed each chunk only after `frameBound` has read the frame headers in it; a message past `limit` destroys the
 * socket instead, and `seen.tooLarge` says why. Wrapping the listener rather than adding one of our own leaves the
 * socket paused until undici reads it, so no byte reaches one reader and not the other.
 */
function boundReads(socket: Duplex, limit: number, seen: HandshakeObservation): void {
  const past = frameBound(limit);
  const on = socket.on;
  const wrap = (event: string | symbol, listener: (...args: unknown[]) => void) => {
    if (event !== 'data') return listener;
    return (chunk: unknown) => {
      if (seen.tooLarge === true) return;
      const at = Buffer.isBuffer(chunk) ? past(chunk) : -1;
      if (at >= 0) {
        seen.tooLarge = true;
        // The messages before the offending frame are whole: undici still reads them.
        if (at > 0) listener((chunk as Buffer).subarray(0, at));
        socket.destroy();
        return;
      }
      listener(chunk);
    };
  };
  socket.on = socket.addListener = function (this: Duplex, event: string | symbol, listener: (...args: unknown[]) => void) {
    return on.call(this, event, wrap(event, listener));
  } as Duplex['on'];
}

/**
 * Wraps a dispatcher so the upgrade request's response status and network error are observed on their way to
 * undici's WebSocket, which turns every handshake failure into one bare `error` event; the upgraded socket's reads
 * are bounded (`boundReads`). undici's own `maxPayloadSize` is set to the same bound: it also holds a message that
 * permessage-deflate inflates past it.
 */
function observing(dispatcher: Dispatcher, seen: HandshakeObservation, maxMessageBytes: number): Dispatcher {
  const composed = dispatcher.compose((dispatch) => (opts, handler) =>
    dispatch(opts, {
      onRequestStart: (controller, context) => handler.onRequestStart?.(controller, context),
      onRequestUpgrade: (controller, statusCode, headers, socket) => {
        seen.status = statusCode;
        boundReads(socket, maxMessageBytes, seen);
        handler.onRequestUpgrade?.(controller, statusCode, headers, socket);
      },
      onResponseStart: (controller, statusCode, headers, statusMessage) => {
        seen.status = statusCode;
        const challenge = headers['www-authenticate'];
        if (challenge !== undefined) seen.challenge = Array.isArray(challenge) ? challenge.join(', ') : String(challenge);
        handler.onResponseStart?.(controller, statusCode, headers, statusMessage);
      },
      onResponseData: (controller, chunk) => handler.onResponseData?.(controller, chunk),
      onResponseEnd: (controller, trailers) => handler.onResponseEnd?.(controller, trailers),
      onResponseError: (controller, error) => {
        seen.error ??= error;
        handler.onResponseError?.(controller, error);
      },
    }),
  );
  // undici's WebSocket reads `webSocketOptions` from the dispatcher it was given.
  const base = (dispatcher as { webSocketOptions?: { maxFragments?: number } }).webSocketOptions;
  const webSocketOptions = { ...(base?.maxFragments === undefined ? {} : { maxFragments: base.maxFragments }), maxPayloadSize: maxMessageBytes };
  return new Proxy(composed, { get: (target, key, receiver) => (key === 'webSocketOptions' ? webSocketOptions : Reflect.get(target, key, receiver)) });
}

const tooLarge = (limit: number) =>
  new FleetError('UPSTREAM_RESPONSE_TOO_LARGE', {
    message: `The server sent a WebSocket message larger than ${limit} bytes (maxUpstreamBytes).`,
    details: { limit_bytes: limit },
  });

function handshakeFailure(seen: HandshakeObservation): UpstreamError {
  const { status } = seen;
  if (status === 401) return upstream('UPSTREAM_AUTH_FAILED', 'The server refused the credentials (HTTP 401).');
  if (status === 403) return upstream('UPSTREAM_AUTH_FAILED', 'The server denied access (HTTP 403).');
  if (status === 101) {
    return upstream('UPSTREAM_PROTOCOL_ERROR', `The server upgraded the connection without the "${MCP_SUBPROTOCOL}" subprotocol.`);
  }
  if (status !== undefined && status >= 300 && status < 400) {
    return upstream('UPSTREAM_PROTOCOL_ERROR', `The server answered with a redirect (HTTP ${status}); redirects are not followed.`);
  }
  if (status !== undefined) {
    return upstream('UPSTREAM_PROTOCOL_ERROR', `The server answered HTTP ${status} instead of a WebSocket upgrade.`);
  }
  return networkFailure(seen.error) ?? upstream('UPSTREAM_UNREACHABLE', 'The WebSocket connection could not be established.', seen.error);
}

/**
 * An MCP `Transport` over undici's `WebSocket`: subprotocol `mcp`, one JSON-RPC message per text frame.
 * The SDK has no WebSocket client transport, so this is the one piece written here; the protocol on top is
 * the SDK's `Client`. `start()` resolves once the handshake is done and rejects with an upstream `FleetError`
 * (401/403 → UPSTREAM_AUTH_FAILED, refused → UPSTREAM_UNREACHABLE, slow → UPSTREAM_TIMEOUT, any other
 * answer → UPSTREAM_PROTOCOL_ERROR).
 */
export class WebSocketClientTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;

  /** Why the connection ended, when the transport ended it: a message past `maxMessageBytes`. */
  failure: UpstreamError | undefined;
  private socket: WebSocket | undefined;
  private seen: HandshakeObservation = {};
  private started = false;
  private closed = false;
  private readonly onAbort = () => void this.close();

  private readonly maxMessageBytes: number;

  constructor(
    private readonly url: URL,
    private readonly options: WebSocketClientTransportOptions = {},
  ) {
    // Checked where it is given (`maxUpstreamBytes`, createGuardedFetch).
    this.maxMessageBytes = options.maxMessageBytes ?? DEFAULT_MAX_UPSTREAM_BYTES;
  }

  async start(): Promise<void> {
    if (this.started) throw new Error('WebSocketClientTransport already started');
    this.started = true;
    this.options.signal?.addEventListener('abort', this.onAbort, { once: true });
    try {
      this.socket = await this.connect({ unauthorized: true, forbidden: true });
    } catch (error) {
      this.finish();
      throw error;
    }
    if (this.closed) {
      this.socket.close(1000);
      throw upstream('UPSTREAM_UNREACHABLE', 'The WebSocket connection was closed while it opened.');
    }
    this.socket.addEventListener('close', () => {
      if (this.seen.tooLarge === true) {
        this.failure = tooLarge(this.maxMessageBytes);
        this.onerror?.(this.failure);
      }
      this.finish();
    });
    this.socket.addEventListener('error', () => this.onerror?.(new Error('WebSocket connection error')));
  }

  /** One handshake; `mayRetry`: which refusals may still be answered with one more (each once per start). */
  private async connect(mayRetry: { unauthorized: boolean; forbidden: boolean }): Promise<WebSocket> {
    if (this.options.signal?.aborted === true || this.closed) {
      throw upstream('UPSTREAM_TIMEOUT', 'The WebSocket connection was aborted before it opened.');
    }
    const refused = await badPortRefusal(this.options.dispatcher, this.url);
    if (refused !== undefined) throw refused;
    const seen: HandshakeObservation = {};
    this.seen = seen;
    const headers = (await this.options.headers?.()) ?? {};
    const socket = new WebSocket(this.url, {
      protocols: [MCP_SUBPROTOCOL],
      dispatcher: observing(this.options.dispatcher ?? defaultDispatcher(), seen, this.maxMessageBytes),
      headers,
    });
    // Held at once so that `close()` can end a handshake in progress.
    this.socket = socket;
    // At once, not after `open` resolves: a frame sent right after the upgrade may arrive with it.
    socket.addEventListener('message', (event) => this.receive(event.data));
    const timeoutMs = this.options.connectTimeoutMs ?? 30_000;
    try {
      await new Promise<void>((resolve, reject) => {
        const cleanup = () => {
          clearTimeout(timer);
          socket.removeEventListener('open', onOpen);
          socket.removeEventListener('close', onClose);
          this.options.signal?.removeEventListener('abort', onAbort);
        };
        const fail = (error: UpstreamError) => {
          cleanup();
          socket.close();
          reject(error);
        };
        const onOpen = () => {
          cleanup();
          // undici already fails a handshake that selects no subprotocol; this catches one that selects another.
          if (socket.protocol !== MCP_SUBPROTOCOL) fail(handshakeFailure({ status: 101 }));
          else resolve();
        };
        const onClose = () =>
          fail(
            seen.tooLarge === true
              ? tooLarge(this.maxMessageBytes)
              : this.closed
                ? upstream('UPSTREAM_UNREACHABLE', 'The WebSocket connection was closed while it opened.')
                : handshakeFailure(seen),
          );
        const onAbort = () => fail(upstream('UPSTREAM_TIMEOUT', 'The WebSocket handshake was aborted.'));
        const timer = setTimeout(
          () => fail(upstream('UPSTREAM_TIMEOUT', `The WebSocket handshake did not complete within ${timeoutMs} ms.`)),
          timeoutMs,
        );
        socket.addEventListener('open', onOpen);
        socket.addEventListener('close', onClose);
        this.options.signal?.addEventListener('abort', onAbort, { once: true });
      });
    } catch (error) {
      if (mayRetry.unauthorized && seen.status === 401 && this.options.onUnauthorized !== undefined) {
        await this.options.onUnauthorized();
        return this.connect({ ...mayRetry, unauthorized: false });
      }
      if (mayRetry.forbidden && seen.status === 403 && this.options.onForbidden !== undefined && (await this.options.onForbidden(seen.challenge))) {
        return this.connect({ ...mayRetry, forbidden: false });
      }
      throw error;
    }
    return socket;
  }

  private receive(data: unknown): void {
    if (typeof data !== 'string') {
      this.onerror?.(upstream('UPSTREAM_PROTOCOL_ERROR', 'The server sent a binary frame; MCP messages are text frames.'));
      return;
    }
    let message: JSONRPCMessage;
    try {
      message = parseJSONRPCMessage(JSON.parse(data));
    } catch (cause) {
      this.onerror?.(upstream('UPSTREAM_PROTOCOL_ERROR', 'The server sent a frame that is not a JSON-RPC message.', cause));
      return;
    }
    this.onmessage?.(message);
  }

  async send(message: JSONRPCMessage): Promise<void> {
    const socket = this.socket;
    if (socket === undefined || socket.readyState !== WebSocket.OPEN) {
      throw upstream('UPSTREAM_UNREACHABLE', 'The WebSocket connection is not open.');
    }
    socket.send(JSON.stringify(message));
  }

  async close(): Promise<void> {
    if (this.socket !== undefined && this.socket.readyState !== WebSocket.CLOSED) this.socket.close(1000);
    this.finish();
  }

  /** Runs once, whoever closes first: `close()`, the server, an abort or a failed start. */
  private finish(): void {
    if (this.closed) return;
    this.closed = true;
    this.options.signal?.removeEventListener('abort', this.onAbort);
    this.onclose?.();
  }
}
