import { isPlainObject } from '../validation/zod-issues.js';

/**
 * The documents people already have, read into one shape (docs/import.md): the `mcpServers` of Claude Desktop's
 * `claude_desktop_config.json`, Claude Code's `.mcp.json` and Cursor's `mcp.json`; the `servers` (and `inputs`) of VS
 * Code's `.vscode/mcp.json` (or of its settings' `mcp`); and the `packages` and `remotes` of an official MCP registry
 * `server.json` (also as the registry's API answers it: `{ server }`, or `{ servers: [{ server }] }`). Pure: nothing here
 * reads a file or the environment, and nothing resolves a placeholder.
 */

export const IMPORT_FORMATS = ['claude-desktop', 'claude-code', 'cursor', 'vscode', 'registry'] as const;
export type ImportFormat = (typeof IMPORT_FORMATS)[number];

/**
 * Why an entry was not imported: the first five make it invalid; `ALREADY_REGISTERED` (the account has it already)
 * does not; the others come from creating it.
 */
export const SKIP_CODES = [
  'NOT_A_SERVER',
  'UNSUPPORTED',
  'HEADERS_NOT_IMPORTABLE',
  'STDIO_COMMAND_NOT_ALLOWED',
  'INVALID_CONFIGURATION',
  'QUOTA_EXCEEDED',
  'RATE_LIMITED',
  'SERVER_NAME_EXISTS',
  'ALREADY_REGISTERED',
] as const;
export type SkipCode = (typeof SKIP_CODES)[number];

/** One server of a document, as the document describes it. */
export interface SourceEntry {
  /** How the document names it: its key (`github`), or in a server.json its place (`packages[0]`). */
  entry: string;
  /** Where it is in the document, for error fields: `mcpServers.github`, `packages[0]`. */
  path: string;
  /** The name the document gives it: the key, or the server.json's `name`. */
  from: string;
  /** The name it asks for in the fleet, before it is made valid and unique: the key, or `weather-npm`. */
  name: string;
  stdio?: { command: string; args: string[]; env: Record<string, string>; cwd?: string };
  remote?: { url: string; headers: Record<string, string> };
  /** Why it cannot be imported at all. */
  problem?: { code: SkipCode; field: string; message: string };
  /** Fields of the entry the fleet has no place for (`envFile`, `disabled`…): left out, and reported. */
  ignored: string[];
  /** What the document says of an `${input:id}` (VS Code `inputs`), by id. */
  inputs?: ReadonlyMap<string, string>;
}

export interface ReadDocument {
  format: ImportFormat;
  /** The format was found from the document's shape, not given. */
  detected: boolean;
  entries: SourceEntry[];
}

/** Why a document cannot be read in a format: an issue of the `document` field. */
export interface DocumentIssue {
  field: string;
  issue: string;
}

/** The format a document's shape says, or `undefined`. The three `mcpServers` files differ only in what entries hold. */
export function detectFormat(document: Record<string, unknown>): ImportFormat | undefined {
  if (isPlainObject(document.mcpServers)) {
    const entries = Object.values(document.mcpServers).filter(isPlainObject);
    if (entries.some((entry) => entry.type !== undefined)) return 'claude-code';
    if (entries.some((entry) => entry.url !== undefined || entry.serverUrl !== undefined || entry.envFile !== undefined)) return 'cursor';
    return 'claude-desktop';
  }
  if (isPlainObject(document.servers) || (isPlainObject(document.mcp) && isPlainObject(document.mcp.servers))) return 'vscode';
  if (Array.isArray(document.packages) || Array.isArray(document.remotes) || isPlainObject(document.server) || Array.isArray(document.servers)) return 'registry';
  return undefined;
}

/** The entries of `document` in `format` (or the format its shape says), or what is wrong with it. */
export function readDocument(document: Record<string, unknown>, format: ImportFormat | undefined): ReadDocument | DocumentIssue {
  const detected = detectFormat(document);
  const chosen = format ?? detected;
  if (chosen === undefined) {
    return { field: 'document', issue: 'is not a client configuration this service reads: expected "mcpServers" (Claude Desktop, Claude Code, Cursor), "servers" (VS Code) or "packages"/"remotes" (a registry server.json)' };
  }
  const entries = chosen === 'registry' ? registryEntries(document) : chosen === 'vscode' ? vscodeEntries(document) : mcpServersEntries(document, chosen);
  if (!Array.isArray(entries)) return entries;
  return { format: chosen, detected: format === undefined, entries };
}

function mcpServersEntries(document: Record<string, unknown>, format: ImportFormat): SourceEntry[] | DocumentIssue {
  if (!isPlainObject(document.mcpServers)) return { field: 'document.mcpServers', issue: `is required: a ${format} configuration holds its servers there (or leave "format" out to have it detected)` };
  return Object.entries(document.mcpServers).map(([key, value]) => clientEntry(key, value, `mcpServers.${key}`));
}

function vscodeEntries(document: Record<string, unknown>): SourceEntry[] | DocumentIssue {
  // `.vscode/mcp.json` holds `servers` and `inputs`; the user settings hold the same under `mcp`.
  const holder = isPlainObject(document.servers) ? document : isPlainObject(document.mcp) && isPlainObject(document.mcp.servers) ? document.mcp : undefined;
  if (holder === undefined) return { field: 'document.servers', issue: 'is required: a VS Code mcp.json holds its servers there (or leave "format" out to have it detected)' };
  const base = holder === document ? '' : 'mcp.';
  const inputs = new Map<string, string>();
  if (Array.isArray(holder.inputs)) {
    for (const input of holder.inputs) {
      if (isPlainObject(input) && typeof input.id === 'string') inputs.set(input.id, typeof input.description === 'string' ? input.description : '');
    }
  }
  return Object.entries(holder.servers as Record<string, unknown>).map(([key, value]) => ({ ...clientEntry(key, value, `${base}servers.${key}`), inputs }));
}

/** The fields each kind of client entry carries over; any other is reported as ignored. */
const STDIO_FIELDS = new Set(['type', 'command', 'args', 'env', 'cwd']);
const REMOTE_FIELDS = new Set(['type', 'url', 'serverUrl', 'headers']);
const REMOTE_TYPES = new Set(['http', 'sse', 'streamable-http', 'streamableHttp', 'ws', 'websocket']);

/** One entry of `mcpServers` or VS Code's `servers`. */
function clientEntry(key: string, value: unknown, path: string): SourceEntry {
  const entry: SourceEntry = { entry: key, path, from: key, name: key, ignored: [] };
  const problem = (field: string, message: string, code: SkipCode = 'NOT_A_SERVER') => ({ ...entry, problem: { code, field, message } });
  if (!isPlainObject(value)) return problem('', 'must be an object with a "command" or a "url"');
  const { type } = value;
  if (type !== undefined && typeof type !== 'string') return problem('type', 'must be a string');
  const url = value.url ?? value.serverUrl;
  const remoteType = type !== undefined && REMOTE_TYPES.has(type);
  if (remoteType && url === undefined) return problem('url', `is required: a "${type}" server is reached at its URL`);
  const remote = url !== undefined && (value.command === undefined || remoteType);
  if (remote) {
    if (typeof url !== 'string') return problem(value.url === undefined ? 'serverUrl' : 'url', 'must be a string');
    const headers = stringMap(value.headers);
    if (headers === undefined) return problem('headers', 'must be an object of strings');
    return { ...entry, remote: { url, headers }, ignored: Object.keys(value).filter((field) => !REMOTE_FIELDS.has(field)) };
  }
  if (value.command === undefined) return problem('', 'has neither a "command" (a stdio server) nor a "url" (a remote one)');
  if (type !== undefined && type !== 'stdio') return problem('type', `"${type.slice(0, 40)}" is not a transport this service knows (stdio, http, sse)`, 'UNSUPPORTED');
  if (typeof value.command !== 'string') return problem('command', 'must be a string');
  const args = value.args ?? [];
  if (!Array.isArray(args) || !args.every((arg) => typeof arg === 'string' || typeof arg === 'number' || typeof arg === 'boolean')) return problem('args', 'must be an array of strings');
  const env = stringMap(value.env);
  if (env === undefined) return problem('env', 'must be an object of strings');
  if (value.cwd !== undefined && typeof value.cwd !== 'string') return problem('cwd', 'must be a string');
  const stdio = { command: value.command, args: args.map(String), env, ...(typeof value.cwd === 'string' && { cwd: value.cwd }) };
  return { ...entry, stdio, ignored: Object.keys(value).filter((field) => !STDIO_FIELDS.has(field)) };
}

/** An object of strings (numbers and booleans written as such are taken as their text); absent: empty. */
function stringMap(value: unknown): Record<string, string> | undefined {
  if (value === undefined || value === null) return {};
  if (!isPlainObject(value)) return undefined;
  const out: Record<string, string> = {};
  for (const [name, item] of Object.entries(value)) {
    if (typeof item !== 'string' && typeof item !== 'number' && typeof item !== 'boolean') return undefined;
    out[name] = String(item);
  }
  return out;
}

/** A field of a registry object, in the camelCase of today's schema or the snake_case of its 2025-07 drafts. */
function field(object: Record<string, unknown>, camel: string): unknown {
  return object[camel] ?? object[camel.replace(/[A-Z]/g, (letter) => `_${letter.toLowerCase()}`)];
}

/** How each package registry's packages run as a stdio server: the default runner, and the package's spelling. */
const RUNNERS: Readonly<Record<string, { command: string; spec: (id: string, version: string | undefined) => string; before?: readonly string[]; after?: readonly string[] }>> = {
  npm: { command: 'npx', before: ['-y'], spec: (id, version) => (version === undefined ? id : `${id}@${version}`) },
  pypi: { command: 'uvx', spec: (id, version) => (version === undefined ? id : `${id}@${version}`) },
  nuget: { command: 'dnx', spec: (id, version) => (version === undefined ? id : `${id}@${version}`), after: ['--yes'] },
  oci: { command: 'docker', before: ['run', '-i', '--rm'], spec: (id, version) => (version === undefined || /[:@][^/]*$/.test(id) ? id : `${id}:${version}`) },
};

/** The servers of a registry document: a server.json, `{ server }`, or a listing `{ servers: [{ server }] }`. */
function registryEntries(document: Record<string, unknown>): SourceEntry[] | DocumentIssue {
  const listed = Array.isArray(document.servers) ? document.servers.map((item, i) => [isPlainObject(item) && isPlainObject(item.server) ? item.server : item, `servers[${i}].`] as const) : undefined;
  const servers = listed ?? [[isPlainObject(document.server) ? document.server : document, isPlainObject(document.server) ? 'server.' : ''] as const];
  const entries: SourceEntry[] = [];
  for (const [server, base] of servers) {
    if (!isPlainObject(server)) return { field: `document.${base.slice(0, -1)}`, issue: 'must be a server.json object' };
    const packages = server.packages ?? [];
    const remotes = server.remotes ?? [];
    if (!Array.isArray(packages)) return { field: `document.${base}packages`, issue: 'must be an array' };
    if (!Array.isArray(remotes)) return { field: `document.${base}remotes`, issue: 'must be an array' };
    const from = typeof server.name === 'string' && server.name !== '' ? server.name : 'server';
    // `io.github.acme/weather` → `weather`: the part after the namespace.
    const stem = from.slice(from.lastIndexOf('/') + 1);
    packages.forEach((item, i) => entries.push(registryPackage(item, `${base}packages[${i}]`, from, stem)));
    remotes.forEach((item, i) => entries.push(registryRemote(item, `${base}remotes[${i}]`, from, stem)));
  }
  return entries;
}

function registryPackage(item: unknown, path: string, from: string, stem: string): SourceEntry {
  const entry: SourceEntry = { entry: path, path, from, name: stem, ignored: [] };
  if (!isPlainObject(item)) return { ...entry, problem: { code: 'NOT_A_SERVER', field: '', message: 'must be a package object' } };
  const registry = String(field(item, 'registryType') ?? item.registry_name ?? '');
  const named = { ...entry, name: `${stem}-${registry || 'package'}` };
  const runner = RUNNERS[registry];
  if (runner === undefined) {
    return { ...named, problem: { code: 'UNSUPPORTED', field: 'registryType', message: `packages of the "${registry.slice(0, 40)}" registry cannot run as a stdio command here (npm, pypi, nuget and oci can)` } };
  }
  const transport = field(item, 'transport');
  const transportType = isPlainObject(transport) ? transport.type : undefined;
  if (transportType !== undefined && transportType !== 'stdio') {
    return { ...named, problem: { code: 'UNSUPPORTED', field: 'transport.type', message: 'the package serves HTTP on the machine that runs it; only stdio packages, or the server\'s remotes, can be imported' } };
  }
  const identifier = field(item, 'identifier') ?? item.name;
  if (typeof identifier !== 'string' || identifier === '') return { ...named, problem: { code: 'NOT_A_SERVER', field: 'identifier', message: 'is required: the package to run' } };
  const version = typeof item.version === 'string' && item.version !== '' && item.version !== 'latest' ? item.version : undefined;
  const hint = field(item, 'runtimeHint');
  const env: Record<string, string> = {};
  for (const variable of arrayOf(field(item, 'environmentVariables'))) {
    if (!isPlainObject(variable) || typeof variable.name !== 'string') continue;
    const value = typeof variable.value === 'string' ? variable.value : typeof variable.default === 'string' ? variable.default : field(variable, 'isRequired') === true ? `{${variable.name}}` : undefined;
    if (value !== undefined) env[variable.name] = templated(value, variable);
  }
  const runtimeArgs = argumentsOf(field(item, 'runtimeArguments'));
  // A container sees only the variables passed to it by name.
  const passed = registry === 'oci' ? Object.keys(env).flatMap((name) => ['-e', name]) : [];
  const before = registry === 'npm' && runtimeArgs.some((arg) => arg === '-y' || arg === '--yes') ? [] : (runner.before ?? []);
  const command = typeof hint === 'string' && hint !== '' && registry !== 'oci' ? hint : runner.command;
  const args = [...before, ...runtimeArgs, ...passed, runner.spec(identifier, version), ...(runner.after ?? []), ...argumentsOf(field(item, 'packageArguments'))];
  return { ...named, stdio: { command, args, env } };
}

function registryRemote(item: unknown, path: string, from: string, stem: string): SourceEntry {
  const entry: SourceEntry = { entry: path, path, from, name: stem, ignored: [] };
  if (!isPlainObject(item)) return { ...entry, problem: { code: 'NOT_A_SERVER', field: '', message: 'must be a remote object' } };
  const type = String(item.type ?? field(item, 'transportType') ?? 'streamable-http');
  const named = { ...entry, name: `${stem}-${type === 'sse' ? 'sse' : 'http'}` };
  if (typeof item.url !== 'string') return { ...named, problem: { code: 'NOT_A_SERVER', field: 'url', message: 'is required: the remote server\'s URL' } };
  const headers: Record<string, string> = {};
  for (const header of arrayOf(item.headers)) {
    if (!isPlainObject(header) || typeof header.name !== 'string') continue;
    const value = typeof header.value === 'string' ? header.value : typeof header.default === 'string' ? header.default : field(header, 'isRequired') === true ? `{${header.name}}` : undefined;
    if (value !== undefined) headers[header.name] = templated(value, header);
  }
  return { ...named, remote: { url: templated(item.url, item), headers } };
}

const arrayOf = (value: unknown): unknown[] => (Array.isArray(value) ? value : []);

/**
 * A registry value with its `{variable}` references written as `${variable}` placeholders, the form the import keeps
 * and reports; a variable's `value` or `default`, when it has one, is used instead.
 */
function templated(value: string, holder: Record<string, unknown>): string {
  const variables = isPlainObject(holder.variables) ? holder.variables : {};
  return value.replace(/(?<!\$)\{([A-Za-z_][A-Za-z0-9_.-]*)\}/g, (_whole, name: string) => {
    const variable = variables[name];
    if (isPlainObject(variable)) {
      const known = typeof variable.value === 'string' ? variable.value : typeof variable.default === 'string' ? variable.default : undefined;
      if (known !== undefined) return known;
    }
    return `\${${name}}`;
  });
}

/** A registry package's `runtimeArguments` or `packageArguments` as command-line arguments. */
function argumentsOf(list: unknown): string[] {
  const out: string[] = [];
  for (const argument of arrayOf(list)) {
    if (!isPlainObject(argument)) continue;
    const given = typeof argument.value === 'string' ? argument.value : typeof argument.default === 'string' ? argument.default : undefined;
    const hint = field(argument, 'valueHint');
    if (argument.type === 'named') {
      if (typeof argument.name !== 'string') continue;
      out.push(argument.name);
      if (given !== undefined) out.push(templated(given, argument));
    } else {
      const value = given ?? (typeof hint === 'string' ? `{${hint}}` : undefined);
      if (value !== undefined) out.push(templated(value, argument));
    }
  }
  return out;
}
