import type { JsonText } from '../util/json-text.js';
import { z } from 'zod';
import { isoTimeSchema } from '../util/iso-time.js';
import { type Health, HEALTH_VALUES, type ServerAuthentication, type ServerConfig, SERVER_TYPES } from './schema.js';

/** A server as stored: its validated configuration (secrets included) and what the service observes. */
export interface ServerRecord {
  id: string;
  account: string;
  config: ServerConfig;
  status: 'active';
  health: Health;
  created_at: string;
  updated_at: string;
}

/** The eight fields of create and list responses. */
export const serverSummarySchema = z.strictObject({
  id: z.string(),
  name: z.string(),
  type: z.enum(SERVER_TYPES),
  /** `null` for a stdio server without one. */
  endpoint: z.string().nullable(),
  status: z.literal('active'),
  health: z.enum(HEALTH_VALUES),
  created_at: isoTimeSchema,
  updated_at: isoTimeSchema,
});

export type ServerSummary = z.output<typeof serverSummarySchema>;

/** `authentication` as responses show it: never `token`, `client_secret` nor `private_key`. */
export const redactedAuthenticationSchema = z.discriminatedUnion('type', [
  z.strictObject({ type: z.literal('bearer') }),
  z.strictObject({
    type: z.literal('oauth2'),
    client_id: z.string(),
    key_id: z.string().optional(),
    algorithm: z.string().optional(),
    token_url: z.string().optional(),
    scope: z.string().optional(),
  }),
]);

export type RedactedAuthentication = z.output<typeof redactedAuthenticationSchema>;

/** Get and update responses: the summary plus the configuration, secrets replaced by their shape. */
export const serverDetailSchema = z.strictObject({
  ...serverSummarySchema.shape,
  timeout: z.int(),
  retry: z.strictObject({ enabled: z.boolean(), max_attempts: z.int(), backoff: z.literal('exponential') }).nullable(),
  heartbeat: z.strictObject({ enabled: z.boolean(), interval: z.int() }).nullable(),
  command: z.string().nullable(),
  args: z.array(z.string()).nullable(),
  working_directory: z.string().nullable(),
  authentication: redactedAuthenticationSchema.nullable(),
  /** Names of the stdio `env` variables, sorted; their values never leave the service. */
  env_keys: z.array(z.string()).nullable().describe('Names of the stdio `env` variables, sorted; their values never leave the service.'),
});

export type ServerDetail = z.output<typeof serverDetailSchema>;

/** The seed's eight fields, the HTTP view of create and list: from a stored record, or from its detail. */
export function toSummary(server: ServerRecord | ServerDetail): ServerSummary {
  if ('config' in server) {
    const { config } = server;
    return {
      id: server.id,
      name: config.name,
      type: config.type,
      endpoint: config.endpoint ?? null,
      status: server.status,
      health: server.health,
      created_at: server.created_at,
      updated_at: server.updated_at,
    };
  }
  return {
    id: server.id,
    name: server.name,
    type: server.type,
    endpoint: server.endpoint,
    status: server.status,
    health: server.health,
    created_at: server.created_at,
    updated_at: server.updated_at,
  };
}

/** Summaries' JSON by the stored record they show: a stored record never changes, so its text is made once. */
const summaryTexts = new WeakMap<ServerRecord, JsonText<ServerSummary>>();

/**
 * The JSON text of a record's summary, as `GET /servers` lists it. `stored`: the record is the stored object itself
 * (`ListView`), which is never changed while it is stored (a write stores a new object), so its text is kept with it
 * and made again only for a new version; it goes when the record does. Any other record is stringified afresh.
 */
export function summaryJson(record: ServerRecord, stored: boolean): JsonText<ServerSummary> {
  if (!stored) return JSON.stringify(toSummary(record));
  let text = summaryTexts.get(record);
  if (text === undefined) summaryTexts.set(record, (text = JSON.stringify(toSummary(record))));
  return text;
}

export function redactAuthentication(auth: ServerAuthentication): RedactedAuthentication {
  if (auth.type === 'bearer') return { type: 'bearer' };
  const { client_id, key_id, algorithm, token_url, scope } = auth;
  return {
    type: 'oauth2',
    client_id,
    ...(key_id !== undefined && { key_id }),
    ...(algorithm !== undefined && { algorithm }),
    ...(token_url !== undefined && { token_url }),
    ...(scope !== undefined && { scope }),
  };
}

export function toDetail(record: ServerRecord): ServerDetail {
  const config = record.config;
  const auth = 'authentication' in config ? config.authentication : undefined;
  const stdio = config.type === 'stdio' ? config : undefined;
  // One literal of a fixed shape (no spread of a partial view): this runs for every server of every listing.
  return {
    id: record.id,
    name: config.name,
    type: config.type,
    endpoint: config.endpoint ?? null,
    status: record.status,
    health: record.health,
    created_at: record.created_at,
    updated_at: record.updated_at,
    timeout: config.timeout,
    // Copies of the objects: a detail shares nothing with the record it shows.
    retry: config.retry ? { ...config.retry } : null,
    heartbeat: config.type === 'websocket' && config.heartbeat ? { ...config.heartbeat } : null,
    command: stdio?.command ?? null,
    args: stdio?.args ? [...stdio.args] : null,
    working_directory: stdio?.working_directory ?? null,
    authentication: auth === undefined ? null : redactAuthentication(auth),
    env_keys: stdio?.env === undefined ? null : Object.keys(stdio.env).sort(),
  };
}
