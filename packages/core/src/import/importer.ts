import { err, ok, type Result, ResultAsync } from 'neverthrow';
import { z } from 'zod';
import { ERROR_HINTS } from '../errors/codes.js';
import { type FieldIssue, FleetError, invalidRequest, quotaExceeded, toFleetError } from '../errors/fleet-error.js';
import type { ServerRegistry } from '../registry/registry.js';
import { SERVER_TYPES, type ServerConfig } from '../registry/schema.js';
import { redactAuthentication, redactedAuthenticationSchema, type ServerDetail, serverSummarySchema } from '../registry/views.js';
import type { Ran } from '../util/result.js';
import { parse } from '../validation/parse.js';
import { isPlainObject } from '../validation/zod-issues.js';
import { IMPORT_FORMATS, type ImportFormat, readDocument, SKIP_CODES, type SkipCode, type SourceEntry } from './formats.js';
import { readJsonc } from './jsonc.js';
import { mapEntry, type Mapped, NameBook, sourceField, toolPrefixName, type Unresolved } from './mapping.js';

/** Servers one import may hold: a document with more is refused whole (400). */
export const MAX_IMPORT_ENTRIES = 500;
/**
 * The largest import body, in bytes, unless the fleet's `bodyLimit` is larger: a document of 500 servers with
 * their arguments and env fits (docs/import.md).
 */
export const IMPORT_BODY_LIMIT = 1024 * 1024;

export const importBodySchema = z
  .strictObject({
    format: z.enum(IMPORT_FORMATS).optional().describe('The document\'s format; left out, it is detected from the document\'s shape (the answer\'s `format` says which).'),
    document: z
      .union([z.string(), z.record(z.string(), z.unknown())])
      .describe('The file\'s text as it is (JSON with comments and trailing commas accepted), or its JSON object.'),
    dry_run: z.boolean().default(false).describe('Plan only: nothing is created, and no create budget is spent.'),
    skip_invalid: z.boolean().default(false).describe('Import the valid entries and skip the others; without it, one invalid entry refuses the whole import (400).'),
  })
  .describe(`At most ${MAX_IMPORT_ENTRIES} servers per document; the body up to ${IMPORT_BODY_LIMIT} bytes (or the fleet's bodyLimit, if larger).`);

export type ImportInput = z.input<typeof importBodySchema>;

/** A server as an import plans it (a dry run): the detail's configuration, no id nor timestamps. */
export const plannedServerSchema = z.strictObject({
  name: z.string(),
  type: z.enum(SERVER_TYPES),
  endpoint: z.string().nullable(),
  command: z.string().nullable(),
  args: z.array(z.string()).nullable(),
  working_directory: z.string().nullable(),
  authentication: redactedAuthenticationSchema.nullable(),
  env_keys: z.array(z.string()).nullable(),
});

export type PlannedServer = z.output<typeof plannedServerSchema>;

const entryItem = { entry: z.string().describe('The entry as the document names it: its key, or its place in a server.json (`packages[0]`).') };

function planSchema<S extends z.ZodType>(server: S) {
  return z.strictObject({
    format: z.enum(IMPORT_FORMATS),
    detected: z.boolean().describe('`format` was detected from the document, not given.'),
    dry_run: z.boolean(),
    created: z.array(z.strictObject({ ...entryItem, server })).describe('The servers created (on a dry run: that would be), in the document\'s order.'),
    skipped: z.array(z.strictObject({ ...entryItem, code: z.enum(SKIP_CODES), message: z.string() })),
    unresolved: z.array(z.strictObject({ ...entryItem, field: z.string(), placeholder: z.string(), description: z.string().optional() })).describe('Placeholders kept as written in the created servers.'),
    renamed: z.array(z.strictObject({ ...entryItem, from: z.string(), to: z.string() })).describe('Names the fleet gives otherwise than the document.'),
    ignored: z.array(z.strictObject({ ...entryItem, field: z.string() })).describe('Parts of entries a server has no place for, left out.'),
  });
}

/** The answer of `POST /servers/import`: created servers as the create route shows them (planned ones on a dry run). */
export const importPlanSchema = planSchema(z.union([serverSummarySchema, plannedServerSchema]));

/** What `fleet.servers.import` answers: created servers as details, planned ones on a dry run. */
export interface ImportResult {
  format: ImportFormat;
  detected: boolean;
  dry_run: boolean;
  created: { entry: string; server: ServerDetail | PlannedServer }[];
  skipped: { entry: string; code: SkipCode; message: string }[];
  unresolved: ({ entry: string } & Unresolved)[];
  renamed: { entry: string; from: string; to: string }[];
  ignored: { entry: string; field: string }[];
}

export interface ImportOptions {
  /**
   * Counts `count` servers against the create limit before they are created, or refuses (429). The HTTP route passes
   * the caller's; the embedder's own calls are not rate-limited. @default none
   */
  charge?: (count: number) => Ran<void, FleetError>;
}

export interface ImporterDeps {
  registry: ServerRegistry;
  /** The create operation: the one road every server is created by. */
  create: (account: string, input: unknown) => Ran<ServerDetail, FleetError>;
  delete: (account: string, id: string) => Ran<unknown, FleetError>;
}

/** An entry that will be created: its body, its name, and what the plan says of it. */
interface Planned {
  source: SourceEntry;
  mapped: Mapped;
  config: ServerConfig;
  name: string;
}

/** Codes of a create that, with `skip_invalid`, skip the entry rather than end the import. */
const SKIPPABLE = new Set<string>(['SERVER_NAME_EXISTS', 'QUOTA_EXCEEDED', 'INVALID_REQUEST']);

/**
 * `fleet.servers.import` and `POST /servers/import` (docs/import.md): reads the document, plans every entry (mapped,
 * judged as `create` judges it, named), then creates them one after another through the create operation. All or
 * nothing unless `skip_invalid`: an invalid entry refuses the import before anything is written, and a create failing
 * midway deletes the servers this import created before answering the error.
 */
export function createImporter(deps: ImporterDeps): (account: string, input: unknown, options?: ImportOptions) => ResultAsync<ImportResult, FleetError> {
  return (account, input, options = {}) => new ResultAsync(importDocument(deps, account, input, options).catch((cause: unknown) => err(toFleetError(cause))));
}

async function importDocument(deps: ImporterDeps, account: string, input: unknown, options: ImportOptions): Promise<Result<ImportResult, FleetError>> {
  const body = parse(importBodySchema, input);
  if (body.isErr()) return err(body.error);
  const { format, dry_run, skip_invalid } = body.value;
  const document = typeof body.value.document === 'string' ? readJsonc(body.value.document) : ok(body.value.document);
  if (document.isErr()) return err(invalidRequest([{ field: 'document', issue: document.error }]));
  if (!isPlainObject(document.value)) return err(invalidRequest([{ field: 'document', issue: 'must be a JSON object (or the text of one)' }]));
  const read = readDocument(document.value, format);
  if (!('entries' in read)) return err(invalidRequest([read]));
  if (read.entries.length > MAX_IMPORT_ENTRIES) {
    return err(invalidRequest([{ field: 'document', issue: `holds ${read.entries.length} servers; at most ${MAX_IMPORT_ENTRIES} are imported at once: split it` }]));
  }
  const result: ImportResult = { format: read.format, detected: read.detected, dry_run, created: [], skipped: [], unresolved: [], renamed: [], ignored: [] };

  // Plan: each entry mapped and judged as the create would judge it, in the document's order.
  const planned: Planned[] = [];
  const invalid: FieldIssue[] = [];
  let hint: string | undefined;
  for (const source of read.entries) {
    const at = (field: string) => (field === '' ? `document.${source.path}` : `document.${source.path}.${field}`);
    const mapped = mapEntry(source);
    if ('problem' in mapped) {
      const { code, field, message } = mapped.problem;
      invalid.push({ field: at(field), issue: message });
      result.skipped.push({ entry: source.entry, code, message: field === '' ? message : `${field}: ${message}` });
      continue;
    }
    // A dry run writes nothing: the host's check of a stdio server's files, which first gives the account its stdio
    // user, is the real import's alone (docs/import.md).
    const checked = await deps.registry.check(account, { name: toolPrefixName(source.name), ...mapped.body }, !dry_run);
    if (checked.isOk()) {
      planned.push({ source, mapped, config: checked.value, name: '' });
      continue;
    }
    const error = checked.error;
    if (error.code !== 'INVALID_REQUEST') return err(error);
    const issues = (error.details.issues as FieldIssue[] | undefined) ?? [{ field: String(error.details.field), issue: String(error.details.issue) }];
    const stdioRefused = error.details.hint === ERROR_HINTS.stdioDisabled || error.details.hint === ERROR_HINTS.stdioCommand;
    if (stdioRefused) hint = error.details.hint as string;
    invalid.push(...issues.map(({ field, issue }) => ({ field: at(sourceField(source, field, mapped.bridged)), issue })));
    result.skipped.push({
      entry: source.entry,
      code: stdioRefused ? 'STDIO_COMMAND_NOT_ALLOWED' : 'INVALID_CONFIGURATION',
      message: issues.map(({ field, issue }) => `${field} ${issue}`).join('; '),
    });
  }
  if (invalid.length > 0 && !skip_invalid) {
    const refused = invalidRequest(
      invalid,
      `${result.skipped.length} of ${read.entries.length} entries cannot be imported, so nothing was: fix them, or send skip_invalid: true to import the others (details.issues lists each).`,
    );
    return err(hint === undefined ? refused : new FleetError('INVALID_REQUEST', { message: refused.message, details: { ...refused.details, hint } }));
  }

  // Names, once every entry is judged: the account's own servers keep theirs. An entry the account already has (its
  // name and where it runs) is not created twice: importing the same file again changes nothing.
  const existing = await serversOf(deps.registry, account);
  if (existing.isErr()) return err(existing.error);
  const book = new NameBook(existing.value.map(({ name }) => name));
  const registered = new Map(existing.value.map((server) => [server.same, server]));
  for (let i = 0; i < planned.length; i++) {
    const plan = planned[i] as Planned;
    const same = registered.get(sameServer(toolPrefixName(plan.source.name), plan.config));
    if (same === undefined) continue;
    result.skipped.push({
      entry: plan.source.entry,
      code: 'ALREADY_REGISTERED',
      message: `The account has it already: "${same.name}" (${same.id}), with the same ${plan.config.type === 'stdio' ? 'command and arguments' : 'endpoint'}; nothing to create. Change it with PUT /servers/${same.id}, or delete it to import it again.`,
    });
    planned.splice(i--, 1);
  }
  for (const plan of planned) {
    const { entry, from, name: wanted } = plan.source;
    plan.name = book.take(wanted);
    if (plan.name !== from) result.renamed.push({ entry, from, to: plan.name });
    for (const unresolved of plan.mapped.unresolved) result.unresolved.push({ entry, ...unresolved });
    for (const field of [...plan.source.ignored, ...plan.mapped.ignored]) result.ignored.push({ entry, field });
  }

  // The quota: all of them, or (skipping) as many as there is room for.
  const quota = await deps.registry.quota(account);
  if (quota.isErr()) return err(quota.error);
  const { used, limit } = quota.value;
  const room = Math.max(0, limit - used);
  if (planned.length > room) {
    if (!skip_invalid) {
      const full = quotaExceeded('servers', limit);
      return err(new FleetError('QUOTA_EXCEEDED', { message: `This import would create ${planned.length} servers; the account holds ${used} of the ${limit} it may (the quotas.serversPerAccount option). Nothing was imported.`, details: full.details }));
    }
    for (const plan of planned.splice(room)) result.skipped.push({ entry: plan.source.entry, code: 'QUOTA_EXCEEDED', message: `The account may hold ${limit} servers (the quotas.serversPerAccount option).` });
  }

  if (dry_run) return ok(reported(result, planned.map((plan) => ({ entry: plan.source.entry, server: plannedView(plan.name, plan.config) }))));
  const { charge } = options;
  // All or nothing: the create budget for every server at once, before any is created.
  if (charge !== undefined && !skip_invalid && planned.length > 0) {
    const charged = await charge(planned.length);
    if (charged.isErr()) return err(overBudget(charged.error, planned.length));
  }

  const made: { entry: string; server: ServerDetail }[] = [];
  for (let i = 0; i < planned.length; i++) {
    const plan = planned[i] as Planned;
    const skipRest = (code: SkipCode, message: string) => {
      for (const rest of planned.slice(i)) result.skipped.push({ entry: rest.source.entry, code, message });
    };
    if (charge !== undefined && skip_invalid) {
      const charged = await charge(1);
      if (charged.isErr()) {
        if (charged.error.code !== 'RATE_LIMITED') return undo(deps, account, made, plan, charged.error);
        skipRest('RATE_LIMITED', charged.error.message);
        break;
      }
    }
    const created = await deps.create(account, { name: plan.name, ...plan.mapped.body });
    if (created.isOk()) {
      made.push({ entry: plan.source.entry, server: created.value });
      continue;
    }
    const { error } = created;
    if (!skip_invalid || !SKIPPABLE.has(error.code)) return undo(deps, account, made, plan, error);
    if (error.code === 'QUOTA_EXCEEDED') {
      skipRest('QUOTA_EXCEEDED', error.message);
      break;
    }
    result.skipped.push({ entry: plan.source.entry, code: error.code === 'SERVER_NAME_EXISTS' ? 'SERVER_NAME_EXISTS' : 'INVALID_CONFIGURATION', message: error.message });
  }
  return ok(reported(result, made));
}

/** The result with what it says of each entry (renamed, unresolved, ignored) kept for the entries created alone. */
function reported(result: ImportResult, created: ImportResult['created']): ImportResult {
  const entries = new Set(created.map(({ entry }) => entry));
  const kept = <T extends { entry: string }>(items: T[]) => items.filter(({ entry }) => entries.has(entry));
  return { ...result, created, unresolved: kept(result.unresolved), renamed: kept(result.renamed), ignored: kept(result.ignored) };
}

/** A refused create budget, saying what to do when the import is larger than the limit could ever admit at once. */
function overBudget(error: FleetError, count: number): FleetError {
  const { limit } = error.details;
  if (error.code !== 'RATE_LIMITED' || typeof limit !== 'number' || count <= limit) return error;
  const message = `This import would create ${count} servers, and creates are limited to ${limit} a minute (rateLimit.operations['servers.create']): import fewer at once, or send skip_invalid: true to create as many as the limit admits now. Nothing was imported.`;
  return new FleetError('RATE_LIMITED', { message, details: error.details, headers: { ...error.headers } });
}

/**
 * A create failed midway: the servers this import created are deleted (each with its `server.deleted` event), and the
 * error answered says so, naming the entry.
 */
async function undo(deps: ImporterDeps, account: string, made: { server: ServerDetail }[], failed: Planned, error: FleetError): Promise<Result<never, FleetError>> {
  const left: string[] = [];
  for (const { server } of made.slice().reverse()) {
    const deleted = await deps.delete(account, server.id);
    if (deleted.isErr()) left.push(server.id);
  }
  const undone =
    made.length === 0
      ? 'Nothing was imported.'
      : left.length === 0
        ? `Nothing was imported: the ${made.length} servers created before it were deleted.`
        : `${made.length - left.length} of the ${made.length} servers created before it were deleted; these could not be, delete them: ${left.join(', ')}.`;
  const message = `Importing "${failed.source.entry}" failed: ${error.message} ${undone}`;
  if (error.code === 'INVALID_REQUEST') {
    const issues = (error.details.issues as FieldIssue[] | undefined) ?? [{ field: String(error.details.field), issue: String(error.details.issue) }];
    return err(invalidRequest(issues.map(({ field, issue }) => ({ field: `document.${failed.source.path}.${sourceField(failed.source, field, failed.mapped.bridged)}`, issue })), message));
  }
  return err(new FleetError(error.code, { message, details: { ...error.details, entry: failed.source.entry }, headers: { ...error.headers }, cause: error }));
}

/** What makes an imported entry the same server: its name and where it runs (secrets, env and timeouts aside). */
function sameServer(name: string, config: ServerConfig): string {
  return JSON.stringify(config.type === 'stdio' ? [name, 'stdio', config.command, config.args ?? [], config.working_directory ?? null] : [name, config.type, config.endpoint]);
}

/** The account's servers as the import compares them, read a page of 100 at a time. */
async function serversOf(registry: ServerRegistry, account: string): Promise<Result<{ id: string; name: string; same: string }[], FleetError>> {
  const servers: { id: string; name: string; same: string }[] = [];
  for (let page = 1; ; page++) {
    const read = await registry.list(account, { page, limit: 100 }, (record) => ({ id: record.id, name: record.config.name, same: sameServer(record.config.name, record.config) }));
    if (read.isErr()) return err(read.error);
    servers.push(...read.value.data);
    if (page >= read.value.pagination.pages) return ok(servers);
  }
}

function plannedView(name: string, config: ServerConfig): PlannedServer {
  const stdio = config.type === 'stdio' ? config : undefined;
  const auth = config.type === 'stdio' ? undefined : config.authentication;
  return {
    name,
    type: config.type,
    endpoint: config.endpoint ?? null,
    command: stdio?.command ?? null,
    args: stdio?.args ? [...stdio.args] : null,
    working_directory: stdio?.working_directory ?? null,
    authentication: auth === undefined ? null : redactAuthentication(auth),
    env_keys: stdio?.env === undefined ? null : Object.keys(stdio.env).sort(),
  };
}
