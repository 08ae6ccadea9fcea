/**
 * `mcp-fleet keys …`, two doors to one set of keys (docs/cli.md "Keys"):
 * - over HTTP (`/keys`) when a fleet URL is configured (`--url`, `MCP_FLEET_URL`, or a profile): keys of the calling
 *   key's own account, never with more than that key has;
 * - else, or with `--local`, on the store `MCP_FLEET_STORE` names (the reference server's `npm run keys`, any
 *   account), on the server's host.
 */
import type { Command } from 'commander';
import { type ConnectionFlags, hasUrl } from './connection.js';
import type { FleetClient } from '@mcp-fleet/client';
import type { Context } from './context.js';
import { UsageError } from './exit.js';
import { byId } from './commands.js';
import { collect, listOptions, type ListFlags } from './listing.js';
import { type Column, details, printJson, printLine, table } from './output.js';
import { note } from './exit.js';

type Row = Record<string, unknown>;
type Run = (act: (context: Context, ...args: any[]) => Promise<void>) => (...args: any[]) => Promise<void>;

interface KeyFlags {
  tier?: string;
  scopes?: string;
  tools?: string[];
  name?: string;
  description?: string;
  expiresAt?: string;
  local?: boolean;
}

const KEY_COLUMNS: Column<Row>[] = [
  { header: 'ID', value: (r) => r.id, max: 28 },
  { header: 'TIER', value: (r) => r.tier },
  // No list: every scope but keys:manage, and but servers:write for a key with an allowlist (docs/configuration.md).
  { header: 'SCOPES', value: (r) => r.scopes ?? (r.tools === null && r.prompts === null && r.resources === null ? 'all but keys:manage' : 'all but servers:write,keys:manage'), max: 48 },
  { header: 'TOOLS', value: (r) => (r.tools === null ? 'all' : (r.tools as string[]).join('|')), max: 32 },
  { header: 'DESCRIPTION', value: (r) => r.description, max: 32 },
  { header: 'EXPIRES', value: (r) => r.expires_at, max: 24 },
  { header: 'STATE', value: (r) => (r.revoked_at !== null ? 'revoked' : r.expires_at !== null && Date.parse(String(r.expires_at)) <= Date.now() ? 'expired' : 'active') },
  { header: 'LAST USED', value: (r) => r.last_used_at, max: 24 },
  { header: 'CREATED', value: (r) => r.created_at, max: 24 },
];

/** The store's door: the reference server's key command (keys.ts), with the arguments it takes. */
async function onStore(argv: string[]): Promise<void> {
  process.argv = [process.argv[0] as string, 'keys', ...argv];
  // A path the bundler leaves alone: dist/keys.js beside this file, loaded only for the store's door (it opens the store).
  await import(new URL('./keys.js', import.meta.url).href);
}

function local(command: Command, flags: KeyFlags): boolean {
  return flags.local === true || !hasUrl(command.optsWithGlobals<ConnectionFlags>(), process.env);
}

function noAccountOverHttp(account: string | undefined): void {
  if (account !== undefined) {
    throw new UsageError(
      `over HTTP a key is made for the calling key's own account, so "${account}" is not taken; for another account, use the store on the server's host: mcp-fleet keys … --local (or run without MCP_FLEET_URL, --url and a profile)`,
    );
  }
}

export function keyCommands(program: Command, run: Run): void {
  const keys = program.command('keys').description('API keys: over HTTP with a fleet URL, else (or with --local) on the server\'s store');
  const localOption = (command: Command) => command.option('--local', 'the store MCP_FLEET_STORE names (the server\'s host), not the API');

  localOption(keys.command('create [account]'))
    .description('create a key; its secret is printed this once (over HTTP: for your own account; --local: for ACCOUNT)')
    .option('--tier <tier>', 'free, pro or enterprise (over HTTP: at most your key\'s)')
    .option('--scopes <list>', 'comma-separated scopes (over HTTP: only scopes your key has)')
    .option('--tools <globs>', 'a tool allowlist, |-separated or the flag repeated', (value: string, all: string[] = []) => [...all, value])
    .option('--description <text>', 'what the key is for (over HTTP)')
    .option('--expires-at <time>', 'ISO 8601 time the key stops working (over HTTP)')
    .option('--name <text>', 'a name (--local)')
    .action(
      run(async (context, account: string | undefined, flags: KeyFlags, command: Command) => {
        if (local(command, flags)) {
          if (flags.description !== undefined || flags.expiresAt !== undefined) throw new UsageError('--description and --expires-at are the API\'s: set MCP_FLEET_URL (or --url, a profile); --local takes --name');
          if (account === undefined) throw new UsageError('keys create --local ACCOUNT: which account the key is for');
          const pass = [['--tier', flags.tier], ['--scopes', flags.scopes], ['--name', flags.name], ...(flags.tools ?? []).map((t) => ['--tools', t])].filter((p): p is [string, string] => p[1] !== undefined);
          return onStore(['create', account, ...pass.flat()]);
        }
        noAccountOverHttp(account);
        if (flags.name !== undefined) throw new UsageError('--name is the store\'s (--local); over HTTP give --description');
        const body = {
          ...(flags.tier !== undefined && { tier: flags.tier }),
          ...(flags.scopes !== undefined && { scopes: flags.scopes.split(',').map((s) => s.trim()) }),
          ...(flags.tools !== undefined && { tools: flags.tools.flatMap((t) => t.split('|')) }),
          ...(flags.description !== undefined && { description: flags.description }),
          ...(flags.expiresAt !== undefined && { expires_at: flags.expiresAt }),
        };
        // The fleet judges the values (an unknown tier or scope is its 400, exit 4).
        const created = await (await context.client()).keys.create(body as Parameters<FleetClient['keys']['create']>[0]);
        if (context.json) return printJson(created);
        const { secret, ...key } = created;
        printLine(`${details(key)}\n\nsecret (shown this once): ${String(secret)}`);
      }),
    );

  localOption(listOptions(keys.command('list [account]')))
    .description('the keys (over HTTP: your account\'s; --local: ACCOUNT\'s); never their secrets')
    .action(
      run(async (context, account: string | undefined, flags: KeyFlags & ListFlags, command: Command) => {
        if (local(command, flags)) {
          if (account === undefined) throw new UsageError('keys list --local ACCOUNT: whose keys');
          return onStore(['list', account]);
        }
        noAccountOverHttp(account);
        const client = await context.client();
        const rows = await collect(flags, (page) => client.keys.list(page), 'keys');
        if (context.json) return printJson(rows);
        if (rows.length === 0) return note('no keys');
        printLine(table(rows, KEY_COLUMNS));
      }),
    );

  byId(keys, run, 'get <id>', 'one key of your account (over HTTP)', (client, id) => client.keys.get(id));

  localOption(keys.command('revoke <id>'))
    .description('revoke a key, for good')
    .action(
      run(async (context, id: string, flags: KeyFlags, command: Command) => {
        if (local(command, flags)) return onStore(['revoke', id]);
        const revoked = await (await context.client()).keys.revoke(id);
        if (context.json) printJson(revoked);
        else printLine(`revoked ${revoked.id}`);
      }),
    );
}
