/**
 * How the tools of many servers share one namespace (CONTRACT "The MCP endpoint"): `{prefix}__{tool}`, where the
 * prefix is the server's name when it is a usable identifier, else its id; and how an API key's `tools` globs decide
 * which of those names exist for it. The MCP endpoint and the REST call route judge a call by the same rule.
 */

const PREFIX_PATTERN = /^[A-Za-z0-9_-]{1,64}$/;
export const NAMESPACE_SEPARATOR = '__';

/** A server's prefix: its name if it matches `^[A-Za-z0-9_-]{1,64}$`, else its id. */
export function toolPrefix(server: { id: string; name: string }): string {
  return PREFIX_PATTERN.test(server.name) ? server.name : server.id;
}

/** `{prefix}__{tool}`. */
export function namespacedTool(server: { id: string; name: string }, tool: string): string {
  return `${toolPrefix(server)}${NAMESPACE_SEPARATOR}${tool}`;
}

/** The most patterns a key may carry, and the longest one: they are matched on every listing and call. */
export const MAX_TOOL_PATTERNS = 100;
export const MAX_TOOL_PATTERN_LENGTH = 200;

const compiled = new Map<string, RegExp>();

/** A glob where `*` matches any run of characters (also none) and every other character stands for itself. */
function globToRegExp(pattern: string): RegExp {
  let regexp = compiled.get(pattern);
  if (regexp === undefined) {
    const source = pattern
      .split('*')
      .map((part) => part.replace(/[\\^$.|?+()[\]{}]/g, '\\$&'))
      .join('.*');
    regexp = new RegExp(`^${source}$`, 's');
    if (compiled.size >= 10_000) compiled.clear();
    compiled.set(pattern, regexp);
  }
  return regexp;
}

/**
 * Whether a key's allowlist lets it see and call the namespaced tool `name`. `null` or `undefined`: no list, every
 * tool. An empty list allows nothing.
 */
export function toolAllowed(patterns: readonly string[] | null | undefined, name: string): boolean {
  if (patterns === null || patterns === undefined) return true;
  return patterns.some((pattern) => globToRegExp(pattern).test(name));
}
