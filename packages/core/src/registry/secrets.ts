import { ok } from 'neverthrow';
import type { FleetError } from '../errors/fleet-error.js';
import type { SecretBox } from '../util/secret-box.js';
import type { ServerConfig } from './schema.js';
import { all, type Ran, chainMap } from '../util/result.js';

/**
 * The secrets of a server configuration, field by field: `authentication.token`, `authentication.client_secret`,
 * `authentication.private_key` and each `env` value. The rest of the record (names, `env` names, endpoints) stays readable, so listings and
 * views never need a key. Each value is bound to its server and field (`server:<id>:env:<NAME>`).
 */
type Transform = (value: string, place: string) => Ran<string, FleetError>;

/** Where a secret of server `id` is bound: `server:<id>:<field>`. */
const placeOf = (id: string, field: string) => `server:${id}:${field}`;

/** The secret values of a configuration, each with its field, in the order `withSecrets` takes them back. */
function secretsOf(config: ServerConfig): { field: string; value: string }[] {
  if (config.type === 'stdio') return Object.entries(config.env ?? {}).map(([name, value]) => ({ field: `env:${name}`, value }));
  const auth = config.authentication;
  if (auth === undefined) return [];
  if (auth.type === 'bearer') return [{ field: 'token', value: auth.token }];
  // oauth2 carries exactly one of `client_secret` and `private_key`.
  if (auth.client_secret !== undefined) return [{ field: 'client_secret', value: auth.client_secret }];
  if (auth.private_key !== undefined) return [{ field: 'private_key', value: auth.private_key }];
  return [];
}

/** `config` with the values of `secretsOf(config)` replaced by `values`, one for one. */
function withSecrets(config: ServerConfig, values: readonly string[]): ServerConfig {
  const [first = ''] = values;
  if (config.type === 'stdio') {
    const names = Object.keys(config.env ?? {});
    return { ...config, env: Object.fromEntries(names.map((name, i) => [name, values[i] as string])) };
  }
  const auth = config.authentication;
  if (auth === undefined) return config;
  if (auth.type === 'bearer') return { ...config, authentication: { ...auth, token: first } };
  if (auth.client_secret !== undefined) return { ...config, authentication: { ...auth, client_secret: first } };
  return { ...config, authentication: { ...auth, private_key: first } };
}

/** A configuration without secrets as it is; else each secret through `transform` (at once once the key check has settled). */
function mapSecrets(id: string, config: ServerConfig, transform: Transform): Ran<ServerConfig, FleetError> {
  const secrets = secretsOf(config);
  if (secrets.length === 0) return ok(config);
  return chainMap(all(secrets.map(({ field, value }) => transform(value, placeOf(id, field)))), (values) => withSecrets(config, values));
}

/** The configuration as stored: its secrets sealed under the current key (as they are without one). */
export function sealConfig(box: SecretBox, id: string, config: ServerConfig): Ran<ServerConfig, FleetError> {
  return mapSecrets(id, config, (value, place) => box.seal(value, place));
}

/** The configuration as used to connect: its secrets opened. */
export function revealConfig(box: SecretBox, id: string, config: ServerConfig): Ran<ServerConfig, FleetError> {
  return mapSecrets(id, config, (value, place) => box.open(value, place));
}

/** Whether any secret of the stored configuration is plaintext or under an older key. */
export function hasStaleSecrets(box: SecretBox, config: ServerConfig): boolean {
  return secretsOf(config).some(({ value }) => box.isStale(value));
}
