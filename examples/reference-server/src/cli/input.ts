/**
 * What create and update commands send, and how secrets reach them without the command line (docs/cli.md
 * "Secrets"): a body from a file or stdin (`--from FILE`, `--from -`), a bearer token from a variable or stdin, stdio
 * `env` values from the CLI's own environment (`--env NAME`) or a file (`--env-file`). A value on the command line
 * (`--env NAME=value`) is refused: `ps` and the shell's history show every argument.
 */
import { createReadStream } from 'node:fs';
import { readAtMost, readStdin } from './connection.js';
import { UsageError } from './exit.js';

/** Stdin can be read once: the flags that read it say so, and a second one is a usage error. */
export class StdinClaim {
  private owner: string | undefined;
  claim(flag: string): void {
    if (this.owner !== undefined && this.owner !== flag) throw new UsageError(`${this.owner} and ${flag} both read stdin: give one of them a file or a variable`);
    this.owner = flag;
  }
}

/** A file's text, or stdin's for `-`. */
export async function readSource(source: string, flag: string, stdin: StdinClaim): Promise<string> {
  if (source === '-') {
    stdin.claim(flag);
    return readStdin(flag);
  }
  try {
    return await readAtMost(createReadStream(source), `${flag} ${source}`);
  } catch (error) {
    if (error instanceof UsageError) throw error;
    throw new UsageError(`${flag} ${source}: ${(error as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file' : (error as Error).message}`);
  }
}

/** A JSON object from a file or stdin; what it holds is the fleet's to judge. */
export async function readJsonObject(source: string, flag: string, stdin: StdinClaim): Promise<Record<string, unknown>> {
  const text = await readSource(source, flag, stdin);
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw new UsageError(`${flag} ${source}: not valid JSON (${(error as Error).message})`);
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) throw new UsageError(`${flag} ${source}: expected a JSON object`);
  return parsed as Record<string, unknown>;
}

const VARIABLE = /^[A-Za-z_][A-Za-z0-9_]*$/;

/**
 * `--env NAME` (repeatable): the value of NAME in this process's environment, as `docker run -e NAME` does.
 * `--env NAME=value` is refused, naming the ways that keep the value off the command line.
 */
export function envFromProcess(names: readonly string[], env: NodeJS.ProcessEnv): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of names) {
    if (name.includes('=')) {
      const bare = name.slice(0, name.indexOf('='));
      throw new UsageError(`--env takes a variable's name, not its value (the process list shows arguments): export ${bare} and pass --env ${bare}, or use --env-file FILE`);
    }
    if (!VARIABLE.test(name)) throw new UsageError(`--env ${name}: not a variable name`);
    const value = env[name];
    if (value === undefined) throw new UsageError(`--env ${name}: ${name} is not set in this environment`);
    out[name] = value;
  }
  return out;
}

/** `--env-file FILE`: `NAME=value` lines (a dotenv file without expansion); blank lines and `#` comments skipped. */
export async function envFromFile(source: string, stdin: StdinClaim): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  const lines = (await readSource(source, '--env-file', stdin)).split(/\r?\n/);
  lines.forEach((raw, index) => {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) return;
    const at = line.indexOf('=');
    const name = line.slice(0, at).replace(/^export\s+/, '').trim();
    if (at < 0 || !VARIABLE.test(name)) throw new UsageError(`--env-file ${source}: line ${index + 1} is not NAME=value`);
    let value = line.slice(at + 1).trim();
    if (value.length >= 2 && (value[0] === '"' || value[0] === "'") && value.endsWith(value[0])) value = value.slice(1, -1);
    out[name] = value;
  });
  return out;
}

/** A secret from a named variable (`--token-env VAR`) or stdin (`--token-stdin`). */
export async function secretFrom(what: string, flags: { env?: string; stdin?: boolean }, names: { env: string; stdin: string }, env: NodeJS.ProcessEnv, stdin: StdinClaim): Promise<string | undefined> {
  if (flags.env !== undefined && flags.stdin === true) throw new UsageError(`${names.env} and ${names.stdin}: give one`);
  if (flags.env !== undefined) {
    const value = env[flags.env];
    if (value === undefined || value === '') throw new UsageError(`${names.env} ${flags.env}: ${flags.env} is not set in this environment`);
    return value;
  }
  if (flags.stdin === true) {
    stdin.claim(names.stdin);
    const value = (await readStdin(what)).trim();
    if (value === '') throw new UsageError(`${names.stdin}: stdin held no ${what}`);
    return value;
  }
  return undefined;
}

/** `--args '{"text":"hi"}'` or `--args-file FILE|-`: a tool's arguments, a JSON object. */
export function parseJsonObject(text: string, flag: string): Record<string, unknown> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw new UsageError(`${flag}: not valid JSON (${(error as Error).message})`);
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) throw new UsageError(`${flag}: expected a JSON object, e.g. '{"text":"hi"}'`);
  return parsed as Record<string, unknown>;
}

/** A positive integer option. */
export function integer(flag: string, min = 1, max = Number.MAX_SAFE_INTEGER): (value: string) => number {
  return (value) => {
    if (!/^\d+$/.test(value) || Number(value) < min || Number(value) > max) {
      throw new UsageError(`${flag} must be an integer${max === Number.MAX_SAFE_INTEGER ? ` of at least ${min}` : ` from ${min} to ${max}`}`);
    }
    return Number(value);
  };
}
