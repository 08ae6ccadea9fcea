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

function mapSecrets(id: string, config: ServerConfig, transform: Transform): ResultAsync<ServerConfig, FleetError> {
  const place = (field: string) => `server:${id}:${field}`;
  if (config.type === 'stdio') {
    const env = config.env;
    if (env === undefined) return okAsync(config);
    const names = Object.keys(env);
    return ResultAsync.combine(names.map((name) => transform(env[name] as string, place(`env:${name}`)))).andThen(okWith((values) => ({
      ...config,
      env: Object.fromEntries(names.map((name, i) => [name, values[i] as string])),
    })));
  }
  const auth = config.authentication;
  if (auth === undefined) return okAsync(config);
  if (auth.type === 'bearer') return transform(auth.token, place('token')).andThen(okWith((token) => ({ ...config, authentication: { ...auth, token } })));
  // oauth2 carries exactly one of `client_secret` and `private_key`.
  const { client_secret: secret, private_key: key } = auth;
  if (secret !== undefined) return transform(secret, place('client_secret')).andThen(okWith((client_secret) => ({ ...config, authentication: { ...auth, client_secret } })));
  if (key !== undefined) return transform(key, place('private_key')).andThen(okWith((private_key) => ({ ...config, authentication: { ...auth, private_key } })));
  return okAsync(config);
}

/** The configuration as stored: its secrets sealed under the current key (as they are without one). */
export function sealConfig(box: SecretBox, id: string, config: ServerConfig): ResultAsync<ServerConfig, FleetError> {
  return mapSecrets(id, config, (value, place) => box.seal(value, place));
}

/**
 * `sealConfig` at once: a configuration without secrets as it is, one with secrets sealed when the key check has
 * settled (`SecretBox.gateNow`); `undefined` while it runs: use `sealConfig` then.
 */
export function sealConfigNow(box: SecretBox, id: string, config: ServerConfig): Result<ServerConfig, FleetError> | undefined {
  const place = (field: string) => `server:${id}:${field}`;
  const seal = (value: string, field: string) => box.sealNow(value, place(field));
  if (config.type === 'stdio' ? config.env === undefined : config.authentication === undefined) return ok(config);
  const gate = box.gateNow();
  if (gate === undefined) return undefined;
  if (gate.isErr()) return err(gate.error);
  if (config.type === 'stdio') {
    const env = config.env as Record<string, string>;
    return ok({ ...config, env: Object.fromEntries(Object.keys(env).map((name) => [name, seal(env[name] as string, `env:${name}`)])) });
  }
  const auth = config.authentication as NonNullable<typeof config.authentication>;
  if (auth.type === 'bearer') return ok({ ...config, authentication: { ...auth, token: seal(auth.token, 'token') } });
  // oauth2 carries exactly one of `client_secret` and `private_key`.
  const { client_secret: secret, private_key: key } = auth;
  if (secret !== undefined) return ok({ ...config, authentication: { ...auth, client_secret: seal(secret, 'client_secret') } });
  if (key !== undefined) return ok({ ...config, authentication: { ...auth, private_key: seal(key, 'private_key') } });
  return ok(config);
}

/** The configuration as used to connect: its secrets opened. */
export function revealConfig(box: SecretBox, id: string, config: ServerConfig): ResultAsync<ServerConfig, FleetError> {
  return mapSecrets(id, config, (value, place) => box.open(value, place));
}

/** Whether any secret of the stored configuration is plaintext or under an older key. */
export function hasStaleSecrets(box: SecretBox, config: ServerConfig): boolean {
  if (config.type === 'stdio') return Object.values(config.env ?? {}).some((value) => box.isStale(value));
  const auth = config.authentication;
  if (auth === undefined) return false;
  const secrets = auth.type === 'bearer' ? [auth.token] : [auth.client_secret, auth.private_key];
  return secrets.some((value) => value !== undefined && box.isStale(value));
}
