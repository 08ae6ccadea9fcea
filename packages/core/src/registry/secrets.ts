import { err, ok, okAsync, type Result, ResultAsync } from 'neverthrow';
import type { FleetError } from '../errors/fleet-error.js';
import type { SecretBox } from '../util/secret-box.js';
import type { ServerConfig } from './schema.js';
import { okWith } from '../util/result.js';

/**
 * The secrets of a server configuration, field by field: `authentication.token`, `authentication.client_secret`,
 * `authentication.private_key` and each `env` value. The rest of the record (names, `env` names, endpoints) stays readable, so listings and
 * views never need a key. Each value is bound to its server and field (`server:<id>:env:<NAME>`).
 */
type Transform = (value: string, place: string) => ResultAsync<string, FleetError>;

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

function mapSecrets(id: string, config: ServerConfig, transform: Transform): ResultAsync<ServerConfig, FleetError> {
  const secrets = secretsOf(config);
  if (secrets.length === 0) return okAsync(config);
  return ResultAsync.combine(secrets.map(({ field, value }) => transform(value, placeOf(id, field)))).andThen(okWith((values) => withSecrets(config, values)));
}

/** The configuration as stored: its secrets sealed under the current key (as they are without one). */
export function sealConfig(box: SecretBox, id: string, config: ServerConfig): ResultAsync<ServerConfig, FleetError> {
  return mapSecrets(id, config, (value, place) => box.seal(value, place));
}

/**
 * `sealConfig` at once: a configuration without secrets as it is, one with secrets sealed when the key check has
 * settled (`SecretBox.gateNow`); `undefined` while it runs: use `sealConfig` then. The same fields as `sealConfig`
 * (`secretsOf`), so a secret field added there is sealed on both paths.
 */
export function sealConfigNow(box: SecretBox, id: string, config: ServerConfig): Result<ServerConfig, FleetError> | undefined {
  const secrets = secretsOf(config);
  if (secrets.length === 0) return ok(config);
  const gate = box.gateNow();
  if (gate === undefined) return undefined;
  if (gate.isErr()) return err(gate.error);
  return ok(withSecrets(config, secrets.map(({ field, value }) => box.sealNow(value, placeOf(id, field)))));
}

/** The configuration as used to connect: its secrets opened. */
export function revealConfig(box: SecretBox, id: string, config: ServerConfig): ResultAsync<ServerConfig, FleetError> {
  return mapSecrets(id, config, (value, place) => box.open(value, place));
}

/**
 * `revealConfig` at once: a configuration without secrets as it is, one with secrets opened when the key check has
 * settled (`SecretBox.openNow`); `undefined` while it runs: use `revealConfig` then.
 */
export function revealConfigNow(box: SecretBox, id: string, config: ServerConfig): Result<ServerConfig, FleetError> | undefined {
  const secrets = secretsOf(config);
  if (secrets.length === 0) return ok(config);
  const values: string[] = [];
  for (const { field, value } of secrets) {
    const opened = box.openNow(value, placeOf(id, field));
    if (opened === undefined) return undefined;
    if (opened.isErr()) return err(opened.error);
    values.push(opened.value);
  }
  return ok(withSecrets(config, values));
}

/** Whether any secret of the stored configuration is plaintext or under an older key. */
export function hasStaleSecrets(box: SecretBox, config: ServerConfig): boolean {
  return secretsOf(config).some(({ value }) => box.isStale(value));
}
