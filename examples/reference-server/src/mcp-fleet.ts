/**
 * The `mcp-fleet` command (docs/cli.md): the reference server (`start`), its store's keys and secrets, and a running
 * fleet's API through `@mcp-fleet/client` (`servers`, `tools`, `tool-calls`, `webhooks`, `keys`, `import`,
 * `export`), with profiles for where and as whom.
 */
import { Command, CommanderError } from 'commander';
import { serverCommands, toolCommands, webhookCommands } from './cli/commands.js';
import { cliErrorOf, contextOf, type Context } from './cli/context.js';
import { CliError, EXIT } from './cli/exit.js';
import { transferCommands } from './cli/transfer.js';
import { keyCommands } from './cli/keys.js';
import { profileCommands } from './cli/profiles.js';

/** Runs a sibling entry of dist (the server, the secrets command) as if started on its own, with `args`. */
async function entry(file: string, args: string[]): Promise<void> {
  process.argv = [process.argv[0] as string, file, ...args];
  await import(new URL(`./${file}`, import.meta.url).href);
}

/** An action with its context; commander hands the command last. */
function run(act: (context: Context, ...args: any[]) => Promise<void>) {
  return async (...args: any[]) => {
    const command = args.at(-1) as Command;
    await act(contextOf(command), ...args.slice(0, -1), command);
  };
}

function program(): Command {
  const root = new Command('mcp-fleet')
    .description('mcp-fleet from the command line: run the reference server, or manage a running fleet over its API')
    .option('--url <url>', 'the fleet\'s API, e.g. http://127.0.0.1:3000/v1 (else MCP_FLEET_URL, else the profile)')
    .option('--key <key>', 'the API key: shown by ps, prefer MCP_FLEET_KEY, --key-stdin or a profile')
    .option('--key-stdin', 'read the API key from stdin')
    .option('--profile <name>', 'a saved connection (mcp-fleet profile list); else MCP_FLEET_PROFILE, else the current one')
    .option('--json', 'print the API\'s data as JSON on stdout (messages stay on stderr)')
    .showSuggestionAfterError()
    .exitOverride()
    .configureOutput({ outputError: (text, write) => write(`mcp-fleet: ${text.replace(/^error: /, '')}`) });

  root
    .command('start')
    .description('run the reference server (as npm start): the variables of docs/configuration.md')
    .action(() => entry('main.js', []));
  root
    .command('secrets')
    .description('secrets at rest of the server\'s store')
    .command('rotate')
    .description('encrypt every stored secret under MCP_FLEET_ENCRYPTION_KEY (on the server\'s host)')
    .action(() => entry('secrets.js', ['rotate']));

  serverCommands(root, run);
  toolCommands(root, run);
  webhookCommands(root, run);
  keyCommands(root, run);
  transferCommands(root, run);
  profileCommands(root);
  return root;
}

async function main(argv: string[]): Promise<void> {
  try {
    await program().parseAsync(argv, { from: 'user' });
  } catch (error) {
    if (error instanceof CommanderError) {
      // Help and --version end well; any other complaint of the parser is a usage error (commander printed it).
      process.exitCode = error.exitCode === 0 ? EXIT.ok : EXIT.usage;
      return;
    }
    const failure = error instanceof CliError ? error : cliErrorOf(error);
    if (failure === undefined) {
      process.stderr.write(`mcp-fleet: unexpected failure: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
      process.exitCode = EXIT.failed;
      return;
    }
    process.stderr.write(`mcp-fleet: ${failure.message}\n`);
    process.exitCode = failure.exitCode;
  }
}

await main(process.argv.slice(2));
