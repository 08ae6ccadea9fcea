import { err, ok, type Result, ResultAsync } from 'neverthrow';
import { AT_ONCE, type AtOnceHandler } from './at-once.js';
import { type ApiKeys, hashSecret } from '../auth/api-keys.js';
import type { OAuthOutcome, OAuthResourceServer } from '../auth/oauth.js';
import { hasScope, type Principal, type Scope, SCOPES, TIERS } from '../auth/scopes.js';
import { FleetError, invalidRequest, toFleetError } from '../errors/fleet-error.js';
import { type Decided, type RateLimitDecision, RateLimiter } from '../ratelimit/limiter.js';
import type { McpEndpoint } from '../mcp-endpoint/endpoint.js';
import { answerMcp, insufficientScope, MCP_METHODS, type McpDoorDeps, type McpDoorExchange, mcpRouteOf, type McpTarget, mcpTargetOf } from '../mcp-endpoint/http-door.js';
import { type AuthMessage, authChannel, type HttpRequestMessage, httpRequestChannel, type OperationMessage, operationChannel } from '../trace/channels.js';
import { traced } from '../trace/traced.js';
import type { DashboardHandler } from './dashboard.js';
import type { OpenApiHandler } from './openapi.js';
import { mountPath } from './mount-path.js';
import { canonicalAudiences, challengeOf, insufficientScopeChallenge, mountUrlOf, resourceUrlOf } from './resource-metadata.js';
import { readJsonBody } from './body.js';
import { errorResponse, type Meta, requestIdOf, successResponse } from './envelope.js';
import { matchRoute, type Operation, type OperationInput, type Outcome, type Route, type RouteMatch } from './routes.js';
import { isoTimeOf } from '../util/iso-time.js';
import { chain, type Ran } from '../util/result.js';

/** What an adapter knows about a request beyond the Web `Request` itself. */
export interface RequestContext {
  /**
   * The path below the mount point (`/servers/srv_…`). When absent, the handler strips its `prefix` from the URL.
   */
  path?: string;
  /** The client's address, for limits on unauthenticated requests. */
  clientAddress?: string;
  /**
   * The request's body is at most its `Content-Length` bytes, as a Node HTTP/1.1 server's parser guarantees: a body
   * that declares a length within the limit is then read whole. @default false (read as a stream, counted as it comes)
   */
  bodyWithinLength?: boolean;
  /**
   * Reads such a body whole from the request underneath (`readWholeBody` of `@mcp-fleet/core/node` over the Node
   * request), without the copy the Web `Request` makes; `undefined` from it: the `Request` reads the body after all.
   * Asked only where `bodyWithinLength` lets a body be read whole. @default none: `request.arrayBuffer()`
   */
  readBody?: (() => Promise<Uint8Array> | undefined) | undefined;
  /**
   * The adapter writes the answer with `writeWebResponse` (`@mcp-fleet/core/node`), which sends an envelope's text
   * and headers as they are: API answers are then made without building undici's `Response` and its body stream,
   * unless something reads more of them. @default false
   */
  writesAnswer?: boolean;
}

/** Maps a request to the account it acts for, or `null` (401). Replaces the built-in API key check. */
export type Authenticate = (request: Request) => Principal | null | Promise<Principal | null>;

/** One answered request, as `onRequest` (and the `logger` option) sees it. */
export interface RequestLogEntry {
  method: string;
  /** The route's template below the mount (`/servers/:id`); `null` when no route matched. */
  route: string | null;
  status: number;
  duration_ms: number;
  request_id: string;
  /** The authenticated account; `null` before authentication succeeded. */
  account: string | null;
}

/** Called with every 5xx error before it is answered: the place to log `error.cause`. */
export type ErrorHook = (error: FleetError, info: { requestId: string; method: string; path: string }) => void;

export interface HandlerDeps {
  routes: readonly Route[];
  keys: ApiKeys;
  prefix: string;
  bodyLimit: number;
  authenticate: Authenticate | undefined;
  /** `undefined`: rate limits are off. */
  limiter: RateLimiter | undefined;
  onError: ErrorHook;
  /** Told of every answered request, after the answer is made. @default none */
  onRequest?: ((entry: RequestLogEntry) => void) | undefined;
  now: () => number;
  /** Serves the dashboard's static files at `/dashboard/`; `undefined`: the dashboard is off. */
  dashboard?: DashboardHandler | undefined;
  /** Serves the OpenAPI document at `/openapi.json`; `undefined`: `openapi: false`. */
  openapi?: OpenApiHandler | undefined;
  /** Serves `/mcp` and `/servers/{id}/mcp` (docs/mcp-endpoint.md); `undefined`: those paths are unknown. */
  mcp?: McpEndpoint | undefined;
  /** Verifies OAuth access tokens a key check did not accept (the `oauth` option); `undefined`: API keys only. */
  oauth?: OAuthResourceServer | undefined;
}

export type FleetHandler = (request: Request, context?: RequestContext) => Promise<Response>;

const BEARER = /^Bearer[ \t]+([\x21-\x7e]+)[ \t]*$/i;

const unauthorized = (challenge = 'Bearer') =>
  new FleetError('UNAUTHORIZED', {
    headers: { 'www-authenticate': challenge },
    ...(challenge === 'Bearer' ? {} : { message: 'A valid API key or OAuth access token is required: send "Authorization: Bearer <token>".' }),
  });
const routeNotFound = (path: string) =>
  new FleetError('NOT_FOUND', { message: 'No such route.', details: { path: path.slice(0, 512) } });

/** Where a request goes: its segments, and the MCP endpoint or the route they name. */
interface Routed {
  segments: Result<string[], FleetError>;
  /** `/mcp` or `/servers/{id}/mcp`, when the MCP endpoint is on. */
  mcp: McpTarget | undefined;
  /** The route and method matched; `undefined` for the MCP endpoint or a path that could not be decoded. */
  match: RouteMatch | undefined;
  /** The matched operation's name, for its rate limit. */
  operationName: string | undefined;
  /** The `Authorization` header, read once for every step that needs it; `null`: none. */
  authorization: string | null;
  /** No `Authorization` header. */
  keyless: boolean;
}

/** One request being answered: what every step reads, and the rate-limit headers they gather. */
class Exchange implements McpDoorExchange {
  /** Rate-limit headers of the binding limit, on every answer once the request is counted. */
  limitHeaders: Record<string, string> = {};
  /** The early verification and admission asked together (`admitEarly`), when they were. */
  early: EarlyAsk | undefined;
  /** The adapter writes the answer itself (`RequestContext.writesAnswer`). */
  readonly light: boolean;
  /** Set when the principal came from an OAuth access token: a missing scope is then a step-up challenge (403 `insufficient_scope`). */
  stepUp: ((missing: Scope) => string) | undefined;

  constructor(
    readonly request: Request,
    readonly context: RequestContext,
    readonly requestId: string,
    readonly path: string | undefined,
    private readonly deps: HandlerDeps,
    private readonly timestamp: () => string,
  ) {
    this.light = context.writesAnswer === true;
  }

  meta(): Meta {
    return { timestamp: this.timestamp(), request_id: this.requestId };
  }

  fail(error: FleetError): Response {
    if (error.status >= 500) this.deps.onError(error, { requestId: this.requestId, method: this.request.method, path: this.path ?? '' });
    return errorResponse(error, this.meta(), this.limitHeaders, this.light);
  }

  limited(decision: RateLimitDecision | null): Response | undefined {
    this.limitHeaders = RateLimiter.headers(decision, this.deps.now);
    return decision !== null && !decision.allowed ? this.fail(RateLimiter.refusal(decision)) : undefined;
  }
}

/**
 * The whole HTTP contract in one framework-free function over the Web `Request`/`Response`.
 * Order: request id → route path → `/.well-known/…` (404) and keyless `OPTIONS` (204), uncounted → authentication
 * (401; a failed key counts against the address's 401 budget, 429 past it) → rate limits (429) → route (404/405) →
 * scope (403) → body (413/415/400) → operation. Nothing before authentication reads the body or reveals anything about the account.
 * `/mcp` and `/servers/{id}/mcp` leave after authentication for the MCP endpoint's door (mcp-endpoint/http-door.ts).
 */
export function createHandler(deps: HandlerDeps): FleetHandler {
  const { onRequest, limiter } = deps;
  // The envelope's timestamp, made again only when the clock has moved (many answers share a millisecond).
  const isoAt = isoTimeOf();
  const timestamp = (): string => isoAt(deps.now());
  const mcpDoor: McpDoorDeps | undefined = deps.mcp === undefined ? undefined : { endpoint: deps.mcp, limiter, now: deps.now };

  // One road: the answer goes on synchronously until a step hands it a promise (over the memory stores, a GET waits
  // for nothing); `handle` is that answer as a promise, and carries the answer itself for an adapter that can write a
  // ready `Response` at once (the Hono adapter: no promise turns in Hono and `@hono/node-server` for it).
  const atOnce: AtOnceHandler = (request, context = {}) => {
    const requestId = requestIdOf(request.headers);
    if (onRequest === undefined && !httpRequestChannel.hasSubscribers) return answer(request, context, requestId, undefined);
    return observed(request, context, requestId);
  };
  const handle: FleetHandler = (request, context) => {
    try {
      const answered = atOnce(request, context);
      return answered instanceof Promise ? answered : Promise.resolve(answered);
    } catch (error) {
      return Promise.reject(error);
    }
  };
  return Object.assign(handle, { [AT_ONCE]: atOnce });

  /**
   * The answer, traced (`mcp-fleet:http.request`) and logged (`onRequest`, after the answer is made) when anyone
   * listens; waited for here only when there is a line to log.
   */
  function observed(request: Request, context: RequestContext, requestId: string): Promise<Response> {
    const started = performance.now();
    const seen: HttpRequestMessage = { request_id: requestId, method: request.method, route: null, account: null };
    const answered = Promise.resolve(
      httpRequestChannel.hasSubscribers ? traced(httpRequestChannel, seen, () => answer(request, context, requestId, seen), describeAnswer) : answer(request, context, requestId, seen),
    );
    if (onRequest === undefined) return answered;
    return answered.then((response) => {
      // One line per request: never a header, a body or a query (they may carry secrets), the route's template, not its path.
      onRequest({
        method: request.method,
        route: seen.route ?? null,
        status: response.status,
        duration_ms: Math.round((performance.now() - started) * 10) / 10,
        request_id: response.headers.get('x-request-id') ?? '',
        account: seen.account ?? null,
      });
      return response;
    });
  }

  /**
   * The answer. Each step goes on at once with what the step before gave at once, and after it when that was a promise;
   * a throw at any step, or a rejection anywhere after, is answered as the error it was (`x.fail`).
   */
  function answer(request: Request, context: RequestContext, requestId: string, seen: Seen | undefined): Response | Promise<Response> {
    // The adapters give the path; the URL is parsed only when they do not.
    const path = context.path ?? mountPath(new URL(request.url).pathname, deps.prefix);
    const x = new Exchange(request, context, requestId, path, deps, timestamp);
    try {
      const answered = answerAt(x, path, seen);
      return answered instanceof Promise ? answered.catch((cause: unknown) => x.fail(toFleetError(cause))) : answered;
    } catch (cause) {
      return x.fail(toFleetError(cause));
    }
  }

  function answerAt(x: Exchange, path: string | undefined, seen: Seen | undefined): Response | Promise<Response> {
    const { request } = x;
    if (path === undefined) return x.fail(routeNotFound(new URL(request.url).pathname));
    // Static files, public like any web page: the page signs in against the API with the key it is given. The API's
    // document too: it holds the routes' shapes, no data.
    const page = deps.dashboard?.(request, path) ?? deps.openapi?.(request, path, x.requestId);
    if (page !== undefined) return page;
    const routed = route(request, path);
    const keyless = keylessAnswer(x, routed, path);
    if (keyless !== undefined) return keyless;
    const identified = identify(x, routed);
    // Over the fleet's own memory the key is read at once: nothing to wait for.
    return identified instanceof Promise ? identified.then((principal) => identifiedAs(x, routed, path, seen, principal)) : identifiedAs(x, routed, path, seen, identified);
  }

  function identifiedAs(x: Exchange, routed: Routed, path: string, seen: Seen | undefined, principal: Principal | null): Response | Promise<Response> {
    // Not a key: an OAuth access token, when the fleet takes them (a valid key is never challenged).
    if (principal === null && deps.oauth !== undefined && !routed.keyless) return viaOAuth(x, deps.oauth, routed, path).then((outcome) => authenticated(x, routed, path, seen, principal, outcome));
    return authenticated(x, routed, path, seen, principal, undefined);
  }

  function authenticated(x: Exchange, routed: Routed, path: string, seen: Seen | undefined, identified: Principal | null, oauthOutcome: OAuthOutcome | undefined): Response | Promise<Response> {
    const principal = oauthOutcome !== undefined && 'principal' in oauthOutcome ? oauthOutcome.principal : identified;
    if (authChannel.hasSubscribers && (!routed.keyless || deps.authenticate !== undefined)) publishAuth(x.requestId, deps.authenticate !== undefined, principal, oauthOutcome);
    if (principal === null) return unidentified(x, routed, path);
    if (seen !== undefined) seen.account = principal.account;
    if (mcpDoor !== undefined && routed.mcp !== undefined) {
      if (seen !== undefined) seen.route = mcpRouteOf(routed.mcp);
      return answerMcp(mcpDoor, x, principal, routed.mcp);
    }
    if (limiter === undefined) return admitted(x, routed, path, seen, principal);
    const decided = admit(x, limiter, principal, routed.operationName);
    const onDecision = (decision: Result<RateLimitDecision | null, FleetError>): Response | Promise<Response> => {
      const refused = decision.isErr() ? x.fail(decision.error) : x.limited(decision.value);
      return refused ?? admitted(x, routed, path, seen, principal);
    };
    // `then` of a ResultAsync is its promise's.
    return decided instanceof ResultAsync ? (decided.then(onDecision) as Promise<Response>) : onDecision(decided);
  }

  function admitted(x: Exchange, routed: Routed, path: string, seen: Seen | undefined, principal: Principal): Response | Promise<Response> {
    const { request, context } = x;
    if (routed.segments.isErr()) return x.fail(routed.segments.error);
    if (routed.match?.kind !== 'found') return x.fail(unmatched(request, path, routed.match));
    const { operation, params } = routed.match;
    if (seen !== undefined) seen.route = operation.path;
    if (!hasScope(principal, operation.scope)) return x.fail(x.stepUp === undefined ? forbidden(operation) : insufficientScope(operation.scope, x.stepUp(operation.scope)));
    if (!operation.body) return operate(x, operation, params, principal, undefined);
    const limit = operation.bodyLimit === undefined ? deps.bodyLimit : Math.max(deps.bodyLimit, operation.bodyLimit);
    return readJsonBody(request, limit, context.bodyWithinLength === true, context.readBody).then((body) =>
      body.isErr() ? x.fail(body.error) : operate(x, operation, params, principal, body.value),
    );
  }

  function operate(x: Exchange, operation: Operation, params: OperationInput['params'], principal: Principal, body: unknown): Response | Promise<Response> {
    const { request } = x;
    // Only a route that declares a query reads one: no URL to take apart for the others (every create).
    const input: OperationInput = { principal, params, query: operation.schemas.query === undefined ? undefined : queryOf(request.url), body, request };
    const { charges } = operation;
    if (charges !== undefined && limiter !== undefined) input.charge = (count) => charge(x, limiter, principal, charges, count);
    const ran = run(operation, input);
    // Over the memory stores an operation may answer at once; anything else is waited for.
    return ran instanceof ResultAsync ? (ran.then((outcome) => respond(x, outcome)) as Promise<Response>) : respond(x, ran);
  }

  /** Route: the path's segments, and the MCP endpoint or the route and method they name. */
  function route(request: Request, path: string): Routed {
    const segments = splitPath(path);
    // `/mcp` and `/servers/{id}/mcp` go to the MCP endpoint after authentication; it counts each JSON-RPC message.
    const mcp = deps.mcp === undefined || segments.isErr() ? undefined : mcpTargetOf(segments.value);
    const match = mcp === undefined && segments.isOk() ? matchRoute(deps.routes, segments.value, request.method) : undefined;
    const operationName = match?.kind === 'found' ? match.operation.name : undefined;
    const authorization = request.headers.get('authorization');
    return { segments, mcp, match, operationName, authorization, keyless: authorization === null };
  }

  /**
   * Keyless answers. A discovery lookup (mcp-remote asks for `/mcp/.well-known/openid-configuration` at every start)
   * is answered here, with or without a credential, before any limiter; so is a CORS preflight without an
   * Authorization header, where nothing is guessed. No keyless request and no lookup counts against the address's 401
   * budget, so twenty agents starting behind one NAT, or a web page making its visitors' browsers send them, cannot
   * lock out the keys behind that address.
   */
  function keylessAnswer(x: Exchange, routed: Routed, path: string): Response | undefined {
    if (routed.segments.isErr()) return undefined;
    // With or without a credential: a client sends the token it holds (an expired one too) with its lookups.
    if (routed.segments.value.includes('.well-known')) return x.fail(routeNotFound(path));
    if (!routed.keyless || x.request.method !== 'OPTIONS') return undefined;
    const { match } = routed;
    const allow = routed.mcp !== undefined ? MCP_METHODS : match?.kind === 'method-not-allowed' ? match.allow.join(', ') : undefined;
    if (allow === undefined) return x.fail(routeNotFound(path));
    // No Access-Control-* headers: CORS stays off, so a browser sends nothing cross-origin after this preflight.
    return new Response(null, { status: 204, headers: { allow, 'x-request-id': x.requestId } });
  }

  /**
   * Authenticate: the principal the request acts for, or `null`. The key is checked first and the address's budget
   * spent only by failed keys: a valid key is never refused for its address. With a shared counter store (Redis) and
   * the built-in keys, the key's read and (for a key this process verified before) its admission are asked for at
   * once: one round trip, not two. A limiter deciding in this process has no round trip to save: then one after the other, as that is cheaper.
   */
  function identify(x: Exchange, routed: Routed): Principal | null | Promise<Principal | null> {
    if (limiter === undefined || deps.authenticate !== undefined || limiter.decidesInProcess) return authenticate(x.request, deps, routed.authorization);
    return identifyAndAdmit(x, limiter, routed);
  }

  async function identifyAndAdmit(x: Exchange, limiter: RateLimiter, routed: Routed): Promise<Principal | null> {
    x.early = await admitEarly(routed.authorization, limiter, deps.keys, routed.operationName, routed.mcp === undefined);
    if (x.early.verified.isErr()) throw x.early.verified.error;
    return x.early.verified.value;
  }

  /**
   * The answer to a request no one is authenticated for: 401. A key that failed counts against the address (with a
   * custom `authenticate`, any refusal: the credential may be anywhere); past the budget, 429 for the address. A
   * request without any credential guessed nothing.
   */
  async function unidentified(x: Exchange, routed: Routed, path: string): Promise<Response> {
    if (limiter !== undefined && (!routed.keyless || deps.authenticate !== undefined)) {
      const counted = await limiter.countFailure(x.context.clientAddress);
      if (counted.isErr()) return x.fail(counted.error);
      if (counted.value !== null && !counted.value.allowed) return x.limited(counted.value) as Response;
    }
    // With OAuth on, the MCP endpoint's 401 says where its Protected Resource Metadata is (RFC 9728), for agents to sign in.
    if (deps.oauth !== undefined && routed.mcp !== undefined) {
      const resource = resourceUrlOf(mountUrlOf(deps.oauth, new URL(x.request.url), path), path);
      return x.fail(unauthorized(challengeOf(deps.oauth, resource, bearerSecret(routed.authorization) !== undefined)));
    }
    return x.fail(unauthorized());
  }

  /** The OAuth outcome of the request's bearer token; the token is read from the `Authorization` header only, never the query. */
  async function viaOAuth(x: Exchange, oauth: OAuthResourceServer, routed: Routed, path: string): Promise<OAuthOutcome | undefined> {
    const token = bearerSecret(routed.authorization);
    if (token === undefined || !oauth.checks(token)) return undefined;
    const outcome = await oauth.verify(token, canonicalAudiences(oauth, path, routed.mcp !== undefined), limiter === undefined ? undefined : () => hasFailuresLeft(limiter, x.context.clientAddress));
    if ('principal' in outcome) {
      const { principal } = outcome;
      if (!isPrincipal(principal)) throw new Error('mcp-fleet: the oauth.principal function returned an invalid principal');
      const mountUrl = mountUrlOf(oauth, new URL(x.request.url), path);
      const resource = routed.mcp !== undefined ? resourceUrlOf(mountUrl, path) : mountUrl;
      x.stepUp = (missing) => insufficientScopeChallenge(resource, principal.scopes, missing);
    }
    return outcome;
  }

  /** Whether the address may still fail (a store error: no, and `unidentified` answers it). */
  async function hasFailuresLeft(limiter: RateLimiter, address: string | undefined): Promise<boolean> {
    const asked = limiter.failureBudget(address);
    const decision = asked instanceof ResultAsync ? await asked : asked;
    return decision.isOk() && (decision.value === null || (decision.value.allowed && decision.value.remaining > 0));
  }

  /**
   * Admit: every authenticated request counts against its tier, and against its operation's limit when it has one.
   * The early decision stands when it was made for the account and tier the key verified as now.
   */
  function admit(x: Exchange, limiter: RateLimiter, principal: Principal, operationName: string | undefined): Decided {
    const { early } = x;
    const hinted = early?.hint;
    return early?.admitted !== undefined && hinted !== undefined && hinted.account === principal.account && hinted.tier === principal.tier
      ? early.admitted
      : limiter.admit(principal, operationName);
  }

  /**
   * Counts `count` more against `operation`'s limit alone (the request was counted against its tier already): refused
   * whole, as a 429 with the refusal's headers. The answer's rate-limit headers follow this count when it leaves less
   * room than the request's own admission did.
   */
  function charge(x: Exchange, limiter: RateLimiter, principal: Principal, operation: string, count: number): Ran<void, FleetError> {
    return chain(limiter.admit(principal, operation, { requests: 0, ofOperation: count }), (decision): Result<void, FleetError> => {
      if (decision === null) return ok(undefined);
      const remaining = Number(x.limitHeaders['x-ratelimit-remaining'] ?? Number.POSITIVE_INFINITY);
      if (!decision.allowed || decision.remaining < remaining) x.limitHeaders = RateLimiter.headers(decision, deps.now);
      return decision.allowed ? ok(undefined) : err(RateLimiter.refusal(decision));
    });
  }

  /** Respond: the envelope of the operation's outcome. */
  function respond(x: Exchange, outcome: Result<Outcome, FleetError>): Response {
    if (outcome.isErr()) return x.fail(outcome.error);
    const { status, data, pagination } = outcome.value;
    return successResponse(status, data, x.meta(), pagination, x.limitHeaders, x.light);
  }
}

/** What the handler learns of a request while it answers it, for the request's log line and trace; `undefined` (nothing is kept) when neither is on. */
interface Seen {
  route?: string | null;
  account?: string | null;
}

/**
 * Run: the operation, traced (`mcp-fleet:operation`) when anyone listens. The traced run is a function of its own, so
 * that this one captures nothing (no context, no closure) on the road with no subscriber.
 */
function run(operation: Operation, input: OperationInput): ReturnType<Operation['run']> {
  if (!operationChannel.hasSubscribers) return operation.run(input);
  return tracedRun(operation, input);
}

function tracedRun(operation: Operation, input: OperationInput): ReturnType<Operation['run']> {
  const message: OperationMessage = { operation: operation.name, account: input.principal.account, via: 'http' };
  if (operation.path.startsWith('/servers/:id')) message.server_id = input.params.id as string;
  const tool = operation.name === 'tools.call' ? (input.body as { name?: unknown } | null)?.name : undefined;
  if (typeof tool === 'string') message.tool_name = tool;
  return traced(operationChannel, message, () => operation.run(input));
}

/** The answer's status on the request's trace; a 5xx is an error. */
function describeAnswer(message: HttpRequestMessage, response: unknown): void {
  const { status } = response as Response;
  message.status = status;
  if (status >= 500) message.outcome = 'error';
}

function publishAuth(requestId: string, custom: boolean, principal: Principal | null, oauth: OAuthOutcome | undefined): void {
  const message: AuthMessage = { request_id: requestId, method: oauth !== undefined ? 'oauth' : custom ? 'custom' : 'api_key', outcome: principal === null ? 'refused' : 'ok' };
  if (oauth?.issuer !== undefined) message.issuer = oauth.issuer;
  if (oauth !== undefined && 'refused' in oauth) message.reason = oauth.refused;
  if (principal !== null) {
    message.account = principal.account;
    if (principal.keyId !== undefined) message.key_id = principal.keyId;
  }
  authChannel.publish(message);
}

/** Scope: the 403 of a key without the operation's scope (an OAuth token's is `insufficientScope`, with its step-up challenge). */
const forbidden = (operation: Operation) =>
  new FleetError('FORBIDDEN', { message: `This API key lacks the "${operation.scope}" scope.`, details: { required_scope: operation.scope } });

/** The 404 of a path no route has, or the 405 of a method its route does not take. */
function unmatched(request: Request, path: string, match: RouteMatch | undefined): FleetError {
  if (match === undefined || match.kind !== 'method-not-allowed') return routeNotFound(path);
  return new FleetError('METHOD_NOT_ALLOWED', {
    message: `${request.method} is not allowed here; allowed: ${match.allow.join(', ')}.`,
    details: { method: request.method.slice(0, 32) },
    headers: { allow: match.allow.join(', ') },
  });
}

interface EarlyAsk {
  verified: Result<Principal | null, FleetError>;
  /** The principal the secret verified as last time, which `admitted` was asked for. */
  hint: Principal | undefined;
  admitted: Result<RateLimitDecision | null, FleetError> | undefined;
}

/**
 * The key's verification and, when the key verified before, its admission, asked together. The admission counts the
 * request before the key is known to be still valid: a key revoked meanwhile costs its account one count per request
 * in flight at the revocation, after which `verify` forgets its hint. `mayAdmit` is false for the MCP endpoint, which
 * counts the messages of a request itself.
 */
async function admitEarly(authorization: string | null, limiter: RateLimiter, keys: ApiKeys, operation: string | undefined, mayAdmit: boolean): Promise<EarlyAsk> {
  const secret = bearerSecret(authorization);
  const hash = secret === undefined ? undefined : hashSecret(secret);
  const hint = hash === undefined || !mayAdmit ? undefined : keys.lastVerified(hash);
  const [verified, admitted] = await Promise.all([
    secret === undefined ? (ok(null) as Result<Principal | null, FleetError>) : keys.verify(secret, hash),
    hint === undefined ? undefined : limiter.admit(hint, operation),
  ]);
  return { verified, hint, admitted };
}

/** The token of an `Authorization: Bearer …` header (`Routed.authorization`). */
function bearerSecret(header: string | null): string | undefined {
  return header === null ? undefined : BEARER.exec(header)?.[1];
}

/** The principal of the request; at once when the built-in keys are read from the fleet's own memory. */
function authenticate(request: Request, deps: HandlerDeps, authorization: string | null): Principal | null | Promise<Principal | null> {
  if (deps.authenticate !== undefined) return custom(request, deps.authenticate);
  const secret = bearerSecret(authorization);
  if (secret === undefined) return null;
  // The key's entry is read on every request: at once over the fleet's own memory, else through the store.
  const verified = deps.keys.verifyHash(hashSecret(secret));
  if (verified instanceof ResultAsync) return (async () => principalOrThrow(await verified))();
  return principalOrThrow(verified);
}

function principalOrThrow(verified: Result<Principal | null, FleetError>): Principal | null {
  if (verified.isErr()) throw verified.error;
  return verified.value;
}

async function custom(request: Request, authenticate: NonNullable<HandlerDeps['authenticate']>): Promise<Principal | null> {
  const principal = await authenticate(request);
  if (principal !== null && !isPrincipal(principal)) {
    throw new Error('mcp-fleet: the authenticate function returned an invalid principal');
  }
  return principal;
}

function isPrincipal(value: unknown): value is Principal {
  if (typeof value !== 'object' || value === null) return false;
  const p = value as Partial<Principal>;
  return (
    typeof p.account === 'string' &&
    p.account.length > 0 &&
    (TIERS as readonly unknown[]).includes(p.tier) &&
    (p.scopes === null || (Array.isArray(p.scopes) && p.scopes.every((s) => (SCOPES as readonly unknown[]).includes(s)))) &&
    // `tools`, `prompts`, `resources`: lists of glob strings, or null/absent for no list; anything else is the
    // embedder's bug, said at once.
    isPatternList(p.tools) &&
    isPatternList(p.prompts) &&
    isPatternList(p.resources) &&
    // The ceiling of the keys it may make (`POST /keys`): a time that cannot be read is the embedder's bug.
    (p.expiresAt === undefined || p.expiresAt === null || (typeof p.expiresAt === 'string' && !Number.isNaN(Date.parse(p.expiresAt))))
  );
}

const isPatternList = (value: unknown) =>
  value === undefined || value === null || (Array.isArray(value) && value.every((pattern) => typeof pattern === 'string'));

/** The query of a request URL, as `new URL(url).searchParams` reads it, without parsing the rest of the URL. */
export function queryOf(url: string): URLSearchParams {
  const start = url.indexOf('?');
  if (start === -1) return new URLSearchParams();
  const end = url.indexOf('#', start);
  return new URLSearchParams(end === -1 ? url.slice(start + 1) : url.slice(start + 1, end));
}

/** Decoded path segments; one trailing slash is forgiven. */
export function splitPath(path: string): Result<string[], FleetError> {
  const trimmed = path.length > 1 && path.endsWith('/') ? path.slice(0, -1) : path;
  const raw = trimmed.split('/').slice(1);
  // Without a `%` there is nothing to decode: the segments are the path's own.
  if (!trimmed.includes('%')) return ok(raw);
  const segments: string[] = [];
  for (const segment of raw) {
    try {
      segments.push(decodeURIComponent(segment));
    } catch {
      return err(invalidRequest([{ field: 'path', issue: 'is not a valid percent-encoded path' }]));
    }
  }
  return ok(segments);
}
