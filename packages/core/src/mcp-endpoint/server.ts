import type { CallToolResult, Prompt, Resource, ResourceTemplateType as ResourceTemplate, Tool } from '@modelcontextprotocol/client';
import {
  type HandlerResultTypeMap,
  ProtocolError,
  ProtocolErrorCode,
  type RequestMethod,
  type RequestTypeMap,
  Server,
  type ServerContext,
} from '@modelcontextprotocol/server';
import { hasScope, type Principal, type Scope } from '../auth/scopes.js';
import { type FleetError, isFleetError } from '../errors/fleet-error.js';
import type { ToolOperations } from '../operations/index.js';
import type { ServerRecord } from '../registry/views.js';
import type { Listing } from '../toolcalls/listings.js';
import type { ToolService } from '../toolcalls/tool-service.js';
import { MAX_PREFIX_LENGTH, NAMESPACE_SEPARATOR, namespacedTool, toolAllowed } from '../toolcalls/tool-names.js';
import { type McpContentMessage, type McpServerMessage, mcpContentChannel, mcpServerChannel } from '../trace/channels.js';
import { traced } from '../trace/traced.js';
import { type CatalogRevision, sameSources, type UpstreamCatalog } from './catalog.js';
import type { AnswerStamp, ToolsAnswers } from './tools-answers.js';

/** Who an exchange acts for, and which servers it sees: all of the account's, or one (`/servers/{id}/mcp`). */
export interface EndpointScope {
  principal: Principal;
  /** `/servers/{id}/mcp`: this server alone, its names unprefixed. */
  serverId?: string | undefined;
  /** What the trace points read of the HTTP request, taken only when `mcp-fleet:mcp.server` has subscribers. */
  traced?: { protocolVersion?: string; traceparent?: string };
}

/** A W3C `traceparent` (version 00 and later), the one shape of trace context a message may carry. */
const TRACEPARENT = /^[\da-f]{2}-[\da-f]{32}-[\da-f]{16}-[\da-f]{2}$/;
/** A `tracestate` within the W3C bound of 512 characters, printable ASCII only. */
const TRACESTATE = /^[\x20-\x7e]{1,512}$/;
const PROTOCOL_VERSION = /^\d{4}-\d{2}-\d{2}$/;

/** The HTTP request's protocol version and `traceparent` header, when well formed: for `mcp-fleet:mcp.server` only. */
export function tracedHeaders(headers: Headers): NonNullable<EndpointScope['traced']> {
  const out: NonNullable<EndpointScope['traced']> = {};
  const version = headers.get('mcp-protocol-version');
  if (version !== null && PROTOCOL_VERSION.test(version)) out.protocolVersion = version;
  const traceparent = headers.get('traceparent');
  if (traceparent !== null && TRACEPARENT.test(traceparent)) out.traceparent = traceparent;
  return out;
}

export interface EndpointServerDeps {
  catalog: UpstreamCatalog;
  operations: { tools: ToolOperations };
  tools: ToolService;
  version: string;
  /** Told the visible tool names of each `tools/list` answer, sorted (what a listener last saw). */
  onToolsListed?: (names: string[]) => void;
  /** The `tools/list` answers kept per view (`ToolsAnswers`). */
  answers: ToolsAnswers;
}

/** A view: what decides which tools, prompts and resources an exchange sees (account, server, key allowlists). */
export const viewKey = ({ principal, serverId }: EndpointScope) =>
  JSON.stringify([principal.account, serverId ?? null, principal.tools ?? null, principal.prompts ?? null, principal.resources ?? null]);

/** The `_meta` key naming the fleet server a tool, prompt or resource comes from. */
export const SERVER_ID_META = 'io.mcp-fleet/server_id';

/** The JSON-RPC code of a missing scope: the request is understood and refused (as HTTP 403 is). */
export const FORBIDDEN_CODE = -32003;

/** `authInfo.extra` carries the exchange's scope from the HTTP layer into the SDK's handlers (never a secret). */
export function scopeOf(ctx: ServerContext): EndpointScope {
  const scope = ctx.http?.authInfo?.extra?.['mcpFleet'] as EndpointScope | undefined;
  if (scope === undefined) throw new ProtocolError(ProtocolErrorCode.InternalError, 'The exchange carries no principal.');
  return scope;
}

const invalidParams = (message: string) => new ProtocolError(ProtocolErrorCode.InvalidParams, message);
const unknownTool = (name: string) => invalidParams(`Unknown tool: ${name.slice(0, 256)}`);

/** The scope each method served needs: one table, which the handlers and the HTTP door's step-up check read. */
export const METHOD_SCOPES = {
  'tools/list': 'tool_calls:read',
  'tools/call': 'tool_calls:write',
  'prompts/list': 'tool_calls:read',
  'prompts/get': 'tool_calls:read',
  'resources/list': 'tool_calls:read',
  'resources/templates/list': 'tool_calls:read',
  'resources/read': 'tool_calls:read',
} as const satisfies Record<string, Scope>;

/** The first scope among `methods` that the principal lacks, if any. */
export function missingScope(principal: Principal, methods: readonly string[]): Scope | undefined {
  for (const method of methods) {
    const scope = (METHOD_SCOPES as Record<string, Scope | undefined>)[method];
    if (scope !== undefined && !hasScope(principal, scope)) return scope;
  }
  return undefined;
}

function requireScope(principal: Principal, method: keyof typeof METHOD_SCOPES): void {
  const scope = METHOD_SCOPES[method];
  if (!hasScope(principal, scope)) {
    throw new ProtocolError(FORBIDDEN_CODE, `This API key lacks the "${scope}" scope.`, { required_scope: scope });
  }
}

/** A FleetError that is not the upstream's: a JSON-RPC error naming its code. */
function protocolErrorOf(error: FleetError): ProtocolError {
  return new ProtocolError(ProtocolErrorCode.InternalError, `${error.code}: ${error.message}`, { code: error.code, ...(error.details ?? {}) });
}

/** An upstream failure during a listing or read: relayed when the upstream answered a JSON-RPC error, else named. */
function upstreamFailure(error: unknown): ProtocolError {
  if (error instanceof ProtocolError) return error;
  if (isFleetError(error)) return protocolErrorOf(error);
  return new ProtocolError(ProtocolErrorCode.InternalError, 'The upstream server failed.');
}

const withServerMeta = <T extends { _meta?: Record<string, unknown> | undefined }>(item: T, server: ServerRecord): T => ({
  ...item,
  _meta: { ...(item._meta ?? {}), [SERVER_ID_META]: server.id },
});

type ItemOf<K> = K extends 'tools' ? Tool : K extends 'prompts' ? Prompt : K extends 'resources' ? Resource : ResourceTemplate;

/** The items of a server left out of an answer: one array, so that an answer's basis (`ToolsAnswers`) stays the same. */
const NO_ITEMS: readonly never[] = Object.freeze([]);

/**
 * The servers of an aggregate, each with its items; `until`: when all of them were taken from what the catalog keeps
 * (`UpstreamCatalog.listed`), until when (the listing cache's clock) that holds, while nothing they were read from
 * changes (`UpstreamCatalog.revision`); `undefined` when an upstream was asked.
 */
interface Gathered<K> {
  servers: { server: ServerRecord; items: ItemOf<K>[] }[];
  until: number | undefined;
}

/** What an aggregate adds to an item at most: a `{prefix}__` of up to 64 characters and the `_meta` naming its server. */
const PER_ITEM_BYTES = 160;

/**
 * The aggregate of a list kind over the exchange's servers, each item with its server. Servers answer in parallel;
 * the left-out ones (unhealthy, failed, too large, slow) simply have no items. The whole is bounded: servers are
 * taken in the account's order, each item weighed with what naming it adds, within `catalog.answerBytes`
 * (`listings.cacheBytesPerAccount`); a server whose items no longer fit is left out of this answer.
 */
async function gather<K extends 'tools' | 'prompts' | 'resources' | 'resourceTemplates'>(
  catalog: UpstreamCatalog,
  scope: EndpointScope,
  kind: K,
): Promise<Gathered<K>> {
  let servers: ServerRecord[];
  try {
    servers = await catalog.servers(scope.principal.account, scope.serverId);
  } catch (error) {
    if (isFleetError(error) && error.code === 'SERVER_NOT_FOUND') throw invalidParams('Unknown server.');
    throw upstreamFailure(error);
  }
  // Whatever is kept is taken as it is; the upstreams of the rest are asked together.
  const lists: (Listing<ItemOf<K>> | undefined | Promise<Listing<ItemOf<K>> | undefined>)[] = new Array(servers.length);
  let until: number | undefined = Infinity;
  for (let i = 0; i < servers.length; i++) {
    const server = servers[i] as ServerRecord;
    const kept = catalog.listed(server, kind);
    if (kept === undefined) {
      until = undefined;
      lists[i] = catalog.list(server, kind) as Promise<Listing<ItemOf<K>> | undefined>;
    } else {
      if (until !== undefined && kept.until < until) until = kept.until;
      lists[i] = kept.listing as Listing<ItemOf<K>> | undefined;
    }
  }
  const listed = until === undefined ? await Promise.all(lists) : (lists as (Listing<ItemOf<K>> | undefined)[]);
  let room = catalog.answerBytes;
  const shown = servers.map((server, i) => {
    const listing = listed[i];
    const weight = listing === undefined ? 0 : listing.bytes + PER_ITEM_BYTES * listing.items.length;
    if (listing === undefined || weight > room) return { server, items: NO_ITEMS as never };
    room -= weight;
    return { server, items: listing.items };
  });
  return { servers: shown, until };
}

/** The kinds whose items a key reaches through its tools, or through its own `prompts`/`resources` patterns. */
type DoorKind = 'prompts' | 'resources' | 'resourceTemplates';

/** What a key's patterns match after `{prefix}__`: a prompt's name, a resource's URI, a template's URI template. */
const itemKeyOf = {
  prompts: (item: Prompt) => item.name,
  resources: (item: Resource) => item.uri,
  resourceTemplates: (item: ResourceTemplate) => item.uriTemplate,
} satisfies { [K in DoorKind]: (item: ItemOf<K>) => string };

const nameOf = (server: ServerRecord) => ({ id: server.id, name: server.config.name });

/**
 * Whether the principal reaches `server`: it may call at least one of its tools (its last listing, cached by the
 * catalog). No tool list: every server. A server whose tools cannot be listed now (unhealthy, failing, slow) is not
 * reached: the door stays shut rather than open on a guess.
 */
async function reaches(catalog: UpstreamCatalog, principal: Principal, server: ServerRecord): Promise<boolean> {
  if (principal.tools === null || principal.tools === undefined) return true;
  const tools = await catalog.list(server, 'tools');
  return tools?.items.some((tool) => toolAllowed(principal.tools, namespacedTool(nameOf(server), tool.name))) === true;
}

/**
 * Which of `server`'s items of `kind` exist for the principal, by the item's `{prefix}__{name or URI}`: its own
 * `prompts` (prompts) or `resources` (resources and templates) patterns when it has them, else every item of a server
 * it reaches and none of another. The one rule of every door but tools (docs/mcp-endpoint.md "Allowlists per key").
 */
async function allowance(catalog: UpstreamCatalog, principal: Principal, server: ServerRecord, kind: DoorKind): Promise<(item: string) => boolean> {
  const patterns = kind === 'prompts' ? principal.prompts : principal.resources;
  if (patterns !== null && patterns !== undefined) return (item) => toolAllowed(patterns, namespacedTool(nameOf(server), item));
  const reached = await reaches(catalog, principal, server);
  return () => reached;
}

/** `gather`, each server's items narrowed to those that exist for the exchange's principal. */
async function gatherAllowed<K extends DoorKind>(catalog: UpstreamCatalog, scope: EndpointScope, kind: K): Promise<{ server: ServerRecord; items: ItemOf<K>[] }[]> {
  const gathered = (await gather(catalog, scope, kind)).servers;
  const keyOf = itemKeyOf[kind] as (item: ItemOf<K>) => string;
  return Promise.all(
    gathered.map(async ({ server, items }) => {
      // A server with nothing of this kind costs no look at its tools.
      if (items.length === 0) return { server, items };
      const allows = await allowance(catalog, scope.principal, server, kind);
      return { server, items: items.filter((item) => allows(keyOf(item))) };
    }),
  );
}

/**
 * The resources an exchange is served, each with the one server that reads it. URIs pass unprefixed on `/mcp` too,
 * so a URI listed by two of the servers seen is served by neither (left out of the listing, unknown to a read): the
 * first server registered must not shadow another's resource. Within one server a repeated URI is one resource.
 */
async function servedResources(catalog: UpstreamCatalog, scope: EndpointScope): Promise<{ server: ServerRecord; items: Resource[] }[]> {
  const gathered = await gatherAllowed(catalog, scope, 'resources');
  const listers = new Map<string, number>();
  for (const { items } of gathered) for (const uri of new Set(items.map((item) => item.uri))) listers.set(uri, (listers.get(uri) ?? 0) + 1);
  return gathered.map(({ server, items }) => ({ server, items: items.filter((item) => listers.get(item.uri) === 1) }));
}

/** The name a client sees for an upstream item: unprefixed on `/servers/{id}/mcp`, else `{prefix}__{name}`. */
const exposedName = (scope: EndpointScope, server: ServerRecord, name: string) =>
  scope.serverId !== undefined ? name : namespacedTool({ id: server.id, name: server.config.name }, name);

/**
 * Which server and upstream name a client's name stands for; `undefined` when no server of the exchange has that
 * prefix. On `/mcp` every `__` in the name is a place the prefix may end (a prefix may itself hold `__`), and the
 * longest prefix that stands for a server wins: each is looked up by its name claim or id (`serverOfPrefix`), not by
 * reading the account's servers, so a call costs the same in an account of 2 servers or of 10,000. Prefixes are at
 * most 64 characters (names) or an id's length, so a long name cannot make it look up more than about 32.
 */
async function resolveName(catalog: UpstreamCatalog, scope: EndpointScope, name: string): Promise<{ server: ServerRecord; name: string } | undefined> {
  const { account } = scope.principal;
  try {
    if (scope.serverId !== undefined) {
      const [server] = await catalog.servers(account, scope.serverId);
      return server === undefined ? undefined : { server, name };
    }
    for (let at = name.lastIndexOf(NAMESPACE_SEPARATOR, MAX_PREFIX_LENGTH); at > 0; at = name.lastIndexOf(NAMESPACE_SEPARATOR, at - 1)) {
      const tool = name.slice(at + NAMESPACE_SEPARATOR.length);
      if (tool.length === 0) continue;
      const server = await catalog.serverOfPrefix(account, name.slice(0, at));
      if (server !== undefined) return { server, name: tool };
    }
    return undefined;
  } catch (error) {
    if (isFleetError(error) && error.code === 'SERVER_NOT_FOUND') return undefined;
    throw upstreamFailure(error);
  }
}

/** The visible tool names of an exchange, sorted: what a session remembers to tell whether its union changed. */
export async function visibleTools(catalog: UpstreamCatalog, scope: EndpointScope): Promise<string[]> {
  const gathered = (await gather(catalog, scope, 'tools')).servers;
  const names: string[] = [];
  for (const { server, items } of gathered) {
    for (const tool of items) {
      const name = exposedName(scope, server, tool.name);
      if (toolAllowed(scope.principal.tools, namespacedTool({ id: server.id, name: server.config.name }, tool.name))) names.push(name);
    }
  }
  return names.sort();
}

/**
 * What a handler reads of the request it serves, whichever road brought it: the SDK's transport (a 2025 session or a
 * 2026-07-28 request) or the endpoint's lean road (`lean-road.ts`), which calls the very same handlers.
 */
export interface Served {
  scope: EndpointScope;
  /** The JSON-RPC id of the request. */
  id: string | number;
  /** The 2025 session it came on; `undefined` for 2026-07-28. */
  sessionId: string | undefined;
  _meta: Record<string, unknown> | undefined;
  /** Aborted when the client cancels the request (`notifications/cancelled`) or its session closes. */
  signal: AbortSignal;
  /** Sends a notification about this request (its progress) on the road it came by. */
  notify: (notification: { method: 'notifications/progress'; params: { progressToken: string | number; progress: number; total?: number; message?: string } }) => Promise<void>;
}

/** A request handler of the endpoint: the one implementation of what a method answers, on either road. */
export type Handler<M extends RequestMethod> = (request: RequestTypeMap[M], served: Served) => Promise<HandlerResultTypeMap[M]>;

/** The methods the endpoint serves, each with its handler (`endpointHandlers`). */
export type EndpointHandlers = { [M in keyof typeof METHOD_SCOPES]: Handler<M> };

/** The `Served` of a request the SDK's `Server` dispatches. */
function servedOf(ctx: ServerContext): Served {
  return {
    scope: scopeOf(ctx),
    id: ctx.mcpReq.id,
    sessionId: ctx.sessionId,
    _meta: ctx.mcpReq._meta as Record<string, unknown> | undefined,
    signal: ctx.mcpReq.signal,
    notify: (notification) => ctx.mcpReq.notify(notification),
  };
}

/** Serves one request with its handler; traced on `mcp-fleet:mcp.server` when anyone listens. Both roads call it. */
export function answer<M extends RequestMethod>(method: M, request: RequestTypeMap[M], served: Served, handler: Handler<M>): Promise<HandlerResultTypeMap[M]> {
  return mcpServerChannel.hasSubscribers ? tracedRequest(method, request, served, handler) : handler(request, served);
}

/** Registers a request handler on the SDK's `Server`. */
function serve<M extends RequestMethod>(server: Server, method: M, handler: Handler<M>): void {
  server.setRequestHandler(method, (request, ctx) => answer(method, request, servedOf(ctx), handler));
}

function tracedRequest<M extends RequestMethod>(method: M, request: RequestTypeMap[M], served: Served, handler: Handler<M>): Promise<HandlerResultTypeMap[M]> {
  const { scope } = served;
  const message: McpServerMessage = {
    method,
    jsonrpc_id: served.id,
    // A 2025 exchange is always a session here (docs/mcp-endpoint.md); 2026-07-28 has none.
    era: served.sessionId === undefined ? '2026-07-28' : '2025',
    transport: 'streamable-http',
    account: scope.principal.account,
  };
  if (scope.serverId !== undefined) message.server_id = scope.serverId;
  if (served.sessionId !== undefined) message.session_id = served.sessionId;
  const version = message.era === '2026-07-28' ? '2026-07-28' : scope.traced?.protocolVersion;
  if (version !== undefined) message.protocol_version = version;
  const meta = served._meta;
  if (typeof meta?.['traceparent'] === 'string' && TRACEPARENT.test(meta['traceparent'])) {
    message.traceparent = meta['traceparent'];
    if (typeof meta['tracestate'] === 'string' && TRACESTATE.test(meta['tracestate'])) message.tracestate = meta['tracestate'];
  }
  if (scope.traced?.traceparent !== undefined) message.http_traceparent = scope.traced.traceparent;
  const name = method === 'tools/call' ? (request as { params?: { name?: unknown } }).params?.name : undefined;
  if (typeof name === 'string') message.tool_name = name;
  // Read once: a subscriber that arrives during the call gets none of it, rather than a result without arguments.
  const content = method === 'tools/call' && mcpContentChannel.hasSubscribers;
  return traced(
    mcpServerChannel,
    message,
    () =>
      handler(request, served).then(
        (result) => {
          if (content) publishContent(message, request, result);
          return result;
        },
        (error: unknown) => {
          if (error instanceof ProtocolError) {
            message.jsonrpc_error_code = error.code;
            const code = (error.data as { code?: unknown } | undefined)?.code;
            if (typeof code === 'string') message.error_code = code;
          }
          if (content) publishContent(message, request, undefined);
          throw error;
        },
      ),
    describeServed,
  );
}

/** `mcp-fleet:mcp.content`: the arguments the client sent and the result it is answered with (none for an error). */
function publishContent(message: McpServerMessage, request: unknown, result: unknown): void {
  const content: McpContentMessage = { request: message };
  const args = (request as { params?: { arguments?: unknown } }).params?.arguments;
  if (args !== undefined) content.arguments = args;
  if (result !== undefined) content.result = result;
  mcpContentChannel.publish(content);
}

function describeServed(message: McpServerMessage, result: unknown): void {
  if ((result as { isError?: unknown } | null)?.isError === true) message.is_error = true;
}

/**
 * A low-level SDK `Server` for the endpoint: raw request handlers, so upstream schemas pass untouched (no zod
 * registration, no `$ref` dereferencing, JSON Schema 2020-12 kept). The handlers read who acts from the exchange's
 * `authInfo`, so one instance serves a 2025 session whichever of the account's requests comes next.
 */
export function createEndpointServer(version: string, handlers: EndpointHandlers): Server {
  const server = new Server(
    { name: 'mcp-fleet', version },
    {
      capabilities: { tools: { listChanged: true }, prompts: {}, resources: {} },
      instructions: 'The tools, prompts and resources of the MCP servers registered in this mcp-fleet account, named {server}__{name}.',
    },
  );
  for (const method of Object.keys(handlers) as (keyof EndpointHandlers)[]) serve(server, method, handlers[method] as Handler<typeof method>);
  return server;
}

/** What each method the endpoint serves answers: the one implementation both roads call. */
export function endpointHandlers(deps: EndpointServerDeps): EndpointHandlers {
  const { catalog } = deps;
  /**
   * The view's `tools/list` answer from a gather: the one kept when built from the same basis, else a new one. Read
   * from what the catalog keeps alone, and with no change to the catalog's sources since `before`, it is stamped
   * (`AnswerStamp`) so that the next lists take it without a gather.
   */
  const listAnew = async (view: string, scope: EndpointScope, before: CatalogRevision | undefined) => {
    const { servers: gathered, until } = await gather(catalog, scope, 'tools');
    let stamp: AnswerStamp | undefined;
    if (before !== undefined && until !== undefined) {
      const after = catalog.revision(scope.principal.account);
      if (after !== undefined && sameSources(before, after)) stamp = { revision: before, until, sources: gathered.map(({ server }) => server.id), touchedAt: before.at };
    }
    const basis = gathered.flatMap(({ server, items }) => [server.id, server.config.name, items]);
    const kept = deps.answers.get(view, basis, stamp);
    if (kept !== undefined) return kept;
    const tools: Tool[] = [];
    for (const { server: upstream, items } of gathered) {
      for (const tool of items) {
        if (!toolAllowed(scope.principal.tools, namespacedTool({ id: upstream.id, name: upstream.config.name }, tool.name))) continue;
        tools.push(withServerMeta({ ...tool, name: exposedName(scope, upstream, tool.name) }, upstream));
      }
    }
    return deps.answers.set(view, basis, tools, stamp);
  };
  return {
    'tools/list': async (_request, { scope }) => {
      requireScope(scope.principal, 'tools/list');
      const view = viewKey(scope);
      // Over stores that count their changes, the view's answer is taken as it is while none of its sources changed
      // (`ToolsAnswers.current`): no read of the account's servers, no look-up of their listings.
      const before = catalog.revision(scope.principal.account);
      const current = before === undefined ? undefined : deps.answers.current(view, before);
      const listed = current ?? (await listAnew(view, scope, before));
      deps.onToolsListed?.(listed.names);
      return { tools: listed.tools };
    },

    'tools/call': async (request, { scope, signal, notify }) => {
      requireScope(scope.principal, 'tools/call');
      const { name, arguments: args } = request.params;
      if (typeof name !== 'string' || name.length === 0) throw invalidParams('A tool name is required.');
      const target = await resolveName(catalog, scope, name);
      if (target === undefined) throw unknownTool(name);
      const { server: upstream } = target;
      // Hidden and unknown answer alike, so a key cannot learn which tools it is denied.
      if (!toolAllowed(scope.principal.tools, namespacedTool({ id: upstream.id, name: upstream.config.name }, target.name))) throw unknownTool(name);
      // The last listing known answers most calls without a round trip; a tool missing from it is looked up afresh.
      const has = (tools: readonly Tool[] | undefined) => tools?.some((tool) => tool.name === target.name) === true;
      if (!has(catalog.known(upstream, 'tools'))) {
        catalog.forgetList(upstream.id, 'tools');
        const listed = await catalog.list(upstream, 'tools');
        // Not listed in time (down, slow): the call goes, and its failure is the answer.
        if (listed !== undefined && !has(listed.items)) throw unknownTool(name);
      }

      // A call whose agent asked for no progress goes to the upstream without a `progressToken`, as the agent sent it.
      const progressToken = request.params._meta?.progressToken;
      const onprogress =
        progressToken === undefined
          ? null
          : (progress: { progress: number; total?: number; message?: string }) => {
              void notify({ method: 'notifications/progress', params: { ...progress, progressToken } }).catch(() => {});
            };
      const outcome = await deps.operations.tools.invoke(
        scope.principal.account,
        upstream.id,
        { name: target.name, ...(args === undefined ? {} : { arguments: args }) },
        // `upstream` was read from the registry for this call (resolveName): the call does not read it again.
        { via: 'mcp', tools: scope.principal.tools ?? null, signal, server: upstream, onprogress },
      );
      if (outcome.isErr()) {
        const error = outcome.error;
        if (error.code === 'FORBIDDEN' || error.code === 'SERVER_NOT_FOUND') throw unknownTool(name);
        if (error.code === 'INVALID_REQUEST') throw invalidParams(`Invalid tools/call params: ${error.message}`);
        // An open breaker is an upstream failure like the others: a tool result the agent can read, not a fault of ours.
        if (error.code === 'UPSTREAM_UNAVAILABLE') return { isError: true, content: [{ type: 'text', text: `${error.code}: ${error.message}` }] } satisfies CallToolResult;
        throw protocolErrorOf(error);
      }
      const { result, error } = outcome.value;
      if (result !== null) return result;
      const failure = error ?? { code: 'UPSTREAM_PROTOCOL_ERROR', message: 'The server did not answer.' };
      return { isError: true, content: [{ type: 'text', text: `${failure.code}: ${failure.message}` }] } satisfies CallToolResult;
    },

    'prompts/list': async (_request, { scope }) => {
      requireScope(scope.principal, 'prompts/list');
      const prompts: Prompt[] = [];
      for (const { server: upstream, items } of await gatherAllowed(catalog, scope, 'prompts')) {
        for (const prompt of items) prompts.push(withServerMeta({ ...prompt, name: exposedName(scope, upstream, prompt.name) }, upstream));
      }
      return { prompts };
    },

    'prompts/get': async (request, { scope }) => {
      requireScope(scope.principal, 'prompts/get');
      const { name, arguments: args } = request.params;
      const target = await resolveName(catalog, scope, name);
      // Hidden and unknown answer alike, as for tools.
      if (target === undefined || !(await allowance(catalog, scope.principal, target.server, 'prompts'))(target.name)) {
        throw invalidParams(`Unknown prompt: ${name.slice(0, 256)}`);
      }
      try {
        return await deps.tools.upstream(target.server, target.server.config.timeout, ({ client }) =>
          client.getPrompt({ name: target.name, ...(args === undefined ? {} : { arguments: args }) }, { timeout: target.server.config.timeout }),
        );
      } catch (error) {
        throw upstreamFailure(error);
      }
    },

    'resources/list': async (_request, { scope }) => {
      requireScope(scope.principal, 'resources/list');
      const resources: Resource[] = [];
      for (const { server: upstream, items } of await servedResources(catalog, scope)) {
        for (const resource of items) resources.push(withServerMeta(resource, upstream));
      }
      return { resources };
    },

    // Templates are relayed like resources (a client reading a templated URI reads one the server listed).
    'resources/templates/list': async (_request, { scope }) => {
      requireScope(scope.principal, 'resources/templates/list');
      const resourceTemplates: ResourceTemplate[] = [];
      for (const { server: upstream, items } of await gatherAllowed(catalog, scope, 'resourceTemplates')) {
        for (const template of items) resourceTemplates.push(withServerMeta(template, upstream));
      }
      return { resourceTemplates };
    },

    'resources/read': async (request, { scope }) => {
      requireScope(scope.principal, 'resources/read');
      const { uri } = request.params;
      // The one server that lists the URI for this key reads it; URIs pass unchanged.
      const owner = (await servedResources(catalog, scope)).find(({ items }) => items.some((resource) => resource.uri === uri))?.server;
      // -32602 with the URI in `data` (SEP-2164), as the SDK's own servers answer.
      if (owner === undefined) throw new ProtocolError(ProtocolErrorCode.InvalidParams, `Unknown resource: ${uri.slice(0, 512)}`, { uri: uri.slice(0, 2048) });
      try {
        return await deps.tools.upstream(owner, owner.config.timeout, ({ client }) => client.readResource({ uri }, { timeout: owner.config.timeout }));
      } catch (error) {
        throw upstreamFailure(error);
      }
    },
  };
}
