/**
 * How the tools of many servers share one namespace (CONTRACT "The MCP endpoint"): `{prefix}__{tool}`, where the
 * prefix is the server's name when it is a usable identifier, else its id; and how an API key's `tools` globs decide
 * which of those names exist for it. The MCP endpoint and the REST call route judge a call by the same rule.
 */

export { MAX_TOOL_PATTERN_LENGTH, MAX_TOOL_PATTERNS } from '../auth/tool-patterns.js';

/** The longest name that is its server's prefix (an id, 28 characters, is shorter). */
export const MAX_PREFIX_LENGTH = 64;
const PREFIX_PATTERN = new RegExp(`^[A-Za-z0-9_-]{1,${MAX_PREFIX_LENGTH}}$`);
export const NAMESPACE_SEPARATOR = '__';

/** Whether a server named `name` is known by its name in the namespace (`^[A-Za-z0-9_-]{1,64}$`), not its id. */
export function namesItsPrefix(name: string): boolean {
  return PREFIX_PATTERN.test(name);
}

/** A server's prefix: its name if it matches `^[A-Za-z0-9_-]{1,64}$`, else its id. */
export function toolPrefix(server: { id: string; name: string }): string {
  return namesItsPrefix(server.name) ? server.name : server.id;
}

/**
 * The prefixes `prefix` begins with, each ending where a `__` starts: `a__b__c` → `a`, `a__b`; `a___b` → `a`, `a_`.
 * A server whose prefix is one of them would share names with this one (`a` with tool `b__c__x` and `a__b__c` with tool
 * `x` are both `a__b__c__x`), so the registry refuses such a pair (`ServerRegistry`, SERVER_NAME_EXISTS).
 */
export function prefixesAbove(prefix: string): string[] {
  const above: string[] = [];
  for (let at = prefix.indexOf(NAMESPACE_SEPARATOR, 1); at !== -1; at = prefix.indexOf(NAMESPACE_SEPARATOR, at + 1)) above.push(prefix.slice(0, at));
  return above;
}

/** `{prefix}__{tool}`. */
export function namespacedTool(server: { id: string; name: string }, tool: string): string {
  return `${toolPrefix(server)}${NAMESPACE_SEPARATOR}${tool}`;
}

/**
 * A glob where `*` matches any run of characters (also none) and every other character stands for itself. Matched
 * without a regular expression: tool names come from tenants' servers, and `^a.*a.*a.*…b$` backtracks for as long as
 * the name is long to the power of the stars; this walk is at most pattern length × name length steps.
 */
export function globMatches(pattern: string, name: string): boolean {
  let p = 0;
  let n = 0;
  // The last `*` seen, and the name position it currently swallows up to: on a mismatch it takes one more character.
  let star = -1;
  let resume = 0;
  while (n < name.length) {
    if (p < pattern.length && pattern[p] === '*') {
      star = p++;
      resume = n;
    } else if (p < pattern.length && pattern[p] === name[n]) {
      p++;
      n++;
    } else if (star !== -1) {
      p = star + 1;
      n = ++resume;
    } else {
      return false;
    }
  }
  while (p < pattern.length && pattern[p] === '*') p++;
  return p === pattern.length;
}

/**
 * Whether a key's allowlist lets it see and call the namespaced tool `name`. `null` or `undefined`: no list, every
 * tool. An empty list allows nothing. The same match judges a key's `prompts` (over `{prefix}__{prompt}`) and
 * `resources` (over `{prefix}__{uri}`) lists.
 */
export function toolAllowed(patterns: readonly string[] | null | undefined, name: string): boolean {
  if (patterns === null || patterns === undefined) return true;
  return patterns.some((pattern) => globMatches(pattern, name));
}
