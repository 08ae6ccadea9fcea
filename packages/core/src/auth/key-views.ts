import { z } from 'zod';
import { isoTimeSchema } from '../util/iso-time.js';
import type { ApiKey, CreatedApiKey } from './api-keys.js';
import { SCOPES, TIERS } from './scopes.js';

const patterns = z.array(z.string()).nullable();

/**
 * An API key as `GET /keys` and the `key.created`/`key.revoked` events show it: never its secret nor its hash.
 * `description` is what `fleet.keys` calls the key's `name`.
 */
export const apiKeyViewSchema = z.strictObject({
  id: z.string(),
  account: z.string(),
  tier: z.enum(TIERS),
  /** `null`: every scope but `keys:manage`, and but `servers:write` for a key with an allowlist. */
  scopes: z.array(z.enum(SCOPES)).nullable(),
  tools: patterns,
  prompts: patterns,
  resources: patterns,
  description: z.string().nullable(),
  created_at: isoTimeSchema,
  expires_at: isoTimeSchema.nullable(),
  last_used_at: isoTimeSchema.nullable(),
  revoked_at: isoTimeSchema.nullable(),
});

export type ApiKeyView = z.output<typeof apiKeyViewSchema>;

/** What `POST /keys` answers: the key and its secret, shown this once. */
export const createdApiKeySchema = z.strictObject({ ...apiKeyViewSchema.shape, secret: z.string() });

export type CreatedApiKeyView = z.output<typeof createdApiKeySchema>;

/** The key with its `name` shown as `description`; an `ApiKey` holds nothing secret, so the rest is shown as it is. */
export function toKeyView({ name, ...shown }: ApiKey): ApiKeyView {
  return { ...shown, description: name };
}

export const toCreatedKeyView = ({ key, secret }: CreatedApiKey): CreatedApiKeyView => ({ ...toKeyView(key), secret });
