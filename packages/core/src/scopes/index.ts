/**
 * `@mcp-fleet/core/scopes`: the names an API key is made of (its account's pattern, its tier, its scopes) without the
 * engine, for code that checks a configuration before it loads the fleet: the reference server refuses a bad
 * `MCP_FLEET_API_KEYS` this way before the SDKs, zod and undici are loaded. The same module as the root export.
 */
export { ACCOUNT_PATTERN, SCOPES, TIERS, type Scope, type Tier } from '../auth/scopes.js';
