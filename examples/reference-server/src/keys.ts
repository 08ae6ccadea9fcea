/**
 * API keys of the reference server's store, from the command line (the `--` keeps npm from taking the flags; the
 * `mcp-fleet` bin of this example needs none: `npx mcp-fleet keys create acme --tier pro`):
 *
 *   npm run keys -- create <account> [--tier free|pro|enterprise] [--scopes servers:read,servers:write] [--name text]
 *                                    [--tools 'search__*|files__read_*']   (repeatable; quote it: the shell owns | and *)
 *   npm run keys -- list <account>
 *   npm run keys -- revoke <key_id>
 *
 * It opens the store that MCP_FLEET_STORE names (default: the embedded one), so run it from the same directory
 * as the server. The server may keep running: SQLite lets both write the file.
 */
import { parseArgs } from 'node:util';
import { type ApiKey, ERROR_CODES, type FleetError, SCOPES, type Scope, TIERS, type Tier } from '@mcp-fleet/core';
import { runCli, withStoredFleet } from './cli.js';
import { CliError, exitForStatus } from './cli/exit.js';
import { ConfigError, readConfig } from './config.js';

const USAGE = `usage (from the repository root, where npm start runs):
  npm run keys -- create <account> [--tier free|pro|enterprise] [--scopes a,b] [--name text] [--tools 'glob|glob']
  npm run keys -- list <account>
  npm run keys -- revoke <key_id>
or without the --:
  npx mcp-fleet keys create <account> [--tier …] [--scopes …] [--name …] [--tools …]
    (with a fleet URL configured, MCP_FLEET_URL or a profile, add --local: else it goes over HTTP; docs/cli.md)`;

const FLAGS = ['tier', 'scopes', 'name', 'tools'] as const;

/**
 * `npm run keys create acme --tier pro` (no `--`): npm keeps `--tier` as its own config (`npm_config_tier`) and
 * passes `pro` on as an argument. Say so, rather than a usage that does not explain why.
 */
function flagsTakenByNpm(env: NodeJS.ProcessEnv): string | undefined {
  if (env.npm_lifecycle_event !== 'keys') return undefined;
  const taken = FLAGS.filter((flag) => env[`npm_config_${flag}`] !== undefined);
  if (taken.length === 0) return undefined;
  return `npm took ${taken.map((flag) => `--${flag}`).join(', ')} for itself: put -- before the arguments, e.g.
  npm run keys -- create acme --tier pro
or use the bin, which needs none:
  npx mcp-fleet keys create acme --tier pro`;
}

function describe(key: ApiKey): string {
  const limited = key.tools !== null || key.prompts !== null || key.resources !== null;
  // No scope list: every scope but keys:manage, and but servers:write for a key with an allowlist (docs/configuration.md).
  const scopes =
    key.scopes === null
      ? limited
        ? 'all scopes but servers:write and keys:manage'
        : 'all scopes but keys:manage'
      : SCOPES.every((scope) => key.scopes?.includes(scope))
        ? 'all scopes'
        : key.scopes.join(',');
  const tools = key.tools === null ? 'all tools' : `tools ${key.tools.join('|')}`;
  const state = key.revoked_at === null ? 'active' : `revoked ${key.revoked_at}`;
  return `${key.id}  ${key.account}  ${key.tier}  ${scopes}  ${key.name ?? '-'}  ${tools}  created ${key.created_at}  ${state}`;
}

/** The fleet's refusal exits as over HTTP: 4 for what the request must fix (an unknown key, a bad pattern), else 1. */
function fail(error: FleetError): never {
  const details = Object.keys(error.details).length > 0 ? ` ${JSON.stringify(error.details)}` : '';
  throw new CliError(`${error.code}: ${error.message}${details}`, exitForStatus(ERROR_CODES[error.code].status));
}

async function run(argv: string[]): Promise<void> {
  const swallowed = flagsTakenByNpm(process.env);
  if (swallowed !== undefined) throw new ConfigError(swallowed);
  const { positionals, values } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: { tier: { type: 'string' }, scopes: { type: 'string' }, name: { type: 'string' }, tools: { type: 'string', multiple: true } },
  });
  const [command, target] = positionals;
  if (command === undefined || target === undefined || positionals.length > 2) throw new ConfigError(USAGE);
  const config = readConfig(process.env);
  if (config.store.kind === 'memory') throw new ConfigError('MCP_FLEET_STORE is memory://: keys made here would vanish on exit');
  // The server's keys: the CLI opens the same store, and a fleet checks them at start.
  await withStoredFleet(config, async (fleet) => {
    if (command === 'create') {
      const tier = (values.tier ?? 'free') as Tier;
      if (!TIERS.includes(tier)) throw new ConfigError(`--tier must be one of ${TIERS.join(', ')}`);
      const scopes = values.scopes?.split(',').map((s) => s.trim()) as Scope[] | undefined;
      const unknown = scopes?.find((s) => !SCOPES.includes(s));
      if (unknown !== undefined) throw new ConfigError(`--scopes: unknown scope "${unknown}"; known: ${SCOPES.join(', ')}`);
      // `--tools 'a__*|b__*'`, or the flag once per pattern; fleet.keys.create judges the patterns.
      const tools = values.tools?.flatMap((value) => value.split('|'));
      const created = await fleet.keys.create({ account: target, tier, ...(scopes && { scopes }), ...(tools && { tools }), ...(values.name && { name: values.name }) });
      if (created.isErr()) fail(created.error);
      console.log(describe(created.value.key));
      console.log(`secret (shown this once): ${created.value.secret}`);
    } else if (command === 'list') {
      // Every page: the operator asked for the account's keys, not the first 100.
      let shown = 0;
      for (let page = 1; ; page++) {
        const keys = await fleet.keys.list(target, { page, limit: 100 });
        if (keys.isErr()) fail(keys.error);
        for (const key of keys.value.data) console.log(describe(key));
        shown += keys.value.data.length;
        if (page >= keys.value.pagination.pages) break;
      }
      if (shown === 0) console.log(`no keys for account "${target}"`);
    } else if (command === 'revoke') {
      const revoked = await fleet.keys.revoke(target);
      if (revoked.isErr()) fail(revoked.error);
      console.log(describe(revoked.value));
    } else {
      throw new ConfigError(USAGE);
    }
  });
}

runCli(run);
