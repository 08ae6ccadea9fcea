import { namesItsPrefix, prefixesAbove, MAX_PREFIX_LENGTH } from '../toolcalls/tool-names.js';
import type { SkipCode, SourceEntry } from './formats.js';

/**
 * How one entry of a document becomes a fleet server's create body (docs/import.md, "Mapping"): stdio entries stay
 * stdio servers; a URL becomes an http server (websocket for `ws:`/`wss:`) with its one `Authorization: Bearer …`
 * header as bearer authentication; an `mcp-remote` bridge becomes the remote server it bridges. Placeholders
 * (`${VAR}`, `${env:VAR}`, `${input:id}`) are kept as written and reported. Pure.
 */

/** A placeholder kept as written, where it stands in the planned server. */
export interface Unresolved {
  /** The server's field: `env.API_KEY`, `args[2]`, `authentication.token`, `endpoint`. */
  field: string;
  /** `${input:github-token}`; a default (`${VAR:-…}`) is not shown: it may be a secret. */
  placeholder: string;
  /** What the document says of it (a VS Code input's description), when it says something. */
  description?: string;
}

export interface Mapped {
  /** The create body, without its name. */
  body: Record<string, unknown>;
  unresolved: Unresolved[];
  /** Parts of the entry the server has no place for (an `mcp-remote` option, the bridge's own `env`). */
  ignored: string[];
  /** The entry was an `mcp-remote` bridge, unwrapped. */
  bridged: boolean;
}

export interface Unmappable {
  problem: { code: SkipCode; field: string; message: string };
}

/** The body an entry maps to, or why it cannot be imported. */
export function mapEntry(entry: SourceEntry): Mapped | Unmappable {
  if (entry.problem !== undefined) return { problem: entry.problem };
  const bridge = entry.stdio === undefined ? undefined : unwrapBridge(entry.stdio);
  const remote = bridge ?? entry.remote;
  let body: Record<string, unknown>;
  if (remote !== undefined) {
    const auth = bearerOf(remote.headers);
    if ('problem' in auth) return { problem: { code: 'HEADERS_NOT_IMPORTABLE', field: bridge === undefined ? 'headers' : 'args', message: auth.problem } };
    const type = /^wss?:/i.test(remote.url) ? 'websocket' : 'http';
    body = { type, endpoint: remote.url, ...(auth.token !== undefined && { authentication: { type: 'bearer', token: auth.token } }) };
  } else {
    const stdio = entry.stdio as NonNullable<SourceEntry['stdio']>;
    body = {
      type: 'stdio',
      command: stdio.command,
      ...(stdio.args.length > 0 && { args: stdio.args }),
      ...(Object.keys(stdio.env).length > 0 && { env: stdio.env }),
      ...(stdio.cwd !== undefined && { working_directory: stdio.cwd }),
    };
  }
  return { body, unresolved: placeholdersOf(body, entry.inputs), ignored: bridge?.ignored ?? [], bridged: bridge !== undefined };
}

/** The entry's own name of a server field, for an issue about it: `url` for `endpoint`, `cwd` for `working_directory`. */
export function sourceField(entry: SourceEntry, field: string, bridged: boolean): string {
  if (entry.remote === undefined && !bridged) return field === 'working_directory' ? 'cwd' : field;
  if (bridged) return field === 'endpoint' || field.startsWith('authentication') ? 'args' : field;
  if (field === 'endpoint') return 'url';
  if (field.startsWith('authentication')) return 'headers';
  return field;
}

const BRIDGE = /^mcp-remote(@[^\s]*)?$/;
/** Commands that run an npm package: `npx -y mcp-remote …`, `pnpm dlx`, `bunx`, and Windows' `cmd /c npx …`. */
const PACKAGE_RUNNERS = new Set(['npx', 'bunx', 'pnpx', 'pnpm', 'yarn', 'cmd', 'dlx']);
const baseName = (command: string) => (command.split(/[\\/]/).pop() ?? command).replace(/\.(cmd|exe|bat)$/i, '').toLowerCase();

/**
 * The remote server an `mcp-remote` bridge stands for: its URL, and its `--header` values with the `${VAR}`s
 * mcp-remote itself would fill from the entry's `env` filled in (the env exists for the bridge alone). `undefined`
 * when the entry is no such bridge.
 */
export function unwrapBridge(stdio: NonNullable<SourceEntry['stdio']>): { url: string; headers: Record<string, string>; ignored: string[] } | undefined {
  const { args, env } = stdio;
  let start: number;
  if (BRIDGE.test(baseName(stdio.command))) start = 0;
  else {
    const at = args.findIndex((arg) => BRIDGE.test(arg));
    if (at === -1 || !PACKAGE_RUNNERS.has(baseName(stdio.command))) return undefined;
    start = at + 1;
  }
  const rest = args.slice(start);
  const url = rest.find((arg) => /^(https?|wss?):\/\//i.test(arg));
  if (url === undefined) return undefined;
  const headers: Record<string, string> = {};
  const used = new Set<string>();
  const ignored: string[] = [];
  for (let i = 0; i < rest.length; i++) {
    const arg = rest[i] as string;
    if (arg === url) continue;
    const header = arg === '--header' ? rest[++i] : arg.startsWith('--header=') ? arg.slice('--header='.length) : undefined;
    if (header === undefined) {
      if (arg.startsWith('-')) ignored.push(`mcp-remote ${arg.split('=', 1)[0]}`);
      continue;
    }
    const colon = header.indexOf(':');
    if (colon <= 0) continue;
    // mcp-remote fills `${VAR}` in a header from its own environment: the entry's env.
    const value = header.slice(colon + 1).replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g, (whole, name: string) => {
      const known = env[name];
      if (known === undefined) return whole;
      used.add(name);
      return known;
    });
    headers[header.slice(0, colon).trim()] = value.trim();
  }
  for (const name of Object.keys(env)) if (!used.has(name)) ignored.push(`env.${name}`);
  return { url, headers, ignored };
}

/**
 * The bearer token of a remote entry's headers: none, or exactly one `Authorization: Bearer <token>`; anything else
 * cannot be carried (a server's authentication is one bearer token or OAuth client credentials): the problem names
 * the headers, never their values.
 */
export function bearerOf(headers: Record<string, string>): { token?: string } | { problem: string } {
  const names = Object.keys(headers);
  if (names.length === 0) return {};
  const [name] = names;
  const token = names.length === 1 && name?.toLowerCase() === 'authorization' ? /^Bearer\s+(\S.*)$/i.exec((headers[name] as string).trim())?.[1] : undefined;
  if (token !== undefined) return { token };
  const listed = names.map((header) => JSON.stringify(header.slice(0, 100))).join(', ');
  return {
    problem: `headers ${listed} cannot be imported: a server's authentication holds one "Authorization: Bearer <token>" header (or OAuth client credentials), nothing else. Import it without them (remove them from the document) and set its authentication after.`,
  };
}

const PLACEHOLDER = /\$\{([^{}]*)\}/g;

/** Every placeholder of the body's strings, where it stands; never the rest of a value. */
function placeholdersOf(body: Record<string, unknown>, inputs: ReadonlyMap<string, string> | undefined): Unresolved[] {
  const found: Unresolved[] = [];
  const scan = (field: string, value: unknown) => {
    if (typeof value !== 'string') return;
    for (const [, inner = ''] of value.matchAll(PLACEHOLDER)) {
      const cut = inner.indexOf(':-');
      const placeholder = cut === -1 ? `\${${inner.slice(0, 100)}}` : `\${${inner.slice(0, Math.min(cut, 100))}:-…}`;
      const description = inner.startsWith('input:') ? inputs?.get(inner.slice('input:'.length)) : undefined;
      found.push({ field, placeholder, ...(description !== undefined && description !== '' && { description }) });
    }
  };
  scan('command', body.command);
  (body.args as string[] | undefined)?.forEach((arg, i) => scan(`args[${i}]`, arg));
  for (const [name, value] of Object.entries((body.env as Record<string, string> | undefined) ?? {})) scan(`env.${name}`, value);
  scan('working_directory', body.working_directory);
  scan('endpoint', body.endpoint);
  scan('authentication.token', (body.authentication as { token?: string } | undefined)?.token);
  return found;
}

/**
 * A name as the fleet's tools want it: `^[A-Za-z0-9_-]{1,64}$`, so that its tools are `{name}__{tool}` on the MCP
 * endpoint, and without `__`, so that it never makes tool names ambiguous with another server's.
 */
export function toolPrefixName(wanted: string): string {
  const plain = wanted
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .replace(/[^A-Za-z0-9_-]+/g, '-')
    .replace(/_{2,}/g, '_')
    .replace(/-{2,}/g, '-');
  const trimmed = trimEnds(plain.slice(0, MAX_PREFIX_LENGTH));
  return trimmed === '' ? 'server' : trimmed;
}

const trimEnds = (name: string) => name.replace(/^[-_]+|[-_]+$/g, '');

/**
 * Names given out: unique among themselves and against the account's servers, and never the `P` of another server
 * named `P__…` (the registry would refuse it: tool names would be ambiguous).
 */
export class NameBook {
  private readonly taken: Set<string>;
  private readonly above = new Set<string>();

  constructor(existing: Iterable<string>) {
    this.taken = new Set(existing);
    for (const name of this.taken) if (namesItsPrefix(name)) for (const prefix of prefixesAbove(name)) this.above.add(prefix);
  }

  /** A free name for `wanted`: `toolPrefixName(wanted)`, then `-2`, `-3`… until one is free. */
  take(wanted: string): string {
    const base = toolPrefixName(wanted);
    let name = base;
    for (let n = 2; this.taken.has(name) || this.above.has(name); n++) {
      const suffix = `-${n}`;
      name = `${trimEnds(base.slice(0, MAX_PREFIX_LENGTH - suffix.length)) || 'server'}${suffix}`;
    }
    this.taken.add(name);
    return name;
  }
}
