import { randomUUID } from 'node:crypto';
import {
  type AuthInfo,
  createMcpHandler,
  InMemoryServerEventBus,
  isJsonContentType,
  isLegacyRequest,
  type McpHttpHandler,
  type Server,
  WebStandardStreamableHTTPServerTransport,
} from '@modelcontextprotocol/server';
import { ResultAsync } from 'neverthrow';
import type { FleetError } from '../errors/fleet-error.js';
import type { EventSource } from '../events/bus.js';
import type { Scope } from '../auth/scopes.js';
import type { Batch, RateLimitDecision } from '../ratelimit/limiter.js';
import type { IndexCalls } from '../storage/index-calls.js';
import type { RecordStore } from '../storage/records.js';
import type { Ran } from '../util/result.js';
import { readLimited } from '../util/read-limited.js';
import { ByAccount } from '../util/by-account.js';
import { mcpServerChannel } from '../trace/channels.js';
import type { UpstreamCatalog } from './catalog.js';
import { CredentialWatch, type HeldStream, type KeyLive } from './credential-watch.js';
import { type HotRequest, hotPost, serveLean } from './lean-road.js';
import {
  createEndpointServer,
  type EndpointHandlers,
  endpointHandlers,
  type EndpointScope,
  type EndpointServerDeps,
  missingScope,
  tracedHeaders,
  viewKey,
  visibleTools,
} from './server.js';
import { ToolsAnswers } from './tools-answers.js';

/** What the HTTP handler hands the endpoint: who acts, and the rate limiter's verdict on the messages of a request. */
export interface McpExchange extends EndpointScope {
  /**
   * Counts the messages of one HTTP request against the tier and its `tools/call` requests against `tools.call`, in one
   * decision: admitted whole or refused whole. `null`: limits off or failing open.
   */
  admit: (batch: Batch) => Ran<RateLimitDecision | null, FleetError>;
  /**
   * The answer to a request whose methods need a scope the principal lacks, before any is served: the HTTP 403 of
   * step-up authorization (OAuth principals). `undefined`: such a request is served, each message refused on its own
   * with a JSON-RPC error (API keys, which cannot gain a scope).
   */
  stepUp?: ((scope: Scope) => Response) | undefined;
  /**
   * Reads a body that declares a length within the limit whole from the request underneath, where the adapter's
   * server holds a body to its length (`RequestContext.readBody` with `bodyWithinLength`); `undefined`: the `Request`
   * reads it.
   */
  readBody?: (() => Promise<Uint8Array> | undefined) | undefined;
  /**
   * The headers every answer to this request carries (its request id, the binding limit's), as they stand when asked.
   * Asked once the body's one decision is taken, and handed to whatever makes the answer: each answer is made with
   * them (an answer the SDK made, with them set in its own headers: `sdkAnswer`).
   */
  answerHeaders: () => Record<string, string>;
}

/** Answers the refusal of a JSON-RPC request by the rate limiter (HTTP 429 with its headers). */
export type Refuse = (decision: RateLimitDecision) => Response;

export interface McpEndpointDeps extends Omit<EndpointServerDeps, 'catalog' | 'answers' | 'onToolsListed'> {
  catalog: UpstreamCatalog;
  records: RecordStore;
  /** Holds each account's set of session records, whose size is capped (`maxSessionRecordsPerAccount`). */
  index: IndexCalls;
  events: EventSource;
  bodyLimit: number;
  /** Reports errors no request waits for. */
  onError: (error: unknown) => void;
  /** Whether an API key still works (not revoked, not expired): the open streams of one that does not are ended. */
  keyLive?: KeyLive;
}

export interface McpEndpointOptions {
  /** A 2025 session unused this long is closed in this process (its record stays: it is rebuilt on its next request), in ms. @default 600000 */
  sessionIdleMs?: number;
  /** How long a 2025 session's record is kept after its creation, in ms. @default 86400000 */
  sessionTtlMs?: number;
  /**
   * A live session reads its record again at most this often, so that a session ended (DELETE) in another process
   * ends here too, within this delay, in ms. `0`: on every request. @default 5000
   */
  sessionCheckMs?: number;
  /**
   * Most 2025 sessions one account holds live in this process; opening one more closes the account's least recently
   * used session here first (its record stays: its next request rebuilds it). @default 1000
   */
  maxSessionsPerAccount?: number;
  /** Most 2025 sessions live in this process over all accounts; beyond it the least recently used one is closed first. @default 10000 */
  maxSessions?: number;
  /**
   * Most 2025 session records one account keeps in the storage, over every process sharing it. A new session past it
   * ends the account's oldest one (its record is deleted; its next request is answered 404 `Session not found`, upon
   * which a client starts a new session). @default 1000
   */
  maxSessionRecordsPerAccount?: number;
  /**
   * Serve a 2025 session's POST of one `tools/call` or `tools/list` (no progress asked) on the lean road: the same
   * handlers, answered as JSON without the SDK's transport (docs/performance.md "mcp-lean"). `false`: every message
   * goes through the SDK's transport. @default true
   */
  leanRoad?: boolean;
  /**
   * How often the credentials of open streams (a 2025 session's GET stream, a 2026-07-28 `subscriptions/listen`) are
   * checked again, in ms: a stream whose key was revoked in another process sharing the store, or whose key or token
   * expired, ends within this delay (a key revoked in this process ends its streams at once). @default 30000
   */
  credentialCheckMs?: number;
}

/**
 * The most bytes (of its JSON) each part of the `initialize` params a session record keeps may have; an `initialize`
 * with more is refused (-32602), since the session could not be rebuilt from a record that left some out.
 */
export const SESSION_RECORD_BOUNDS = { protocolVersion: 64, capabilities: 4096, clientInfo: 1024 } as const;

/** The session record in the fleet's storage: enough to rebuild the session in any process sharing it. */
interface SessionRecord {
  account: string;
  key_id: string | null;
  server_id: string | null;
  /**
   * What a rebuild replays as the `initialize` params: the client's `protocolVersion`, `capabilities` and
   * `clientInfo` (its `name`, `version` and `title`), each within `SESSION_RECORD_BOUNDS`; nothing else it sent.
   */
  initialize: Record<string, unknown>;
  created_at: string;
}

interface LiveSession {
  record: SessionRecord;
  transport: WebStandardStreamableHTTPServerTransport;
  server: Server;
  /** The latest exchange's scope: whom a `list_changed` check lists for. */
  scope: EndpointScope;
  /** The visible tool names last listed, to tell whether the union changed. */
  tools: string[] | undefined;
  lastUsed: number;
  /** When its record was last found in storage. */
  checkedAt: number;
  /** Aborted when the session closes in this process: a lean call waiting on it ends its answer. */
  closing: AbortController;
}

function positiveInteger(value: number | undefined, fallback: number, name: string): number {
  if (value === undefined) return fallback;
  if (!Number.isInteger(value) || value < 1) throw new TypeError(`mcp-fleet: mcp.${name} must be a positive integer, got ${String(value)}`);
  return value;
}

/**
 * The 2026-07-28 handler of one view of an account: the same account, allowlists and server see the same tools, so
 * they share one handler and its `subscriptions/listen` bus.
 */
interface ModernView {
  handler: McpHttpHandler;
  bus: InMemoryServerEventBus;
  account: string;
  serverId: string | undefined;
  /** The latest exchange's scope: whom a `list_changed` check lists for. */
  scope: EndpointScope;
  /** The visible tool names this view last answered `tools/list` with. */
  tools: string[] | undefined;
  lastUsed: number;
}

/** One decoder for every body (as `new TextDecoder()` each time, replacing what is not UTF-8): a whole-input `decode` keeps no state. */
const UTF8 = new TextDecoder();

const sessionKey = (id: string) => `mcp-session:${id}`;
/** An account's session ids, scored by creation time: the oldest is ended first past the cap. */
const sessionSet = (account: string) => `mcp-sessions:${encodeURIComponent(account)}`;

const jsonRpcError = (status: number, code: number, message: string, id: unknown, headers: Record<string, string>) =>
  Response.json({ jsonrpc: '2.0', error: { code, message }, id }, { status, headers });

/**
 * An answer the SDK made (its transport's or handler's own `new Response`), given the request's headers: set in its
 * headers (no copy of its body's stream; an answer of text stays text for the server adapter); one whose headers are
 * immutable is copied with them.
 */
function sdkAnswer(response: Response, headers: Record<string, string>): Response {
  try {
    for (const name in headers) response.headers.set(name, headers[name] as string);
    return response;
  } catch {
    const copied = new Headers(response.headers);
    for (const name in headers) copied.set(name, headers[name] as string);
    return new Response(response.body, { status: response.status, statusText: response.statusText, headers: copied });
  }
}

interface JsonRpcRequestLike {
  method: string;
  id: unknown;
}

/**
 * What a session record keeps of the client's `initialize` params, or the refusal naming the part that is too large.
 * Kept: `protocolVersion`, `capabilities` and `clientInfo`'s `name`, `version` and `title`, as sent (the SDK judges
 * their shape when it answers the `initialize`).
 */
function keptInitialize(params: unknown): { kept: Record<string, unknown> } | { refusal: string } {
  const p = (typeof params === 'object' && params !== null ? params : {}) as Record<string, unknown>;
  const info = (typeof p.clientInfo === 'object' && p.clientInfo !== null ? p.clientInfo : {}) as Record<string, unknown>;
  const kept: Record<string, unknown> = {
    protocolVersion: p.protocolVersion,
    capabilities: p.capabilities,
    clientInfo: { name: info.name, version: info.version, ...(info.title === undefined ? {} : { title: info.title }) },
  };
  for (const [field, max] of Object.entries(SESSION_RECORD_BOUNDS)) {
    const bytes = Buffer.byteLength(JSON.stringify(kept[field]) ?? '');
    if (bytes > max) {
      return { refusal: `initialize: params.${field} is ${bytes} bytes as JSON; this endpoint keeps at most ${max} for a session (it rebuilds the session from them).` };
    }
  }
  return { kept };
}

/** The JSON-RPC requests (not notifications, not responses) in a POST body: one message or a batch. */
function requestsIn(body: unknown): JsonRpcRequestLike[] {
  const messages = Array.isArray(body) ? body : [body];
  return messages.filter(
    (m): m is JsonRpcRequestLike => typeof m === 'object' && m !== null && typeof (m as { method?: unknown }).method === 'string' && 'id' in m,
  );
}

/**
 * Whether a 2025 POST body is one JSON-RPC request that nothing is streamed for before its answer: no
 * `_meta.progressToken` (the one notification the endpoint's handlers send about a request is its progress, and only
 * when asked), and not `initialize` (whose answer opens the session). Its answer can then go as one JSON body, as the
 * 2026-07-28 handler's `auto` mode answers, instead of an SSE stream of one event.
 */
function answersWhole(body: unknown): boolean {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return false;
  const message = body as { method?: unknown; id?: unknown; params?: { _meta?: { progressToken?: unknown } } };
  if (typeof message.method !== 'string' || message.id === undefined || message.method === 'initialize') return false;
  return message.params?._meta?.progressToken === undefined;
}

/**
 * The SDK's 2025 transport answers every POST of a request as an SSE stream. For a request that streams nothing
 * before its answer (`answersWhole`), the stream is read here (it is in memory, and ends with the answer) and its one
 * event answered as `application/json`, which the client accepted with its `Accept` (Streamable HTTP lets the server
 * choose): one write of headers and body instead of headers, the event and the end of a chunked stream. Anything else
 * the stream held (keep-alive comments are dropped, as a JSON answer has none) is answered as it was, SSE. The
 * client going away cancels the read, as it would cancel the stream. Either answer is made with `given` (the
 * request's headers).
 */
async function wholeAnswer(response: Response, signal: AbortSignal, given: Record<string, string>): Promise<Response> {
  if (response.body === null || !(response.headers.get('content-type') ?? '').startsWith('text/event-stream')) return sdkAnswer(response, given);
  const reader = response.body.getReader();
  const cancel = () => void reader.cancel().catch(() => {});
  signal.addEventListener('abort', cancel, { once: true });
  const chunks: Uint8Array[] = [];
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      chunks.push(value);
    }
  } catch {
    // The stream failed (the session closed under it): what it held is answered as it was.
  } finally {
    signal.removeEventListener('abort', cancel);
  }
  // The event's bytes as the SDK encoded them: its `data:` line is the JSON-RPC message (JSON holds no raw newline).
  const bytes = chunks.length === 1 ? (chunks[0] as Uint8Array) : Buffer.concat(chunks);
  const text = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let data: Uint8Array | undefined;
  let events = 0;
  for (let at = 0; at < text.length; ) {
    const newline = text.indexOf(NEWLINE, at);
    const end = newline === -1 ? text.length : newline;
    if (text.subarray(at, at + DATA.length).equals(DATA)) {
      events++;
      data = text.subarray(at + (text[at + DATA.length] === SPACE ? DATA.length + 1 : DATA.length), end);
    }
    at = end + 1;
  }
  const headers: Record<string, string> = {};
  response.headers.forEach((value, name) => {
    headers[name] = value;
  });
  Object.assign(headers, given);
  if (events !== 1 || data === undefined) return new Response(text, { status: response.status, headers });
  headers['content-type'] = 'application/json';
  delete headers['cache-control'];
  delete headers['connection'];
  delete headers['x-accel-buffering'];
  return new Response(data, { status: response.status, headers });
}

const NEWLINE = 0x0a;
const SPACE = 0x20;
const DATA = Buffer.from('data:');

/**
 * The fleet as one MCP server (CONTRACT "The MCP endpoint"): Streamable HTTP on Web `Request`/`Response`, served by
 * the SDK. 2026-07-28 traffic goes to the SDK's per-request handler (`createMcpHandler`, stateless); 2025 traffic
 * (`initialize`, `Mcp-Session-Id`, the GET stream) to sessionful `WebStandardStreamableHTTPServerTransport`s kept here,
 * whose records live in the fleet's storage so that another process sharing it rebuilds a session it never saw.
 */
export class McpEndpoint {
  /**
   * The SDK's per-request handler for 2026-07-28, one per view (account, allowlist, server) that used it: its
   * `subscriptions/listen` streams then hear only the `list_changed` of what they see (the SDK's event bus is per handler).
   */
  private readonly modern = new ByAccount<ModernView>((view) => view.account);
  /** By account too: a change in one account walks its sessions only, not every tenant's. */
  private readonly sessions = new ByAccount<LiveSession>((session) => session.record.account);
  private readonly idleMs: number;
  private readonly ttlMs: number;
  private readonly checkMs: number;
  private readonly maxPerAccount: number;
  private readonly maxTotal: number;
  private readonly maxRecords: number;
  private readonly sweeper: NodeJS.Timeout;
  private readonly credentialTimer: NodeJS.Timeout;
  private readonly credentials: CredentialWatch;
  /** The 2026-07-28 `subscriptions/listen` streams open in this process. */
  private readonly listens = new Set<HeldStream & { account: string; links: unknown[] }>();
  private readonly unsubscribe: (() => void)[] = [];
  private readonly leanRoad: boolean;
  /** The `tools/list` answers of the views that listed lately, shared by both eras and both roads. */
  private readonly answers: ToolsAnswers;
  /** The handlers of the 2025 sessions' servers and of the lean road: one set for all of them. */
  private readonly handlers: EndpointHandlers;

  constructor(
    private readonly deps: McpEndpointDeps,
    options: McpEndpointOptions = {},
  ) {
    this.idleMs = options.sessionIdleMs ?? 600_000;
    this.ttlMs = options.sessionTtlMs ?? 86_400_000;
    this.checkMs = options.sessionCheckMs ?? 5000;
    this.maxPerAccount = positiveInteger(options.maxSessionsPerAccount, 1000, 'maxSessionsPerAccount');
    this.maxTotal = positiveInteger(options.maxSessions, 10_000, 'maxSessions');
    this.maxRecords = positiveInteger(options.maxSessionRecordsPerAccount, 1000, 'maxSessionRecordsPerAccount');
    this.leanRoad = options.leanRoad ?? true;
    // As many bytes of answers as the listing cache holds of listings, over 4 accounts' shares.
    // An answer taken as kept marks the listings it shows used, so that the listing cache keeps them first.
    this.answers = new ToolsAnswers(4 * deps.catalog.answerBytes, (serverIds) => deps.catalog.touch(serverIds, 'tools'));
    const { catalog, operations, tools, version } = deps;
    this.handlers = endpointHandlers({ catalog, operations, tools, version, answers: this.answers });
    this.sweeper = setInterval(() => this.sweep(), Math.min(this.idleMs, 60_000));
    this.sweeper.unref();
    this.credentials = new CredentialWatch(deps.keyLive);
    this.credentialTimer = setInterval(() => {
      this.credentials.check(this.held(), Date.now()).catch(deps.onError);
    }, positiveInteger(options.credentialCheckMs, 30_000, 'credentialCheckMs'));
    this.credentialTimer.unref();
    // The union a session sees changes with the account's servers and with the upstreams' own lists: an upstream's
    // change (already coalesced by the catalog) looks at the sessions of that server's account only.
    this.unsubscribe.push(
      deps.catalog.onChange((serverId, list, account) => {
        if (list !== 'tools') return;
        this.toolsMayHaveChanged({ account, serverId });
        this.modernToolsMayHaveChanged(account, serverId);
      }),
    );
    this.unsubscribe.push(deps.events.on('key.revoked', (event) => this.credentials.revoked(event.key.id, this.held(event.account))));
    for (const type of ['server.created', 'server.updated', 'server.deleted', 'server.health_changed'] as const) {
      this.unsubscribe.push(
        deps.events.on(type, (event) => {
          // A created server's id is new: nothing is kept under it yet, so only a change or a delete has lists to forget.
          if (type === 'server.updated' || type === 'server.deleted') deps.catalog.forget(event.server.id);
          this.toolsMayHaveChanged({ account: event.account });
          this.modernToolsMayHaveChanged(event.account, event.server.id);
        }),
      );
    }
  }

  /** Serves one HTTP request to `/mcp` or `/servers/{id}/mcp` for an authenticated principal. */
  async handle(request: Request, exchange: McpExchange, refuse: Refuse): Promise<Response> {
    const scope: EndpointScope = { principal: exchange.principal, serverId: exchange.serverId };
    if (mcpServerChannel.hasSubscribers) scope.traced = tracedHeaders(request.headers);
    const authInfo: AuthInfo = { token: '-', clientId: exchange.principal.account, scopes: [], extra: { mcpFleet: scope } };

    // Every message counts against the tier, a malformed or oversized body as one, and each `tools/call` also against
    // `tools.call`: one decision for the whole body, so a batch is admitted whole or refused whole (a POST of
    // notifications counts as many as it holds). The refusal of a body comes after it is counted.
    let parsedBody: unknown;
    let unreadable: [status: number, code: number, message: string] | undefined;
    const batch: Batch = { requests: 1, ofOperation: 0 };
    if (request.method === 'POST' && isJsonContentType(request.headers.get('content-type'))) {
      const bytes = await readLimited(request, this.deps.bodyLimit, exchange.readBody);
      if (bytes === undefined) unreadable = [413, -32600, `The request body is larger than the limit (${this.deps.bodyLimit} bytes; option bodyLimit).`];
      else {
        try {
          parsedBody = JSON.parse(UTF8.decode(bytes));
          const messages = Array.isArray(parsedBody) ? parsedBody : [parsedBody];
          batch.requests = Math.max(1, messages.length);
          batch.ofOperation = requestsIn(parsedBody).filter((message) => message.method === 'tools/call').length;
        } catch {
          unreadable = [400, -32700, 'Parse error: the body is not valid JSON.'];
        }
      }
    }
    // Over the memory stores (or with limits off) the decision is there at once: nothing to wait for.
    const admitted = exchange.admit(batch);
    const decision = admitted instanceof ResultAsync ? await admitted : admitted;
    if (decision.isErr()) return jsonRpcError(decision.error.status, -32603, `${decision.error.code}: ${decision.error.message}`, null, exchange.answerHeaders());
    if (decision.value !== null && !decision.value.allowed) return refuse(decision.value);
    // The headers of every answer from here on: the decision that sets the limit's is taken.
    const headers = exchange.answerHeaders();
    if (unreadable !== undefined) return jsonRpcError(...unreadable, null, headers);
    if (exchange.stepUp !== undefined && parsedBody !== undefined) {
      const lacking = missingScope(exchange.principal, requestsIn(parsedBody).map((message) => message.method));
      if (lacking !== undefined) return exchange.stepUp(lacking);
    }

    // A POST the lean road takes is one the SDK's routing classifies legacy (`hotPost`): it is not asked again.
    const hot = this.leanRoad && request.method === 'POST' ? hotPost(parsedBody, request.headers) : undefined;
    if (hot !== undefined) return this.legacy(request, scope, authInfo, parsedBody, headers, hot);
    const body = parsedBody === undefined ? undefined : { parsedBody };
    const legacy = parsedBody === undefined ? await isLegacyRequest(request) : await isLegacyRequest(request, parsedBody);
    if (!legacy) {
      const handler = this.modernFor(scope);
      if (requestsIn(parsedBody).some((message) => message.method === 'subscriptions/listen')) {
        return sdkAnswer(await this.listen(handler, request, scope, { authInfo, ...body }), headers);
      }
      return sdkAnswer(await handler.fetch(request, { authInfo, ...body }), headers);
    }
    return this.legacy(request, scope, authInfo, parsedBody, headers);
  }

  /**
   * A 2026-07-28 `subscriptions/listen`: served by the view's handler like any request, on a signal of its own too,
   * aborted (which ends the stream: the SDK's listen router tears it down) when its credential stops working.
   */
  private async listen(handler: McpHttpHandler, request: Request, scope: EndpointScope, options: Parameters<McpHttpHandler['fetch']>[1]): Promise<Response> {
    const ended = new AbortController();
    const signal = AbortSignal.any([request.signal, ended.signal]);
    // The body was read already (`parsedBody`): only the signal changes.
    const forwarded = new Request(request.url, { method: request.method, headers: request.headers, signal });
    // Held here, strongly, while the stream is open: `AbortSignal.any` and a `Request` following a signal link them
    // by weak references, so a garbage collection could otherwise cut `ended` off from the signal the SDK listens to.
    const held = { account: scope.principal.account, principal: () => scope.principal, close: () => ended.abort(), links: [signal, forwarded] };
    const forget = () => void this.listens.delete(held);
    signal.addEventListener('abort', forget, { once: true });
    this.listens.add(held);
    const response = await handler.fetch(forwarded, options);
    if (response.body === null) {
      forget();
      return response;
    }
    return new Response(response.body.pipeThrough(new TransformStream({ flush: forget })), response);
  }

  /** The streams held open in this process (of `account`'s, when named), each ended by the credential watch. */
  private *held(account?: string): Iterable<HeldStream> {
    const sessions = account === undefined ? this.sessions : this.sessions.of(account);
    for (const [id, session] of sessions) {
      yield {
        principal: () => session.scope.principal,
        // Closed here only, as an idle session is: its record stays for a credential that works again (a refreshed
        // token of the same account), and a revoked key's next request is refused before any session is looked at.
        close: () => {
          if (this.sessions.get(id) === session) this.sessions.delete(id);
          void session.transport.close().catch(() => {});
        },
      };
    }
    for (const listen of this.listens) if (account === undefined || listen.account === account) yield listen;
  }

  async close(): Promise<void> {
    clearInterval(this.sweeper);
    clearInterval(this.credentialTimer);
    for (const off of this.unsubscribe) off();
    // Its pending re-lists too: none fires after the fleet closed.
    this.deps.catalog.close();
    const handlers = [...this.modern.values()].map((view) => view.handler);
    this.modern.clear();
    await Promise.all(handlers.map((handler) => handler.close().catch(() => {})));
    const live = [...this.sessions.values()];
    this.sessions.clear();
    await Promise.all(live.map((session) => session.transport.close().catch(() => {})));
  }

  /** `/servers/{id}/mcp` of a server the account does not have: the HTTP layer answers 404 before any MCP. */
  async missingServer(account: string, serverId: string): Promise<FleetError | undefined> {
    try {
      await this.deps.catalog.servers(account, serverId);
      return undefined;
    } catch (error) {
      return error as FleetError;
    }
  }

  /** How many 2025 sessions this process holds (tests, metrics). */
  get liveSessions(): number {
    return this.sessions.size;
  }

  private modernFor(scope: EndpointScope): McpHttpHandler {
    const key = viewKey(scope);
    let view = this.modern.get(key);
    if (view === undefined) {
      const bus = new InMemoryServerEventBus();
      const created: ModernView = {
        handler: createMcpHandler(
          () =>
            this.newServer((names) => {
              created.tools = names;
            }),
          { legacy: 'reject', onerror: () => {}, bus },
        ),
        bus,
        account: scope.principal.account,
        serverId: scope.serverId,
        scope,
        tools: undefined,
        lastUsed: Date.now(),
      };
      view = created;
      this.modern.set(key, view);
    }
    view.scope = scope;
    view.lastUsed = Date.now();
    return view.handler;
  }

  private newServer(onToolsListed?: (names: string[]) => void): Server {
    if (onToolsListed === undefined) return createEndpointServer(this.deps.version, this.handlers);
    const { catalog, operations, tools, version } = this.deps;
    return createEndpointServer(version, endpointHandlers({ catalog, operations, tools, version, answers: this.answers, onToolsListed }));
  }

  /**
   * Publishes `notifications/tools/list_changed` on the listen streams of the account's views (of `serverId`'s, for
   * `/servers/{id}/mcp`) whose visible tools differ from their last `tools/list` answer; a view never listed is told
   * in any case. A view with no open stream is not listed for: nobody would hear it.
   */
  private modernToolsMayHaveChanged(account: string, serverId: string): void {
    for (const view of this.modern.of(account).values()) {
      if (view.serverId !== undefined && view.serverId !== serverId) continue;
      if (view.bus.listenerCount === 0) continue;
      void visibleTools(this.deps.catalog, view.scope)
        .then((names) => {
          const before = view.tools;
          view.tools = names;
          if (before === undefined || before.join('\n') !== names.join('\n')) view.handler.notify.toolsChanged();
        })
        .catch(() => {});
    }
  }

  /** A 2025 request, answered with `headers`; `hot`: the request the lean road takes (`hotPost`), if it is one. */
  private async legacy(
    request: Request,
    scope: EndpointScope,
    authInfo: AuthInfo,
    parsedBody: unknown,
    headers: Record<string, string>,
    hot?: HotRequest,
  ): Promise<Response> {
    const sessionId = request.headers.get('mcp-session-id');
    const options = parsedBody === undefined ? { authInfo } : { authInfo, parsedBody };
    if (sessionId === null) {
      const initialize = requestsIn(parsedBody).find((m) => m.method === 'initialize') as { params?: unknown; id: unknown } | undefined;
      if (initialize === undefined) return jsonRpcError(400, -32000, 'Bad Request: Mcp-Session-Id header is required (send initialize first).', null, headers);
      const params = keptInitialize(initialize.params);
      if ('refusal' in params) return jsonRpcError(400, -32602, params.refusal, initialize.id, headers);
      const session = await this.open(scope, params.kept);
      return sdkAnswer(await session.transport.handleRequest(request, options), headers);
    }
    const session = await this.find(sessionId, scope);
    if (session === undefined) return jsonRpcError(404, -32001, 'Session not found', null, headers);
    session.scope = scope;
    session.lastUsed = Date.now();
    if (hot !== undefined) {
      const lean = await serveLean(this.handlers, this.answers, { id: sessionId, server: session.server, closed: session.closing.signal }, scope, hot, {
        signalOf: () => request.signal,
        headers,
      });
      if (lean !== undefined) return lean;
    }
    const response = await session.transport.handleRequest(request, options);
    return answersWhole(parsedBody) ? wholeAnswer(response, request.signal, headers) : sdkAnswer(response, headers);
  }

  /** A new 2025 session; its record is written once the SDK accepted the `initialize`. */
  private async open(scope: EndpointScope, initialize: Record<string, unknown>): Promise<LiveSession> {
    const record: SessionRecord = {
      account: scope.principal.account,
      key_id: scope.principal.keyId ?? null,
      server_id: scope.serverId ?? null,
      initialize,
      created_at: new Date().toISOString(),
    };
    const session = await this.connect(record, randomUUID(), scope, async (id) => {
      this.makeRoom(record.account);
      this.sessions.set(id, session);
      // Its place among the account's records first: the oldest session is ended to make room past the cap.
      if (!(await this.placeRecord(record.account, id, Date.parse(record.created_at)))) return;
      const written = await this.deps.records.set(sessionKey(id), record, this.ttlMs);
      if (written.isErr()) this.deps.onError(written.error);
    });
    return session;
  }

  /**
   * Adds a session to its account's set, within `maxSessionRecordsPerAccount` in the same atomic step (so processes
   * sharing the storage hold the cap together); while the set is full, ends its oldest session. `false` when no place
   * could be had (the storage failed, or other processes kept filling the set): the session then lives in this
   * process alone, without a record to rebuild it elsewhere.
   */
  private async placeRecord(account: string, id: string, createdAt: number): Promise<boolean> {
    const set = sessionSet(account);
    for (let attempt = 0; attempt < 8; attempt++) {
      const committed = await this.deps.index.commit({ add: [{ set, member: id, score: createdAt }], limits: [{ set, max: this.maxRecords }] });
      if (committed.isErr()) {
        this.deps.onError(committed.error);
        return false;
      }
      if (committed.value.ok) return true;
      const oldest = await this.deps.index.range(set, { offset: 0, limit: 1 });
      if (oldest.isErr()) {
        this.deps.onError(oldest.error);
        return false;
      }
      for (const ended of oldest.value) await this.end(account, ended);
    }
    return false;
  }

  /**
   * Ends a session of the account: its record and its place in the account's set go, and this process closes it if it
   * holds it live (another process holding it notices the missing record within `sessionCheckMs`).
   */
  private async end(account: string, id: string): Promise<void> {
    const live = this.sessions.get(id);
    if (live !== undefined) {
      this.sessions.delete(id);
      void live.transport.close().catch(() => {});
    }
    const deleted = await this.deps.records.delete(sessionKey(id));
    if (deleted.isErr()) this.deps.onError(deleted.error);
    const removed = await this.deps.index.commit({ remove: [{ set: sessionSet(account), member: id }] });
    if (removed.isErr()) this.deps.onError(removed.error);
  }

  /** The live session, or one rebuilt from its record (made in another process, or closed here when idle). */
  private async find(id: string, scope: EndpointScope): Promise<LiveSession | undefined> {
    const live = this.sessions.get(id);
    if (live !== undefined) {
      if (!this.belongs(live.record, scope)) return undefined;
      if (Date.now() - live.checkedAt < this.checkMs) return live;
      const current = await this.deps.records.get<SessionRecord>(sessionKey(id));
      // Storage down: the live session goes on; a missing record: ended elsewhere.
      if (current.isOk() && current.value === undefined) {
        this.sessions.delete(id);
        void live.transport.close().catch(() => {});
        return undefined;
      }
      live.checkedAt = Date.now();
      return live;
    }
    if (!/^[0-9a-f-]{36}$/.test(id)) return undefined;
    const stored = await this.deps.records.get<SessionRecord>(sessionKey(id));
    if (stored.isErr() || stored.value === undefined || !this.belongs(stored.value, scope)) return undefined;
    const record = stored.value;
    const session = await this.connect(record, id, scope, () => {});
    // Replays the client's `initialize` and `notifications/initialized` so the SDK's state is the session's again.
    const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
    const authInfo: AuthInfo = { token: '-', clientId: record.account, scopes: [], extra: { mcpFleet: scope } };
    const replay = (message: unknown) => new Request('http://mcp-fleet.invalid/mcp', { method: 'POST', headers, body: JSON.stringify(message) });
    const init = await session.transport.handleRequest(replay({ jsonrpc: '2.0', id: 0, method: 'initialize', params: record.initialize }), { authInfo });
    await init.text();
    if (!init.ok) return undefined;
    await (await session.transport.handleRequest(replay({ jsonrpc: '2.0', method: 'notifications/initialized' }), { authInfo })).text();
    // A race with another request of the same session in this process: keep the first one.
    const raced = this.sessions.get(id);
    if (raced !== undefined) {
      void session.transport.close().catch(() => {});
      return raced;
    }
    this.makeRoom(record.account);
    this.sessions.set(id, session);
    return session;
  }

  /** A session serves only the account (and key, and server) that opened it. */
  private belongs(record: SessionRecord, scope: EndpointScope): boolean {
    return (
      record.account === scope.principal.account && record.key_id === (scope.principal.keyId ?? null) && record.server_id === (scope.serverId ?? null)
    );
  }

  private async connect(record: SessionRecord, id: string, scope: EndpointScope, initialized: (id: string) => Promise<void> | void): Promise<LiveSession> {
    const server = this.newServer();
    const transport = new WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: () => id,
      onsessioninitialized: initialized,
      onsessionclosed: (closed) => this.end(record.account, closed),
    });
    const session: LiveSession = {
      record,
      transport,
      server,
      scope,
      tools: undefined,
      lastUsed: Date.now(),
      checkedAt: Date.now(),
      closing: new AbortController(),
    };
    transport.onclose = () => {
      session.closing.abort();
      if (this.sessions.get(id) === session) this.sessions.delete(id);
    };
    await server.connect(transport);
    return session;
  }

  /**
   * Before one more session of `account` goes live: while the account, or the process, is at its cap, closes the least
   * recently used session (of the account, else of any) in this process. Its record stays, so nothing is lost: its
   * next request rebuilds it. One tenant opening sessions without end thus holds at most `maxSessionsPerAccount`.
   */
  private makeRoom(account: string): void {
    const evictOldest = (among: ReadonlyMap<string, LiveSession>): boolean => {
      let oldest: [string, LiveSession] | undefined;
      for (const entry of among) if (oldest === undefined || entry[1].lastUsed < oldest[1].lastUsed) oldest = entry;
      if (oldest === undefined) return false;
      this.sessions.delete(oldest[0]);
      void oldest[1].transport.close().catch(() => {});
      return true;
    };
    while (this.sessions.of(account).size >= this.maxPerAccount && evictOldest(this.sessions.of(account))) {}
    while (this.sessions.size >= this.maxTotal && evictOldest(this.sessions)) {}
  }

  /** Closes sessions idle in this process; their records stay, so their next request rebuilds them. */
  private sweep(): void {
    const cutoff = Date.now() - this.idleMs;
    for (const [key, view] of this.modern) {
      if (view.lastUsed < cutoff && view.bus.listenerCount === 0) {
        this.modern.delete(key);
        void view.handler.close().catch(() => {});
      }
    }
    for (const [id, session] of this.sessions) {
      if (session.lastUsed < cutoff) {
        this.sessions.delete(id);
        void session.transport.close().catch(() => {});
      }
    }
  }

  /**
   * Sends `notifications/tools/list_changed` to the account's live sessions whose visible tools differ from what they
   * last saw (their GET stream carries it); a session not checked before is told in any case (a spare `list_changed`
   * costs a client one listing). Sessions that see the same (same key allowlist, same server) are listed for once.
   */
  private toolsMayHaveChanged(which: { account: string; serverId?: string }): void {
    const sessions = this.sessions.of(which.account);
    // Most changes find no session of the account: nothing to make for them (every create tells this).
    if (sessions.size === 0) return;
    const listed = new Map<string, Promise<string[]>>();
    for (const session of sessions.values()) {
      if (which.serverId !== undefined && session.record.server_id !== null && session.record.server_id !== which.serverId) continue;
      const key = viewKey(session.scope);
      let names = listed.get(key);
      if (names === undefined) listed.set(key, (names = visibleTools(this.deps.catalog, session.scope)));
      void names
        .then(async (names) => {
          const before = session.tools;
          session.tools = names;
          if (before === undefined || before.join('\n') !== names.join('\n')) await session.server.sendToolListChanged();
        })
        .catch(() => {});
    }
  }
}
