export const SCOPES = [
  'servers:read',
  'servers:write',
  'servers:health',
  'tool_calls:read',
  'tool_calls:write',
  'webhooks:manage',
  'keys:manage',
] as const;
export type Scope = (typeof SCOPES)[number];

/** The tiers, lowest first: a key never makes a key of a tier after its own here (`tierRank`). */
export const TIERS = ['free', 'pro', 'enterprise'] as const;
export type Tier = (typeof TIERS)[number];

/** A tier's place in `TIERS` (by name, not by its configured rate limit); -1 for anything else, which holds no rank. */
export const tierRank = (tier: string): number => (TIERS as readonly string[]).indexOf(tier);

/** Who a request acts for, as the built-in key check or the embedder's `authenticate` decides. */
export interface Principal {
  account: string;
  tier: Tier;
  /** `null`: every scope. */
  scopes: readonly Scope[] | null;
  /** The API key's public id, when the built-in key check authenticated the request. */
  keyId?: string;
  /**
   * When the credential stops working (ISO 8601): the key's `expires_at`. A key it makes (`POST /keys`) expires no
   * later. `null` or absent: never.
   */
  expiresAt?: string | null;
  /**
   * The key's tool allowlist: globs over namespaced tool names (`search__*`); only matching tools exist for this
   * principal, on `/mcp` and on `POST /servers/{id}/tools/call`. `null` or absent: every tool.
   */
  tools?: readonly string[] | null;
  /**
   * The key's prompt allowlist: globs over namespaced prompt names (`search__*`). `null` or absent: the prompts of
   * every server the key reaches (a server one of whose tools `tools` allows).
   */
  prompts?: readonly string[] | null;
  /**
   * The key's resource allowlist: globs over `{prefix}__{uri}` (`docs__file:///public/*`), and over
   * `{prefix}__{uriTemplate}` for templates. `null` or absent: the resources of every server the key reaches.
   */
  resources?: readonly string[] | null;
}

/** Whether the principal carries an allowlist (`tools`, `prompts` or `resources`): it sees part of its account only. */
export function isLimited(principal: Principal): boolean {
  return principal.tools != null || principal.prompts != null || principal.resources != null;
}

/**
 * Whether the principal holds `scope`. A scope list holds what it lists. No list holds every scope but two:
 * `keys:manage` is held only when a list names it (making keys is power that outlives the key: its keys stay when it
 * is revoked, so no key gains it by an upgrade or by omission), and a principal with an allowlist holds
 * `servers:write` only when its list names it: creating or renaming a server would let it move tools into (or out of)
 * its own patterns.
 */
export function hasScope(principal: Principal, scope: Scope): boolean {
  if (principal.scopes !== null) return principal.scopes.includes(scope);
  if (scope === 'keys:manage') return false;
  return scope !== 'servers:write' || !isLimited(principal);
}

/** Account ids are stable, printable and colon-free: they appear in `account:tier:secret` triples. */
export const ACCOUNT_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;
