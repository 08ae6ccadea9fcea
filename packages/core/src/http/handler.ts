import { err, ok, okAsync, type Result, ResultAsync } from 'neverthrow';
import { type ApiKeys, hashSecret } from '../auth/api-keys.js';
import { hasScope, type Principal, SCOPES, TIERS } from '../auth/scopes.js';
import { FleetError, invalidRequest, toFleetError } from '../errors/fleet-error.js';
import { type RateLimitDecision, RateLimiter } from '../ratelimit/limiter.js';
import type { McpEndpoint } from '../mcp-endpoint/endpoint.js';
import type { DashboardHandler } from './dashboard.js';
import { mountPath } from './mount-path.js';
import { readJsonBody } from './body.js';
import { errorResponse, type Meta, requestIdOf, successResponse } from './envelope.js';
import { matchRoute, type Route } from './routes.js';
import { isoTimeOf } from '../util/iso-time.js';
import { okWith } from '../util/result.js';

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

/** What the handler learns of a request while it answers it, for the request's log line. */
interface Seen {
  route?: string;
  account?: string;
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
  /** Serves `/mcp` and `/servers/{id}/mcp` (docs/mcp-endpoint.md); `undefined`: those paths are unknown. */
  mcp?: McpEndpoint | undefined;
}

export type FleetHandler = (request: Request, context?: RequestContext) => Promise<Response>;

/** What `/mcp` and `/servers/{id}/mcp` answer (the `Allow` of a keyless `OPTIONS`). */
const MCP_METHODS = 'GET, POST, DELETE';

const BEARER = /^Bearer[ \t]+([\x21-\x7e]+)[ \t]*$/i;

const unauthorized = () => new FleetError('UNAUTHORIZED', { headers: { 'www-authenticate': 'Bearer' } });
const routeNotFound = (path: string) =>
  new FleetError('NOT_FOUND', { message: 'No such route.', details: { path: path.slice(0, 512) } });

/**
 * The whole HTTP contract in one framework-free function over the Web `Request`/`Response`.
 * Order: request id → route path → keyless `OPTIONS` (204) and `/.well-known/…` (404), uncounted → authentication
 * (401; a failed key counts against the address's 401 budget, 429 past it) → rate limits (429) → route (404/405) →
 * scope (403) → body (413/415/400) → operation. Nothing before authentication reads the body or reveals anything about the account.
 */
export function createHandler(deps: HandlerDeps): FleetHandler {
  const { onRequest } = deps;
  // The envelope's timestamp, made again only when the clock has moved (many answers share a millisecond).
  const isoAt = isoTimeOf();
  const timestamp = (): string => isoAt(deps.now());
  if (onRequest === undefined) return (request, context = {}) => answer(request, context, {});
  return async (request, context = {}) => {
    const started = performance.now();
    const seen: Seen = {};
    const response = await answer(request, context, seen);
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
  };

  async function answer(request: Request, context: RequestContext, seen: Seen): Promise<Response> {
    const requestId = requestIdOf(request.headers);
    const meta = (): Meta => ({ timestamp: timestamp(), request_id: requestId });
    // The adapters give the path; the URL is parsed only when they do not.
    const path = context.path ?? mountPath(new URL(request.url).pathname, deps.prefix);
    // Rate-limit headers of the binding limit, on every answer once the request is counted.
    let limitHeaders: Record<string, string> = {};
    const fail = (error: FleetError) => {
      if (error.status >= 500) deps.onError(error, { requestId, method: request.method, path: path ?? '' });
      return errorResponse(error, meta(), limitHeaders, light);
    };
    /** Applies a limiter decision: its headers from now on, and the 429 when it refuses. */
    const limited = (decision: RateLimitDecision | null): Response | undefined => {
      limitHeaders = RateLimiter.headers(decision, deps.now());
      return decision !== null && !decision.allowed ? fail(RateLimiter.refusal(decision)) : undefined;
    };
    const { limiter } = deps;
    const light = context.writesAnswer === true;

    try {
      if (path === undefined) return fail(routeNotFound(new URL(request.url).pathname));
      // Static files, public like any web page: the page signs in against the API with the key it is given.
      const page = deps.dashboard?.(request, path);
      if (page !== undefined) return page;
      const segments = splitPath(path);
      // `/mcp` and `/servers/{id}/mcp` go to the MCP endpoint after authentication; it counts each JSON-RPC message.
      const mcpTarget = deps.mcp === undefined || segments.isErr() ? undefined : mcpPath(segments.value);
      const match = mcpTarget === undefined && segments.isOk() ? matchRoute(deps.routes, segments.value, request.method) : undefined;
      const operationName = match?.kind === 'found' ? match.operation.name : undefined;
      // Without an Authorization header nothing is guessed: a CORS preflight or a discovery lookup (mcp-remote asks for
      // `/mcp/.well-known/openid-configuration` at every start) is answered here, before any limiter, and no keyless
      // request counts against the address's 401 budget, so a web page making its visitors' browsers send them cannot
      // lock out the keys behind that address.
      const keyless = request.headers.get('authorization') === null;
      if (keyless && segments.isOk()) {
        if (segments.value.includes('.well-known')) return fail(routeNotFound(path));
        if (request.method === 'OPTIONS') {
          const allow = mcpTarget !== undefined ? MCP_METHODS : match?.kind === 'method-not-allowed' ? match.allow.join(', ') : undefined;
          if (allow === undefined) return fail(routeNotFound(path));
          // No Access-Control-* headers: CORS stays off, so a browser sends nothing cross-origin after this preflight.
          return new Response(null, { status: 204, headers: { allow, 'x-request-id': requestId } });
        }
      }
      // The key is checked first and the address's budget spent only by failed keys: a valid key is never refused for
      // its address. With a shared counter store (Redis) and the built-in keys, the key's read and (for a key this
      // process verified before) its admission are asked for at once: one round trip, not two. A limiter deciding in
      // this process has no round trip to save: then one after the other, as that is cheaper.
      const early =
        limiter !== undefined && deps.authenticate === undefined && !limiter.decidesInProcess
          ? await admitEarly(request, limiter, deps.keys, operationName, mcpTarget === undefined)
          : undefined;
      let principal: Principal | null;
      if (early !== undefined) {
        if (early.verified.isErr()) throw early.verified.error;
        principal = early.verified.value;
      } else principal = await authenticate(request, deps);
      if (principal === null) {
        // A key that failed counts against the address (with a custom `authenticate`, any refusal: the credential may
        // be anywhere); past the budget, 429 for the address. A request without any credential guessed nothing.
        if (limiter !== undefined && (!keyless || deps.authenticate !== undefined)) {
          const counted = await limiter.countFailure(context.clientAddress);
          if (counted.isErr()) return fail(counted.error);
          if (counted.value !== null && !counted.value.allowed) return limited(counted.value) as Response;
        }
        return fail(unauthorized());
      }
      seen.account = principal.account;

      if (deps.mcp !== undefined && mcpTarget !== undefined) {
        seen.route = mcpTarget.serverId === undefined ? '/mcp' : '/servers/:id/mcp';
        if (mcpTarget.serverId !== undefined) {
          const missing = await deps.mcp.missingServer(principal.account, mcpTarget.serverId);
          if (missing !== undefined) {
            // Counted as any authenticated request is, like a REST 404.
            if (limiter !== undefined) {
              const decision = await limiter.admit(principal, undefined);
              if (decision.isErr()) return fail(decision.error);
              const refused = limited(decision.value);
              if (refused !== undefined) return refused;
            }
            return fail(missing);
          }
        }
        const response = await deps.mcp.handle(
          request,
          {
            principal,
            serverId: mcpTarget.serverId,
            admit: (batch) =>
              (limiter === undefined ? okAsync(null) : limiter.admit(principal, batch.ofOperation > 0 ? 'tools.call' : undefined, batch)).andThen(okWith((decision) => {
              limitHeaders = RateLimiter.headers(decision, deps.now());
              return decision;
            })),
          },
          (decision) => {
            const refusal = RateLimiter.refusal(decision);
            return Response.json(
              { jsonrpc: '2.0', error: { code: -32000, message: `${refusal.code}: ${refusal.message}`, data: refusal.details }, id: null },
              { status: 429, headers: { ...refusal.headers, ...limitHeaders } },
            );
          },
        );
        // The request id and rate-limit headers on every answer, as on the REST routes; an SSE body streams through.
        const headers = new Headers(response.headers);
        headers.set('x-request-id', requestId);
        for (const [name, value] of Object.entries(limitHeaders)) headers.set(name, value);
        return new Response(response.body, { status: response.status, statusText: response.statusText, headers });
      }
      if (limiter !== undefined) {
        // Every authenticated request counts against its tier, and against its operation's limit when it has one.
        // The early decision stands when it was made for the account and tier the key verified as now.
        const hinted = early?.hint;
        const decision =
          early?.admitted !== undefined && hinted !== undefined && hinted.account === principal.account && hinted.tier === principal.tier
            ? early.admitted
            : (limiter.admitNow(principal, operationName) ?? (await limiter.admit(principal, operationName)));
        if (decision.isErr()) return fail(decision.error);
        const refused = limited(decision.value);
        if (refused !== undefined) return refused;
      }
      if (segments.isErr()) return fail(segments.error);
      if (match === undefined || match.kind === 'not-found') return fail(routeNotFound(path));
      if (match.kind === 'method-not-allowed') {
        return fail(
          new FleetError('METHOD_NOT_ALLOWED', {
            message: `${request.method} is not allowed here; allowed: ${match.allow.join(', ')}.`,
            details: { method: request.method.slice(0, 32) },
            headers: { allow: match.allow.join(', ') },
          }),
        );
      }
      const { operation, params } = match;
      seen.route = operation.path;
      if (!hasScope(principal, operation.scope)) {
        return fail(
          new FleetError('FORBIDDEN', {
            message: `This API key lacks the "${operation.scope}" scope.`,
            details: { required_scope: operation.scope },
          }),
        );
      }

      let body: unknown;
      if (operation.body) {
        const read = await readJsonBody(request, deps.bodyLimit, context.bodyWithinLength === true);
        if (read.isErr()) return fail(read.error);
        body = read.value;
      }
      // Over the memory stores a listing answers at once; anything else is waited for.
      const ran = operation.run({ principal, params, query: queryOf(request.url), body, request });
      const outcome = ran instanceof ResultAsync ? await ran : ran;
      return outcome.match(
        ({ status, data, pagination }) => successResponse(status, data, meta(), pagination, limitHeaders, light),
        fail,
      );
    } catch (cause) {
      return fail(toFleetError(cause));
    }
  }
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
async function admitEarly(request: Request, limiter: RateLimiter, keys: ApiKeys, operation: string | undefined, mayAdmit: boolean): Promise<EarlyAsk> {
  const secret = bearerSecret(request);
  const hash = secret === undefined ? undefined : hashSecret(secret);
  const hint = hash === undefined || !mayAdmit ? undefined : keys.lastVerified(hash);
  const [verified, admitted] = await Promise.all([
    secret === undefined ? (ok(null) as Result<Principal | null, FleetError>) : keys.verify(secret, hash),
    hint === undefined ? undefined : limiter.admit(hint, operation),
  ]);
  return { verified, hint, admitted };
}

function bearerSecret(request: Request): string | undefined {
  const header = request.headers.get('authorization');
  return header === null ? undefined : BEARER.exec(header)?.[1];
}

async function authenticate(request: Request, deps: HandlerDeps): Promise<Principal | null> {
  if (deps.authenticate !== undefined) {
    const principal = await deps.authenticate(request);
    if (principal !== null && !isPrincipal(principal)) {
      throw new Error('mcp-fleet: the authenticate function returned an invalid principal');
    }
    return principal;
  }
  const secret = bearerSecret(request);
  if (secret === undefined) return null;
  const hash = hashSecret(secret);
  // Over the fleet's own memory the key's entry is read at once (still on every request); else through the store.
  const now = deps.keys.verifyNow(hash);
  if (now !== undefined) return now;
  const verified = await deps.keys.verify(secret, hash);
  if (verified.isErr()) throw verified.error;
  return verified.value;
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
    isPatternList(p.resources)
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

/** `/mcp` (every server of the account) or `/servers/{id}/mcp` (one). */
function mcpPath(segments: readonly string[]): { serverId?: string } | undefined {
  if (segments.length === 1 && segments[0] === 'mcp') return {};
  if (segments.length === 3 && segments[0] === 'servers' && segments[2] === 'mcp' && segments[1] !== undefined) return { serverId: segments[1] };
  return undefined;
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
