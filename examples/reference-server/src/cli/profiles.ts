/**
 * `mcp-fleet profile set|list|use|remove`: named connections (a URL and a key) in the config file
 * (connection.ts), so that `--profile prod` or `profile use prod` replaces the flags and variables.
 */
import type { Command } from 'commander';
import { type ConfigFile, type ConnectionFlags, configPath, keyFromFlags, PROFILE_NAME, readConfigFile, writeConfigFile } from './connection.js';
import { EXIT, CliError, UsageError, note } from './exit.js';
import { printJson, table, printLine } from './output.js';

function checkName(name: string): void {
  if (!PROFILE_NAME.test(name)) throw new UsageError(`profile name "${name}": use 1 to 64 letters, digits, _, . or -`);
}

export function profileCommands(program: Command): void {
  const profile = program.command('profile').description('named connections (URL and key) saved in $XDG_CONFIG_HOME/mcp-fleet/config.json, mode 0600');

  profile
    .command('set <name>')
    .description('save or change a profile: --url, and the key from --key-stdin (or MCP_FLEET_KEY with --key-from-env)')
    .option('--key-from-env', 'save the key MCP_FLEET_KEY holds')
    .action(async (name: string, options: { keyFromEnv?: boolean }, command: Command) => {
      checkName(name);
      const flags = command.optsWithGlobals<ConnectionFlags>();
      const path = configPath(process.env);
      const config = readConfigFile(path);
      const existing = Object.hasOwn(config.profiles, name) ? config.profiles[name] : undefined;
      let key = await keyFromFlags(flags);
      if (options.keyFromEnv === true) {
        if (key !== undefined) throw new UsageError('--key-from-env and --key/--key-stdin: give one');
        key = process.env.MCP_FLEET_KEY || undefined;
        if (key === undefined) throw new UsageError('--key-from-env: MCP_FLEET_KEY is not set');
      }
      const url = flags.url ?? existing?.url;
      if (url === undefined) throw new UsageError(`profile "${name}" is new: give its --url, e.g. --url http://127.0.0.1:3000/v1`);
      if (!URL.canParse(url) || !/^https?:$/.test(new URL(url).protocol)) throw new UsageError('--url must be an http:// or https:// URL, e.g. http://127.0.0.1:3000/v1');
      key ??= existing?.key;
      config.profiles[name] = { url: url.replace(/\/+$/, ''), ...(key !== undefined && { key }) };
      // The first profile saved becomes the current one: one profile needs no --profile.
      config.current ??= name;
      writeConfigFile(path, config);
      note(`saved profile "${name}" in ${path}${key === undefined ? ' (no key: MCP_FLEET_KEY or --key-stdin supplies it)' : ''}${config.current === name ? ' (current)' : ''}`);
    });

  profile
    .command('list')
    .description('the saved profiles (never their keys)')
    .action((_options: unknown, command: Command) => {
      const config = readConfigFile(configPath(process.env));
      const rows = Object.entries(config.profiles).map(([name, p]) => ({ name, url: p.url, key: p.key !== undefined, current: config.current === name }));
      if (command.optsWithGlobals<{ json?: boolean }>().json === true) return printJson(rows);
      if (rows.length === 0) return note('no profiles yet: mcp-fleet profile set NAME --url URL --key-stdin');
      printLine(table(rows, [
        { header: '', value: (r) => (r.current ? '*' : ' '), max: 1 },
        { header: 'NAME', value: (r) => r.name, max: 64 },
        { header: 'URL', value: (r) => r.url, max: 80 },
        { header: 'KEY', value: (r) => (r.key ? 'saved' : 'none') },
      ]));
    });

  profile
    .command('use <name>')
    .description('make a profile the current one (used when neither --profile nor MCP_FLEET_PROFILE names one)')
    .action((name: string) => changeProfile(name, (config) => (config.current = name), `current profile: ${name}`));

  profile
    .command('remove <name>')
    .description('delete a profile (and its saved key)')
    .action((name: string) =>
      changeProfile(
        name,
        (config) => {
          delete config.profiles[name];
          if (config.current === name) delete config.current;
        },
        `removed profile "${name}"`,
      ),
    );
}

/** Changes the config file around the existing profile `name` (none: exit 4) and says what was done. */
function changeProfile(name: string, change: (config: ConfigFile) => void, done: string): void {
  const path = configPath(process.env);
  const config = readConfigFile(path);
  if (!Object.hasOwn(config.profiles, name)) throw new CliError(`no profile "${name}" in ${path}; known: ${Object.keys(config.profiles).join(', ') || 'none'}`, EXIT.refused);
  change(config);
  writeConfigFile(path, config);
  note(done);
}
