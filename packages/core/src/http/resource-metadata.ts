import type { OAuthResourceServer } from '../auth/oauth.js';
import { mountPath } from './mount-path.js';

/** Where RFC 9728 puts a resource's metadata: this, then the resource's path. */
export const PROTECTED_RESOURCE_WELL_KNOWN = '/.well-known/oauth-protected-resource';

/** What an adapter knows about a well-known lookup beyond the Web `Request`. */
export interface WellKnownContext {
  /**
   * Where the host app mounted the fleet's API (`/api` for `app.use('/api', …)`), without the fleet's `prefix`; only
   * read when `oauth.resource` is not set (which names it). @default '' (the root)
   */
  mount?: string;
}

/**
 * Answers the fleet's documents at the host's root (`/.well-known/oauth-protected-resource…`), or `undefined` for any
 * other request (the adapter passes it on). They need no key and count against nothing.
 */
export type WellKnownHandler = (request: Request, context?: WellKnownContext) => Response | undefined;

/** The public URL of the fleet's mount (prefix included, no trailing slash): `oauth.resource`, else the request's own. */
export function mountUrlOf(oauth: OAuthResourceServer, requestUrl: URL, pathBelowMount: string): string {
  const configured = oauth.options.resource;
  if (configured !== undefined) return configured;
  const below = pathBelowMount === '/' ? '' : pathBelowMount;
  const pathname = requestUrl.pathname.endsWith(below) ? requestUrl.pathname.slice(0, requestUrl.pathname.length - below.length) : requestUrl.pathname;
  return `${requestUrl.origin}${pathname.replace(/\/+$/, '')}`;
}

/** The resource a path below the mount is (`{mount}/mcp`), its one trailing slash dropped. */
export function resourceUrlOf(mountUrl: string, pathBelowMount: string): string {
  const trimmed = pathBelowMount.length > 1 && pathBelowMount.endsWith('/') ? pathBelowMount.slice(0, -1) : pathBelowMount;
  return trimmed === '/' ? mountUrl : `${mountUrl}${trimmed}`;
}

/** The URL of a resource's metadata document: the well-known path inserted between its origin and its path. */
export function metadataUrlOf(resourceUrl: string): string {
  const url = new URL(resourceUrl);
  const path = url.pathname === '/' ? '' : url.pathname;
  return `${url.origin}${PROTECTED_RESOURCE_WELL_KNOWN}${path}`;
}

/**
 * The resource URLs a token's `aud` may name on this path beside the issuers' `audiences`: the path's own resource,
 * the mount's and its origin (what the root metadata names). Only from `oauth.resource`: never from a Host header.
 */
export function canonicalAudiences(oauth: OAuthResourceServer, pathBelowMount: string, mcp: boolean): string[] {
  const mountUrl = oauth.options.resource;
  if (mountUrl === undefined) return [];
  const origin = new URL(mountUrl).origin;
  const out = [mountUrl, origin, `${origin}/`];
  if (mcp) out.push(resourceUrlOf(mountUrl, pathBelowMount));
  return out;
}

/**
 * `WWW-Authenticate` of a 401 on the MCP endpoint: where its metadata is, and the scopes to ask for; when a bearer
 * token was sent and refused, also `error="invalid_token"` (RFC 6750 §3.1: a request without credentials gets no
 * error code), so that an agent knows to refresh or sign in again rather than that it sent nothing.
 */
export function challengeOf(oauth: OAuthResourceServer, resourceUrl: string, tokenRefused: boolean): string {
  const scope = oauth.options.scopesSupported.join(' ');
  return `Bearer resource_metadata="${metadataUrlOf(resourceUrl)}"${scope === '' ? '' : `, scope="${scope}"`}${tokenRefused ? ', error="invalid_token"' : ''}`;
}

/**
 * `WWW-Authenticate` of a 403 for a scope the token lacks (step-up authorization): the scopes it holds with the one it
 * lacks, so that a client asking for exactly these keeps what it had, and where the resource's metadata is, as on the
 * 401 (MCP authorization 2025-11-25, "Scope Challenge Handling").
 */
export function insufficientScopeChallenge(resourceUrl: string, held: readonly string[] | null, missing: string): string {
  const scope = [...new Set([...(held ?? []), missing])].join(' ');
  return `Bearer error="insufficient_scope", scope="${scope}", resource_metadata="${metadataUrlOf(resourceUrl)}"`;
}

/** The Protected Resource Metadata document (RFC 9728) of one resource. */
export function protectedResourceMetadata(oauth: OAuthResourceServer, resource: string): Record<string, unknown> {
  return {
    resource,
    authorization_servers: oauth.issuers,
    scopes_supported: [...oauth.options.scopesSupported],
    bearer_methods_supported: ['header'],
  };
}

/**
 * Serves the metadata of `{mount}{prefix}/mcp`, of `{mount}{prefix}/servers/{id}/mcp`, of the mount itself, and the
 * root form (`/.well-known/oauth-protected-resource`, whose resource is the origin). Any server id is answered alike:
 * the document reveals nothing of whether it exists.
 */
export function createWellKnownHandler(oauth: OAuthResourceServer, prefix: string): WellKnownHandler {
  const configuredPath = oauth.options.resource === undefined ? undefined : new URL(oauth.options.resource).pathname.replace(/\/+$/, '');
  return (request, context = {}) => {
    if (request.method !== 'GET' && request.method !== 'HEAD') return undefined;
    const url = new URL(request.url);
    if (url.pathname !== PROTECTED_RESOURCE_WELL_KNOWN && !url.pathname.startsWith(`${PROTECTED_RESOURCE_WELL_KNOWN}/`)) return undefined;
    const resourcePath = url.pathname.slice(PROTECTED_RESOURCE_WELL_KNOWN.length);
    const origin = oauth.options.resource === undefined ? url.origin : new URL(oauth.options.resource).origin;
    if (resourcePath === '' || resourcePath === '/') return document(oauth, origin, request.method);
    const mountedAt = configuredPath ?? `${normalizeMount(context.mount)}${prefix}`;
    const below = mountPath(resourcePath, mountedAt);
    if (below === undefined || !isResourcePath(below)) return undefined;
    return document(oauth, resourceUrlOf(`${origin}${mountedAt}`, below), request.method);
  };
}

/** `/` (the mount itself), `/mcp` or `/servers/{id}/mcp`. */
function isResourcePath(below: string): boolean {
  const segments = below.split('/').slice(1);
  if (segments.length === 1) return segments[0] === '' || segments[0] === 'mcp';
  return segments.length === 3 && segments[0] === 'servers' && (segments[1] ?? '') !== '' && segments[2] === 'mcp';
}

function normalizeMount(mount: string | undefined): string {
  if (mount === undefined || mount === '' || mount === '/') return '';
  const trimmed = mount.replace(/\/+$/, '');
  return trimmed.startsWith('/') ? trimmed : `/${trimmed}`;
}

function document(oauth: OAuthResourceServer, resource: string, method: string): Response {
  const body = JSON.stringify(protectedResourceMetadata(oauth, resource));
  // Public, and read by browser-based agents from another origin: CORS on for this document alone.
  const headers = { 'content-type': 'application/json', 'cache-control': 'public, max-age=300', 'access-control-allow-origin': '*' };
  return new Response(method === 'HEAD' ? null : body, { status: 200, headers });
}
