import { err, ok, type Result } from 'neverthrow';
import { z } from 'zod';
import { ERROR_HINTS } from '../errors/codes.js';
import { FleetError, invalidRequest } from '../errors/fleet-error.js';
import { type FieldRules, fieldIssues, objectBody, parse } from '../validation/parse.js';
import { isPlainObject } from '../validation/zod-issues.js';
import { algorithmsFor, JWT_ALGORITHMS, readPrivateKey } from './private-key.js';
import { commandIssue, envNameIssue, type StdioCommandRule } from './stdio-policy.js';

export const SERVER_TYPES = ['http', 'websocket', 'stdio'] as const;
export type ServerType = (typeof SERVER_TYPES)[number];

export const HEALTH_VALUES = ['unknown', 'healthy', 'degraded', 'unhealthy', 'auth_failed'] as const;
export type Health = (typeof HEALTH_VALUES)[number];

export const DEFAULT_TIMEOUT_MS = 30_000;
export const MAX_NAME_LENGTH = 100;
const MAX_TIMEOUT_MS = 300_000;

/** The endpoint schemes of each network type: TLS only under `requireTls`. The schemas and `plainConfig` both read it. */
function endpointSchemes(requireTls: boolean): Readonly<Record<'http' | 'websocket', readonly string[]>> {
  return requireTls ? { http: ['https:'], websocket: ['wss:'] } : { http: ['http:', 'https:'], websocket: ['ws:', 'wss:'] };
}

/** Fields the service sets; a body that names one is refused. */
export const READ_ONLY_FIELDS = ['id', 'status', 'health', 'created_at', 'updated_at', 'env_keys'] as const;

/** The configuration fields each type accepts. A field of another type is refused with 400. */
export const TYPE_FIELDS: Readonly<Record<ServerType, readonly string[]>> = {
  http: ['name', 'type', 'endpoint', 'authentication', 'timeout', 'retry'],
  websocket: ['name', 'type', 'endpoint', 'authentication', 'timeout', 'retry', 'heartbeat'],
  stdio: ['name', 'type', 'endpoint', 'command', 'args', 'env', 'working_directory', 'timeout', 'retry'],
};

const ALL_FIELDS = new Set(Object.values(TYPE_FIELDS).flat());

// Control characters make names and paths ambiguous in logs and terminals.
// eslint-disable-next-line no-control-regex
const CONTROL_CHARS = /[\u0000-\u001f\u007f]/;

export interface SchemaOptions {
  /** Only `https:` and `wss:` endpoints are valid. @default false */
  requireTls?: boolean;
  /** Commands a stdio server may run, with their pinned arguments; empty means stdio servers cannot be created. @default [] */
  stdioCommands?: readonly StdioCommandRule[];
  /** With a list, the only env names a stdio server may set; without, every name but the steering ones. @default none */
  stdioEnvAllow?: readonly string[];
}

const NO_ISSUES: readonly string[] = [];

/**
 * What is wrong with `value` as a URL field (nothing: an empty list): the rule of every URL the schemas take, and of
 * the endpoint `plainConfig` checks without zod, written once.
 */
function urlIssues(value: string, allowed: readonly string[] | 'any'): readonly string[] {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return ['must be a valid absolute URL'];
  }
  const schemeOk = allowed === 'any' || allowed.includes(url.protocol);
  const bare = url.username === '' && url.password === '';
  if (schemeOk && bare) return NO_ISSUES;
  const issues: string[] = [];
  if (!schemeOk) issues.push(`must use the ${(allowed as readonly string[]).map((s) => s.slice(0, -1)).join(' or ')} scheme`);
  if (!bare) issues.push('must not carry credentials; use the authentication object');
  return issues;
}

function urlField(allowed: readonly string[] | 'any') {
  const schemes = allowed === 'any' ? 'any scheme' : `the ${allowed.map((s) => s.slice(0, -1)).join(' or ')} scheme`;
  return z
    .string()
    .superRefine((value, ctx) => {
      for (const message of urlIssues(value, allowed)) ctx.addIssue({ code: 'custom', message });
    })
    .describe(`An absolute URL of ${schemes}, without credentials (use the authentication object).`);
}

const text = (max: number) =>
  z
    .string()
    .min(1)
    .max(max)
    .refine((value) => !CONTROL_CHARS.test(value), 'must not contain control characters')
    .describe('Without control characters.');

const retrySchema = z.strictObject({
  enabled: z.boolean(),
  max_attempts: z.number().int().min(1).max(10).default(3),
  backoff: z.literal('exponential').default('exponential'),
});

const heartbeatSchema = z.strictObject({
  enabled: z.boolean(),
  interval: z.number().int().min(1000).max(3_600_000).default(30_000),
});

const authenticationSchema = z.discriminatedUnion('type', [
  z.strictObject({ type: z.literal('bearer'), token: z.string().min(1).max(8192) }),
  z
    .strictObject({
      type: z.literal('oauth2'),
      client_id: text(1024),
      // Exactly one of the two client authentications: a secret (client_secret_basic/post), or a private key that
      // signs a JWT assertion (private_key_jwt, RFC 7523). Both are secrets: write-only, never in a response.
      client_secret: z.string().min(1).max(8192).optional(),
      private_key: z.string().min(1).max(16_384).optional(),
      key_id: text(256).optional(),
      algorithm: z.enum(JWT_ALGORITHMS).optional(),
      token_url: urlField(['http:', 'https:']).optional(),
      scope: text(1024).optional(),
    })
    .superRefine((auth, ctx) => {
      const issue = (path: string, message: string) => ctx.addIssue({ code: 'custom', path: [path], message });
      if (auth.client_secret === undefined && auth.private_key === undefined) return issue('client_secret', 'is required (or private_key, for private_key_jwt)');
      if (auth.client_secret !== undefined && auth.private_key !== undefined) return issue('private_key', 'must not be set together with client_secret: give one of them');
      if (auth.private_key === undefined) {
        if (auth.key_id !== undefined) issue('key_id', 'applies only with private_key');
        if (auth.algorithm !== undefined) issue('algorithm', 'applies only with private_key');
        return;
      }
      const key = readPrivateKey(auth.private_key);
      if (key === undefined) return issue('private_key', 'must be a private key in PEM (PKCS#8, PKCS#1 or SEC1) or a JWK as a JSON string');
      const usable = algorithmsFor(key);
      if (usable.length === 0) return issue('private_key', 'must be an RSA, EC (P-256, P-384, P-521) or Ed25519 key');
      if (auth.algorithm !== undefined && !usable.includes(auth.algorithm)) issue('algorithm', `does not fit this key: use ${usable.join(', ')}`);
    })
    .describe(
      'Exactly one of client_secret (client_secret_basic/post) and private_key (private_key_jwt: a PEM or JWK RSA, EC or Ed25519 private key; key_id and algorithm apply only with it, and algorithm must fit the key).',
    ),
]);

function envSchema(envAllow: readonly string[] | undefined) {
  return z
    .record(
      z
        .string()
        .refine((name) => /^[A-Za-z_][A-Za-z0-9_]*$/.test(name), 'has an invalid variable name')
        .max(256)
        .superRefine((name, ctx) => {
          const issue = envNameIssue(name, envAllow);
          if (issue !== undefined) ctx.addIssue({ code: 'custom', message: issue });
        }),
      z.string().max(32_768),
    )
    .refine((env) => Object.keys(env).length <= 100, 'must have at most 100 variables')
    .describe('At most 100 variables; names match ^[A-Za-z_][A-Za-z0-9_]*$, are not ones that steer the process (LD_PRELOAD, NODE_OPTIONS…) and are on the env allowlist when there is one.');
}

function buildSchemas(options: SchemaOptions) {
  const schemes = endpointSchemes(options.requireTls === true);
  const stdioCommands = options.stdioCommands ?? [];
  const common = {
    name: text(MAX_NAME_LENGTH),
    timeout: z.number().int().min(1).max(MAX_TIMEOUT_MS).default(DEFAULT_TIMEOUT_MS),
    retry: retrySchema.optional(),
  };
  return {
    http: z.strictObject({
      ...common,
      type: z.literal('http'),
      endpoint: urlField(schemes.http),
      authentication: authenticationSchema.optional(),
    }),
    websocket: z.strictObject({
      ...common,
      type: z.literal('websocket'),
      endpoint: urlField(schemes.websocket),
      authentication: authenticationSchema.optional(),
      heartbeat: heartbeatSchema.optional(),
    }),
    stdio: z.strictObject({
      ...common,
      type: z.literal('stdio'),
      endpoint: urlField('any').optional(),
      command: text(4096),
      args: z.array(z.string().max(32_768)).max(256).optional(),
      env: envSchema(options.stdioEnvAllow).optional(),
      working_directory: text(4096)
        .refine((dir) => dir.startsWith('/') || /^[A-Za-z]:[\\/]/.test(dir), 'must be an absolute path')
        .optional(),
    }).superRefine(({ command, args }, ctx) => {
      // The allowlist judges the command with its arguments: an entry may pin them.
      const issue = commandIssue(stdioCommands, command, args);
      if (issue === 'command') {
        const message = stdioCommands.length === 0 ? 'is not allowed: stdio servers are disabled on this service' : 'is not on the allowlist of stdio commands';
        ctx.addIssue({ code: 'custom', path: ['command'], message });
      } else if (issue === 'args') {
        ctx.addIssue({ code: 'custom', path: ['args'], message: 'are not the arguments the allowlist of stdio commands pins for this command' });
      }
      // Judged as soon as command and args are readable, so a refused command is reported together with the body's
      // other mistakes rather than only once they are fixed (zod skips object checks after any field issue).
    }, { when: ({ value }) => isPlainObject(value) && typeof value.command === 'string' && (value.args === undefined || isStringArray(value.args)) })
      .describe('command (with its args, when the allowlist pins them) must be on the service\'s allowlist of stdio commands; none is allowed unless configured.'),
  };
}

/**
 * The create body, one schema: the configuration of each type, told apart by `type`. `ServerValidator.config` judges a
 * body with the member its `type` names (these very objects), adding the field rules zod cannot phrase.
 */
function createBodySchema(schemas: ReturnType<typeof buildSchemas>) {
  return z.discriminatedUnion('type', [schemas.http, schemas.websocket, schemas.stdio]);
}

/**
 * The update body: any field of any type, `null` clearing it. Declared for the route table from the very field
 * schemas of the create body; the rule itself is `ServerValidator.update`, which judges the merged configuration with
 * the create body (schema.test.ts checks the two agree).
 */
function updateBodySchema(schemas: ReturnType<typeof buildSchemas>) {
  const fields: Record<string, z.ZodType> = {};
  for (const member of [schemas.http, schemas.websocket, schemas.stdio]) {
    // `type` and `endpoint` differ by type: any type, and a URL whose scheme the merged configuration's type judges.
    for (const [name, field] of Object.entries(member.shape)) fields[name] ??= name === 'type' ? z.enum(SERVER_TYPES) : name === 'endpoint' ? urlField('any') : field;
  }
  const shape = Object.fromEntries(Object.entries(fields).map(([name, field]) => [name, field.nullable().optional()]));
  return z
    .strictObject(shape)
    .describe(
      'Names at least one field. The fields given replace the stored ones (nested objects whole), null clears one, and the result must be a whole valid configuration of its type (the create body).',
    );
}

export type ServerSchemas = ReturnType<typeof buildSchemas>;
export type HttpServerConfig = z.output<ServerSchemas['http']>;
export type WebSocketServerConfig = z.output<ServerSchemas['websocket']>;
export type StdioServerConfig = z.output<ServerSchemas['stdio']>;
/** A validated server configuration, secrets included: what is stored, never what is returned. */
export type ServerConfig = HttpServerConfig | WebSocketServerConfig | StdioServerConfig;
export type ServerAuthentication = z.output<typeof authenticationSchema>;
export type RetryConfig = z.output<typeof retrySchema>;
export type HeartbeatConfig = z.output<typeof heartbeatSchema>;

/** The create body as a caller writes it (defaults optional). */
export type ServerInput =
  | z.input<ServerSchemas['http']>
  | z.input<ServerSchemas['websocket']>
  | z.input<ServerSchemas['stdio']>;

export type ServerPatch = { [K in keyof ServerInputFields]?: ServerInputFields[K] | null };
type ServerInputFields = {
  name: string;
  type: ServerType;
  endpoint: string;
  authentication: z.input<typeof authenticationSchema>;
  timeout: number;
  retry: z.input<typeof retrySchema>;
  heartbeat: z.input<typeof heartbeatSchema>;
  command: string;
  args: string[];
  env: Record<string, string>;
  working_directory: string;
};

const isServerType = (value: unknown): value is ServerType => SERVER_TYPES.includes(value as ServerType);

/** Top-level field checks zod cannot phrase well: read-only, another type's field, unknown. */
function fieldRules(type: ServerType | undefined): FieldRules {
  return {
    readOnly: READ_ONLY_FIELDS,
    fieldIssue: (key) => {
      if (!ALL_FIELDS.has(key)) return 'is not a known field';
      if (type !== undefined && !TYPE_FIELDS[type].includes(key)) return `does not apply to ${type} servers`;
      return undefined;
    },
  };
}

/** The fields of the usual create body (`plainConfig`). */
const PLAIN_FIELDS = new Set(['name', 'type', 'endpoint', 'timeout']);

/** Validates server configurations under the options of one fleet. */
export class ServerValidator {
  private readonly schemas: ServerSchemas;
  /** The create body as the route table declares it; `config` judges with its members. */
  readonly createBody: ReturnType<typeof createBodySchema>;
  /** The update body as the route table declares it (`updateBodySchema`). */
  readonly updateBody: ReturnType<typeof updateBodySchema>;
  private readonly stdioCommands: readonly StdioCommandRule[];
  /** The endpoint schemes of each network type (`endpointSchemes`). */
  private readonly schemes: Readonly<Record<'http' | 'websocket', readonly string[]>>;

  constructor(options: SchemaOptions = {}) {
    this.schemas = buildSchemas(options);
    this.createBody = createBodySchema(this.schemas);
    this.updateBody = updateBodySchema(this.schemas);
    this.stdioCommands = options.stdioCommands ?? [];
    this.schemes = endpointSchemes(options.requireTls === true);
  }

  /**
   * The configuration of the usual create body, checked without zod: an http or websocket server given by `name`,
   * `type`, `endpoint` and perhaps `timeout`, each valid. `undefined` for any other body, valid or not: the schema
   * judges it then, and says what is wrong. This accepts nothing the schema refuses and answers what it answers (the
   * cross-check in schema.test.ts), in a fifth of the time: a create is the hottest write there is.
   */
  plainConfig(fields: Record<string, unknown>): ServerConfig | undefined {
    if (Object.getPrototypeOf(fields) !== Object.prototype) return undefined;
    let count = 0;
    for (const field in fields) {
      if (!PLAIN_FIELDS.has(field)) return undefined;
      count++;
    }
    const { name, type, endpoint, timeout } = fields;
    if (count !== (timeout === undefined ? 3 : 4) || (type !== 'http' && type !== 'websocket')) return undefined;
    if (typeof name !== 'string' || name.length === 0 || name.length > MAX_NAME_LENGTH || CONTROL_CHARS.test(name)) return undefined;
    if (timeout !== undefined && !(typeof timeout === 'number' && Number.isInteger(timeout) && timeout >= 1 && timeout <= MAX_TIMEOUT_MS)) return undefined;
    if (typeof endpoint !== 'string' || urlIssues(endpoint, this.schemes[type]).length > 0) return undefined;
    return { name, type, endpoint, timeout: timeout ?? DEFAULT_TIMEOUT_MS };
  }

  /** A refused stdio command is the service's configuration: the answer says which option changes it. */
  private withStdioHint(fields: Record<string, unknown>, error: FleetError): FleetError {
    // Only a command the allowlist does not know at all; pinned arguments that differ are the request's to fix.
    if (typeof fields.command !== 'string' || commandIssue(this.stdioCommands, fields.command) !== 'command') return error;
    const hint = this.stdioCommands.length === 0 ? ERROR_HINTS.stdioDisabled : ERROR_HINTS.stdioCommand;
    return new FleetError(error.code, { message: error.message, details: { ...error.details, hint } });
  }

  /** A whole configuration, as sent to create or as the result of an update. */
  config(body: unknown): Result<ServerConfig, FleetError> {
    return objectBody(body).andThen((fields) => {
      const plain = this.plainConfig(fields);
      if (plain !== undefined) return ok(plain);
      const type = fields.type;
      if (type === 'stdio') return parse(this.schemas.stdio, fields, fieldRules(type)).mapErr((error) => this.withStdioHint(fields, error));
      if (isServerType(type)) return parse(this.schemas[type], fields, fieldRules(type));
      const issue = type === undefined ? 'is required' : 'must be "http", "websocket" or "stdio"';
      return err(invalidRequest([{ field: 'type', issue }, ...fieldIssues(fields, fieldRules(undefined))]));
    });
  }

  /**
   * An update: the fields given replace the stored ones (nested objects whole), `null` clears a field,
   * and the result must be a whole valid configuration.
   */
  update(current: ServerConfig, patch: unknown): Result<ServerConfig, FleetError> {
    return objectBody(patch, { patch: true }).andThen((fields) => {
      const issues = fieldIssues(fields, fieldRules(undefined));
      if (issues.length > 0) return err(invalidRequest(issues));
      const merged: Record<string, unknown> = { ...current };
      for (const [key, value] of Object.entries(fields)) {
        if (value === null) delete merged[key];
        else merged[key] = value;
      }
      return this.config(merged);
    });
  }
}

const isStringArray = (value: unknown): value is string[] => Array.isArray(value) && value.every((item) => typeof item === 'string');
