/**
 * Where the CLI's remote commands connect, and with which key (docs/cli.md "Connection"): the flags, the environment,
 * and profiles saved in `$XDG_CONFIG_HOME/mcp-fleet/config.json` (else `~/.config/mcp-fleet/config.json`), a file
 * written 0600 in a folder of 0700, since it holds keys.
 */
import { chmodSync, mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, isAbsolute, join } from 'node:path';
import { UsageError, warn } from './exit.js';

export interface Profile {
  url: string;
  key?: string;
}

export interface ConfigFile {
  /** The profile used when neither `--profile` nor `MCP_FLEET_PROFILE` names one (`mcp-fleet profile use`). */
  current?: string;
  profiles: Record<string, Profile>;
}

/** The connection flags every remote command takes (the program's own options). */
export interface ConnectionFlags {
  url?: string;
  key?: string;
  keyStdin?: boolean;
  profile?: string;
}

export interface Connection {
  url: string;
  key: string;
}

/** XDG Base Directory: a relative `XDG_CONFIG_HOME` is to be ignored. */
export function configPath(env: NodeJS.ProcessEnv): string {
  const xdg = env.XDG_CONFIG_HOME;
  const base = xdg !== undefined && isAbsolute(xdg) ? xdg : join(env.HOME ?? homedir(), '.config');
  return join(base, 'mcp-fleet', 'config.json');
}

export function readConfigFile(path: string): ConfigFile {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return { profiles: {} };
    throw new UsageError(`cannot read ${path}: ${(error as Error).message}`);
  }
  // Saved keys are bearer credentials: say so when others may read them, as ssh does for a private key.
  const mode = statSync(path).mode & 0o777;
  if ((mode & 0o077) !== 0) warn(`${path} is readable by others (mode ${mode.toString(8)}); it holds API keys: chmod 600 ${path}`);
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new UsageError(`${path} is not valid JSON; fix or delete it (it holds the profiles of mcp-fleet profile set)`);
  }
  const config = parsed as Partial<ConfigFile> | null;
  if (config === null || typeof config !== 'object' || typeof config.profiles !== 'object' || config.profiles === null) {
    throw new UsageError(`${path}: expected { "profiles": { "<name>": { "url": "…", "key": "…" } } }`);
  }
  return { ...(typeof config.current === 'string' && { current: config.current }), profiles: config.profiles };
}

/** Written whole to a temporary file of mode 0600, then renamed over the old one: never half a file, never readable by others. */
export function writeConfigFile(path: string, config: ConfigFile): void {
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  const temporary = `${path}.${process.pid}.tmp`;
  writeFileSync(temporary, `${JSON.stringify(config, null, 2)}\n`, { mode: 0o600 });
  // The mode of writeFileSync passes through the umask; a umask cannot make it wider, but say it exactly.
  chmodSync(temporary, 0o600);
  renameSync(temporary, path);
}

export const PROFILE_NAME = /^[A-Za-z0-9_.-]{1,64}$/;

/** Reads a whole stream (stdin) as text, without its trailing newline. */
export async function readStdin(what: string): Promise<string> {
  if (process.stdin.isTTY) process.stderr.write(`${what}: `);
  return (await readAtMost(process.stdin, `${what} (stdin)`)).replace(/\r?\n$/, '');
}

/**
 * The most the CLI reads from a file or stdin: the largest body the fleet accepts (an import document's, core's
 * `IMPORT_BODY_LIMIT`), so nothing it could send is refused, and a wrong file (a disk image, `/dev/zero`) cannot fill
 * the memory. Written out, not imported: the CLI talks to a fleet over HTTP and never loads the engine (importing
 * `@mcp-fleet/core` for this number cost every command 0.4 s); test/cli/cli.test.ts holds the two equal.
 */
export const MAX_INPUT_BYTES = 1024 * 1024;

/** A stream's text, refused as a usage error as soon as it passes {@link MAX_INPUT_BYTES}. */
export async function readAtMost(stream: AsyncIterable<unknown> & { destroy?(): void }, what: string): Promise<string> {
  const chunks: Buffer[] = [];
  let total = 0;
  for await (const chunk of stream) {
    total += (chunk as Buffer).length;
    if (total > MAX_INPUT_BYTES) {
      stream.destroy?.();
      throw new UsageError(`${what}: more than ${MAX_INPUT_BYTES} bytes, the most the fleet accepts in one request`);
    }
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks, total).toString('utf8');
}

/**
 * The key from the flags: `--key-stdin` reads it, `--key` takes it with a warning (the process list and the shell's
 * history show it).
 */
export async function keyFromFlags(flags: ConnectionFlags): Promise<string | undefined> {
  if (flags.key !== undefined && flags.keyStdin === true) throw new UsageError('--key and --key-stdin: give one');
  if (flags.keyStdin === true) {
    const key = (await readStdin('API key')).trim();
    if (key === '') throw new UsageError('--key-stdin: stdin held no key');
    return key;
  }
  if (flags.key !== undefined) {
    warn('--key puts the key in the process list (ps) and your shell history; prefer MCP_FLEET_KEY, --key-stdin or a profile');
    return flags.key;
  }
  return undefined;
}

/** Whether a fleet URL is configured at all (flag, variable or profile): `keys` goes over HTTP then, else to the store. */
export function hasUrl(flags: ConnectionFlags, env: NodeJS.ProcessEnv): boolean {
  if (flags.url !== undefined || (env.MCP_FLEET_URL ?? '') !== '') return true;
  return chosenProfile(flags, env, readConfigFile(configPath(env))) !== undefined;
}

/** `--profile`, else `MCP_FLEET_PROFILE`, else the file's `current`; an explicitly named profile must exist. */
function chosenProfile(flags: ConnectionFlags, env: NodeJS.ProcessEnv, config: ConfigFile): { name: string; profile: Profile } | undefined {
  const named = flags.profile ?? (env.MCP_FLEET_PROFILE || undefined);
  const name = named ?? config.current;
  if (name === undefined) return undefined;
  const profile = Object.hasOwn(config.profiles, name) ? config.profiles[name] : undefined;
  if (profile === undefined) {
    const known = Object.keys(config.profiles);
    const source = flags.profile !== undefined ? '--profile' : named !== undefined ? 'MCP_FLEET_PROFILE' : `"current" in ${configPath(env)}`;
    throw new UsageError(`${source} names the profile "${name}", which does not exist; ${known.length > 0 ? `known: ${known.join(', ')}` : 'save one with: mcp-fleet profile set NAME --url URL --key-stdin'}`);
  }
  return { name, profile };
}

/** Each of the URL and the key from the first that has it (docs/cli.md "Connection"). */
function sources(flags: ConnectionFlags, env: NodeJS.ProcessEnv) {
  const chosen = chosenProfile(flags, env, readConfigFile(configPath(env)));
  return { explicit: flags.profile !== undefined ? chosen?.profile : undefined, fallback: flags.profile === undefined ? chosen?.profile : undefined };
}

/**
 * The fleet's URL: its flag; the profile `--profile` names; `MCP_FLEET_URL`; the profile `MCP_FLEET_PROFILE` or
 * `profile use` chose. Missing is a usage error naming what to set.
 */
export function resolveUrl(flags: ConnectionFlags, env: NodeJS.ProcessEnv, { explicit, fallback } = sources(flags, env)): string {
  const url = flags.url ?? explicit?.url ?? (env.MCP_FLEET_URL || undefined) ?? fallback?.url;
  if (url === undefined) {
    throw new UsageError('no fleet URL: set MCP_FLEET_URL (e.g. http://127.0.0.1:3000/v1), pass --url, or save a profile: mcp-fleet profile set NAME --url URL --key-stdin');
  }
  if (!URL.canParse(url) || !/^https?:$/.test(new URL(url).protocol)) throw new UsageError('the fleet URL must be an http:// or https:// URL, e.g. http://127.0.0.1:3000/v1');
  return url.replace(/\/+$/, '');
}

/** The URL (`resolveUrl`) and the key, from the same places in the same order (`MCP_FLEET_KEY` for the variable). */
export async function resolveConnection(flags: ConnectionFlags, env: NodeJS.ProcessEnv): Promise<Connection> {
  const { explicit, fallback } = sources(flags, env);
  const url = resolveUrl(flags, env, { explicit, fallback });
  const key = (await keyFromFlags(flags)) ?? explicit?.key ?? (env.MCP_FLEET_KEY || undefined) ?? fallback?.key;
  if (key === undefined) {
    throw new UsageError('no API key: set MCP_FLEET_KEY, pipe it to --key-stdin, or save it in a profile: mcp-fleet profile set NAME --url URL --key-stdin');
  }
  return { url, key };
}
