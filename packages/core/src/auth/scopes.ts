export const SCOPES = [
  'servers:read',
  'servers:write',
  'servers:health',
  'tool_calls:read',
  'tool_calls:write',
  'webhooks:manage',
] as const;
export type Scope = (typeof SCOPES)[number];

export const TIERS = ['free', 'pro', 'enterprise'] as const;
export type Tier = (typeof TIERS)[number];

/** Who a request acts for, as the built-in key check or the embedder's `authenticate` decides. */
export interface Principal {
  account: string;
  tier: Tier;
  /** `null`: every scope. */
  scopes: readonly Scope[] | null;
  /** The API key's public id, when the built-in key check authenticated the request. */
  keyId?: string;
  /**
   * The key's tool allowlist: globs over namespaced tool names (`search__*`); only matching tools exist for this
   * principal, on `/mcp` and on `POST /servers/{id}/tools/call`. `null` or absent: every tool.
   */
  tools?: readonly string[] | null;
}

export function hasScope(principal: Principal, scope: Scope): boolean {
  return principal.scopes === null || principal.scopes.includes(scope);
}

/** Account ids are stable, printable and colon-free: they appear in `account:tier:secret` triples. */
export const ACCOUNT_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;
