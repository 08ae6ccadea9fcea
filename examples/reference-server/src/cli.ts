/**
 * What the reference server's command-line tools (`keys`, `secrets`) share: a fleet over the configured store without
 * background work, closed with the store whatever happens; and their exit: a ConfigError, or an option a check
 * refused (TypeError), is one line on stderr and exit 2, never a stack trace; a refusal of the fleet's (CliError)
 * exits with its code, as the `mcp-fleet` command's do (cli/exit.ts).
 */
import { createFleet, type Fleet } from '@mcp-fleet/core';
import { CliError } from './cli/exit.js';
import { ConfigError, type ServerConfig } from './config.js';
import { encryptionOptions } from './encryption.js';
import { openStore } from './store.js';

/** Opens the store `MCP_FLEET_STORE` names and a fleet over it (the server's keys and secrets), runs `use`, closes both. */
export async function withStoredFleet<T>(config: ServerConfig, use: (fleet: Fleet) => Promise<T>): Promise<T> {
  const { store } = await openStore(config.store);
  const fleet = createFleet({ store, ...encryptionOptions(config), webhooks: { worker: false } });
  try {
    return await use(fleet);
  } finally {
    await fleet.close();
    await store.close();
  }
}

/** Runs a command with the process's arguments; its refusals exit 2 (4 for the fleet's) with their message alone. */
export function runCli(run: (argv: string[]) => Promise<void>): void {
  run(process.argv.slice(2)).catch((error: unknown) => {
    console.error(error instanceof ConfigError || error instanceof TypeError || error instanceof CliError ? error.message : error);
    process.exit(error instanceof CliError ? error.exitCode : 2);
  });
}
