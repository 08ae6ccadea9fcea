import { err, ok, type Result } from 'neverthrow';
import { z } from 'zod';
import { FleetError, invalidRequest } from '../errors/fleet-error.js';
import { globMatches } from '../toolcalls/tool-names.js';
import { hasScope, type Principal, SCOPES, type Scope, TIERS, type Tier, tierRank } from './scopes.js';
import { toolPatternsSchema } from './tool-patterns.js';

/**
 * What a key asks for when it makes a key of its own account (`POST /keys`, `fleet.keys.createFor`): never more than
 * it holds itself (`grantedKey`). The rules zod cannot say are in the descriptions, which the OpenAPI document shows.
 */
export const keyRequestSchema = z.strictObject({
  tier: z.enum(TIERS).optional().describe('`free` < `pro` < `enterprise`; at most the creating key\'s tier. Default: the creating key\'s tier.'),
  scopes: z
    .array(z.enum(SCOPES))
    .min(1)
    .optional()
    .describe('Only scopes the creating key holds. Default: the creating key\'s scopes but `keys:manage`, which a key gets only when its list names it.'),
  tools: toolPatternsSchema
    .optional()
    .describe(
      'Tool allowlist: globs (`*`) over namespaced tool names. With a creating key that has an allowlist, each pattern must lie within one of its patterns (its `*`s matched by their `*`s); `null` (every tool) only without one. Default: the creating key\'s allowlist.',
    ),
  expires_at: z.iso
    .datetime({ offset: true })
    .optional()
    .describe('ISO 8601, in the future, at most 10 years ahead, and no later than the creating key\'s own expiry. Default: the creating key\'s expiry (none: never).'),
  description: z.string().min(1).max(100).optional().describe('What the key is for, 1–100 characters.'),
});

export type KeyRequest = z.input<typeof keyRequestSchema>;

/** A key's powers, as `grantedKey` settles them: what the new key is stored with. */
export interface GrantedKey {
  account: string;
  tier: Tier;
  scopes: Scope[];
  tools: string[] | null;
  prompts: string[] | null;
  resources: string[] | null;
  expires_at?: string;
  name?: string;
}

/**
 * The key `creator` may make for `request`: fields left out are the creator's own (its scopes without `keys:manage`),
 * and nothing may exceed what it holds: a scope it lacks, a tool pattern outside its allowlist, a higher tier, a
 * later expiry are each a 403 `FORBIDDEN` naming what is not held. Its prompt and resource allowlists pass on as they
 * are (the request cannot name them), so the new key never reaches a prompt or resource the creator does not.
 */
export function grantedKey(creator: Principal, request: z.output<typeof keyRequestSchema>): Result<GrantedKey, FleetError> {
  // A tier outside the ranked ones (only an embedder's `authenticate` could make one) holds no rank: refused.
  const creatorRank = tierRank(creator.tier);
  const tier = request.tier ?? creator.tier;
  if (creatorRank === -1 || tierRank(tier) > creatorRank) {
    return err(refused(`This API key is of tier "${creator.tier}": it cannot make a key of tier "${tier}".`, { tier }));
  }

  let scopes: Scope[];
  if (request.scopes === undefined) {
    scopes = SCOPES.filter((scope) => scope !== 'keys:manage' && hasScope(creator, scope));
    if (scopes.length === 0) return err(invalidRequest([{ field: 'scopes', issue: 'is required: this API key holds no scope to pass on but keys:manage' }]));
  } else {
    scopes = [...new Set(request.scopes)];
    const lacking = scopes.filter((scope) => !hasScope(creator, scope));
    if (lacking.length > 0) {
      return err(refused(`This API key does not hold ${list(lacking, 'scope')}: a key can only pass on scopes it holds.`, { scopes: lacking }));
    }
  }

  const held = creator.tools ?? null;
  const tools = request.tools === undefined ? held : request.tools;
  const outside = toolsOutside(held, tools);
  if (outside.length > 0) {
    const what = tools === null ? 'every tool (no allowlist)' : list(outside, 'tool pattern');
    return err(refused(`This API key's tool allowlist does not cover ${what}: a key can only pass on tools it may call.`, { tools: outside }));
  }

  const ceiling = creator.expiresAt ?? null;
  const expires = request.expires_at ?? ceiling ?? undefined;
  // Written to refuse when either cannot be read (an embedder's principal with a malformed `expiresAt`).
  if (expires !== undefined && ceiling !== null && !(Date.parse(expires) <= Date.parse(ceiling))) {
    return err(refused(`This API key expires at ${ceiling}: a key it makes cannot expire later.`, { expires_at: ceiling }));
  }

  return ok({
    account: creator.account,
    tier,
    scopes,
    tools: tools === null ? null : [...tools],
    prompts: creator.prompts == null ? null : [...creator.prompts],
    resources: creator.resources == null ? null : [...creator.resources],
    ...(expires !== undefined && { expires_at: expires }),
    ...(request.description !== undefined && { name: request.description }),
  });
}

/**
 * The requested patterns no held pattern covers; `null` requested stands for every tool, covered only by no list.
 * `q` lies within `p` exactly when `p` matches `q` read as a name whose `*`s only `p`'s `*` can match (`p`'s other
 * characters match themselves, never `*`): then every name `q` matches, `p` matches too. And no more is allowed by a
 * union: a name made from `q` by one character no pattern holds in place of each `*` is matched by some held
 * pattern only if that pattern covers `q` alone. So the check is exact, never a guess.
 */
export function toolsOutside(held: readonly string[] | null, requested: readonly string[] | null): string[] {
  if (held === null) return [];
  if (requested === null) return ['*'];
  return requested.filter((pattern) => !held.some((own) => globMatches(own, pattern)));
}

const refused = (message: string, details: Record<string, unknown>) => new FleetError('FORBIDDEN', { message, details });

const list = (items: readonly string[], noun: string) => `the ${noun}${items.length === 1 ? '' : 's'} ${items.map((item) => `"${item}"`).join(', ')}`;
