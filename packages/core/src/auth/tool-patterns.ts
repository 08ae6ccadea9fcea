import { z } from 'zod';

/**
 * The shape of an API key's allowlists: `tools` (globs over namespaced tool names, `search__*`), `prompts` (over
 * `{prefix}__{prompt}`) and `resources` (over `{prefix}__{uri}`, and `{prefix}__{uriTemplate}` for templates), all
 * three matched by the one glob of toolcalls/tool-names.ts (`toolAllowed`). Kept in auth/, where keys are validated.
 */

/** The most patterns a key may carry, and the longest one: they are matched on every listing and call. */
export const MAX_TOOL_PATTERNS = 100;
export const MAX_TOOL_PATTERN_LENGTH = 200;

/**
 * Printable characters, no whitespace and no `|`: `|` separates patterns in `MCP_FLEET_API_KEYS` and the keys CLI, and
 * a space or an invisible character in a pattern is a typo that would silently match nothing. (`*`, not `+`: an empty
 * pattern is `min(1)`'s to refuse, in one issue.)
 */
const TOOL_PATTERN = /^[^\s|\p{C}]*$/u;

export const toolPatternSchema = z
  .string()
  .min(1)
  .max(MAX_TOOL_PATTERN_LENGTH)
  .refine((pattern) => TOOL_PATTERN.test(pattern), 'must be printable characters without spaces or "|"');

/** A key's `tools`, `prompts` or `resources`: 1 to MAX_TOOL_PATTERNS patterns, or `null` for no list. */
export const toolPatternsSchema = z.array(toolPatternSchema).min(1).max(MAX_TOOL_PATTERNS).nullable();
