import { z } from 'zod';
import { type FieldIssue } from '../errors/fleet-error.js';
import { isAllowedCommand, isLoaderEnvName } from '../stdio/policy.js';

export const SERVER_TYPES = ['http', 'websocket', 'stdio'] as const;
export type ServerType = (typeof SERVER_TYPES)[number];

export const HEALTH_VALUES = ['unknown', 'healthy', 'unhealthy'] as const;
export type Health = (typeof HEALTH_VALUES)[number];

export const DEFAULT_TIMEOUT_MS = 30_000;
export const MAX_NAME_LENGTH = 100;

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
  /** Commands a stdio server may run; empty means stdio servers cannot be created. @default [] */
  stdioCommands?: readonly string[];
}

function urlField(allowed: readonly string[] | 'any') {
  return z.string().superRefine((value, ctx) => {
    let url: URL;
    try {
      url = new URL(value);
    } catch {
      ctx.addIssue({ code: 'custom', message: 'must be a valid absolute URL' });
      return;
    }
    if (allowed !== 'any' && !allowed.includes(url.protocol)) {
      ctx.addIssue({ code: 'custom', message: `must use the ${allowed.map((s) => s.slice(0, -1)).join(' or ')} scheme` });
    }
    if (url.username !== '' || url.password !== '') {
      ctx.addIssue({ code: 'custom', message: 'must not carry credentials; use the authentication object' });
    }
  });
}

const text = (max: number) =>
  z
    .string()
    .min(1)
    .max(max)
    .refine((value) => !CONTROL_CHARS.test(value), 'must not contain control characters');

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
  z.strictObject({
    type: z.literal('oauth2'),
    client_id: text(1024),
    client_secret: z.string().min(1).max(8192),
    token_url: urlField(['http:', 'https:']).optional(),
    scope: text(1024).optional(),
  }),
]);

const envSchema = z
  .record(
    z
      .string()
      .regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'must be a valid environment variable name')
      .max(256)
      .refine((name) => !isLoaderEnvName(name), 'is not allowed: it changes how the program loads'),
    z.string().max(32_768),
  )
  .refine((env) => Object.keys(env).length <= 100, 'must have at most 100 variables');

function buildSchemas(options: SchemaOptions) {
  const tls = options.requireTls === true;
  const stdioCommands = options.stdioCommands ?? [];
  const common = {
    name: text(MAX_NAME_LENGTH),
    timeout: z.number().int().min(1).max(300_000).default(DEFAULT_TIMEOUT_MS),
    retry: retrySchema.optional(),
  };
  return {
    http: z.strictObject({
      ...common,
      type: z.literal('http'),
      endpoint: urlField(tls ? ['https:'] : ['http:', 'https:']),
      authentication: authenticationSchema.optional(),
    }),
    websocket: z.strictObject({
      ...common,
      type: z.literal('websocket'),
      endpoint: urlField(tls ? ['wss:'] : ['ws:', 'wss:']),
      authentication: authenticationSchema.optional(),
      heartbeat: heartbeatSchema.optional(),
    }),
    stdio: z.strictObject({
      ...common,
      type: z.literal('stdio'),
      endpoint: urlField('any').optional(),
      command: text(4096).refine(
        (command) => isAllowedCommand(stdioCommands, command),
        stdioCommands.length === 0
          ? 'is not allowed: stdio servers are disabled on this service'
          : 'is not on the allowlist of stdio commands',
      ),
      args: z.array(z.string().max(32_768)).max(256).optional(),
      env: envSchema.optional(),
      working_directory: text(4096)
        .refine((dir) => dir.startsWith('/') || /^[A-Za-z]:[\\/]/.test(dir), 'must be an absolute path')
        .optional(),
    }),
  };
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

export type Validated<T> = { ok: true; value: T } | { ok: false; issues: FieldIssue[] };

export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** `retry.max_attempts`, `args[2]`: the path of an issue as callers write it. */
export function formatPath(path: readonly PropertyKey[]): string {
  return path.reduce<string>((out, key) => {
    if (typeof key === 'number') return `${out}[${key}]`;
    return out === '' ? String(key) : `${out}.${String(key)}`;
  }, '');
}

const describeType = (value: unknown) => (value === null ? 'null' : Array.isArray(value) ? 'array' : typeof value);

/** zod's name of an expected type as callers read it: "an integer", "an object", "a string". */
function expectedType(expected: string): string {
  if (expected === 'int') return 'an integer';
  if (expected === 'record') return 'an object';
  return /^[aeiou]/.test(expected) ? `an ${expected}` : `a ${expected}`;
}

/** Issue text written here, not by zod, so that no message ever echoes a submitted value (it may be a secret). */
function issueText(issue: z.core.$ZodIssue, input: unknown): string {
  switch (issue.code) {
    case 'invalid_type':
      return input === undefined ? 'is required' : `must be ${expectedType(issue.expected)}`;
    case 'too_small':
      if (issue.origin === 'string') return issue.minimum === 1 ? 'must not be empty' : `must be at least ${issue.minimum} characters`;
      if (issue.origin === 'array') return `must have at least ${issue.minimum} items`;
      return `must be at least ${issue.minimum}`;
    case 'too_big':
      if (issue.origin === 'string') return `must be at most ${issue.maximum} characters`;
      if (issue.origin === 'array') return `must have at most ${issue.maximum} items`;
      return `must be at most ${issue.maximum}`;
    case 'invalid_value':
      return `must be ${issue.values.map((v) => JSON.stringify(v)).join(' or ')}`;
    case 'invalid_union':
      return 'must have a type of "bearer" or "oauth2"';
    case 'invalid_format':
      return 'has an invalid format';
    case 'not_multiple_of':
      return `must be a multiple of ${String(issue.divisor)}`;
    case 'invalid_key':
      return 'has an invalid key';
    case 'custom':
      return issue.message;
    default:
      return 'is invalid';
  }
}

function valueAt(root: unknown, path: readonly PropertyKey[]): unknown {
  let current = root;
  for (const key of path) {
    if (!isPlainObject(current) && !Array.isArray(current)) return undefined;
    current = (current as Record<PropertyKey, unknown>)[key];
  }
  return current;
}

export function zodIssues(error: z.ZodError, input: unknown): FieldIssue[] {
  const out: FieldIssue[] = [];
  for (const issue of error.issues) {
    if (issue.code === 'unrecognized_keys') {
      for (const key of issue.keys) out.push({ field: formatPath([...issue.path, key]), issue: 'is not a known field' });
      continue;
    }
    if (issue.code === 'invalid_key') {
      // The key's own refinement says why a valid-looking name (LD_PRELOAD) is refused; zod nests it here.
      const reason = issue.issues.find((inner) => inner.code === 'custom');
      out.push({ field: formatPath(issue.path), issue: reason?.message ?? 'has an invalid variable name' });
      continue;
    }
    const value = valueAt(input, issue.path);
    // "must be an integer, not number" would puzzle: say what was sent only when its type is the problem.
    const wrongType = issue.code === 'invalid_type' && value !== undefined && !(issue.expected === 'int' && typeof value === 'number');
    const text = wrongType ? `must be ${expectedType(issue.expected)}, not ${describeType(value)}` : issueText(issue, value);
    out.push({ field: formatPath(issue.path) || 'body', issue: text });
  }
  return out;
}

/** Top-level field checks zod cannot phrase well: read-only, another type's field, unknown. */
function fieldIssues(body: Record<string, unknown>, type: ServerType | undefined): FieldIssue[] {
  const issues: FieldIssue[] = [];
  for (const key of Object.keys(body)) {
    if ((READ_ONLY_FIELDS as readonly string[]).includes(key)) issues.push({ field: key, issue: 'is read-only' });
    else if (!ALL_FIELDS.has(key)) issues.push({ field: key, issue: 'is not a known field' });
    else if (type !== undefined && !TYPE_FIELDS[type].includes(key)) issues.push({ field: key, issue: `does not apply to ${type} servers` });
  }
  return issues;
}

/** Validates server configurations under the options of one fleet. */
export class ServerValidator {
  private readonly schemas: ServerSchemas;

  constructor(options: SchemaOptions = {}) {
    this.schemas = buildSchemas(options);
  }

  /** A whole configuration, as sent to create or as the result of an update. */
  config(body: unknown): Validated<ServerConfig> {
    if (!isPlainObject(body)) return { ok: false, issues: [{ field: 'body', issue: 'must be a JSON object' }] };
    const type = body.type;
    if (!SERVER_TYPES.includes(type as ServerType)) {
      const issues = fieldIssues(body, undefined);
      issues.unshift({ field: 'type', issue: type === undefined ? 'is required' : 'must be "http", "websocket" or "stdio"' });
      return { ok: false, issues };
    }
    const issues = fieldIssues(body, type as ServerType);
    const known = Object.fromEntries(Object.entries(body).filter(([key]) => !issues.some((i) => i.field === key)));
    const parsed = this.schemas[type as ServerType].safeParse(known);
    if (parsed.success && issues.length === 0) return { ok: true, value: parsed.data };
    if (!parsed.success) issues.push(...zodIssues(parsed.error, known));
    return { ok: false, issues };
  }

  /**
   * An update: the fields given replace the stored ones (nested objects whole), `null` clears a field,
   * and the result must be a whole valid configuration.
   */
  update(current: ServerConfig, patch: unknown): Validated<ServerConfig> {
    if (!isPlainObject(patch)) return { ok: false, issues: [{ field: 'body', issue: 'must be a JSON object' }] };
    const keys = Object.keys(patch);
    if (keys.length === 0) return { ok: false, issues: [{ field: 'body', issue: 'must name at least one field to change' }] };
    const issues = fieldIssues(patch, undefined);
    if (issues.length > 0) return { ok: false, issues };
    const merged: Record<string, unknown> = { ...current };
    for (const key of keys) {
      if (patch[key] === null) delete merged[key];
      else merged[key] = patch[key];
    }
    return this.config(merged);
  }
}
