/**
 * What every remote command's action gets: `--json`, the one claim on stdin, and the client, made on first use
 * from the resolved connection (so a command that fails on its own flags never asks for a URL or a key).
 */
import { createClient, type FleetClient, isFleetApiError, isFleetNetworkError } from '@mcp-fleet/client';
import type { Command } from 'commander';
import { type ConnectionFlags, resolveConnection } from './connection.js';
import { CliError, EXIT, exitForStatus } from './exit.js';
import type { PageAnswer } from './listing.js';
import { StdinClaim } from './input.js';

export interface Context {
  json: boolean;
  stdin: StdinClaim;
  client(): Promise<FleetClient>;
}

export function contextOf(command: Command): Context {
  const flags = command.optsWithGlobals<ConnectionFlags & { json?: boolean }>();
  const stdin = new StdinClaim();
  let client: FleetClient | undefined;
  return {
    json: flags.json === true,
    stdin,
    async client() {
      if (client === undefined) {
        if (flags.keyStdin === true) stdin.claim('--key-stdin');
        const { url, key } = await resolveConnection(flags, process.env);
        client = createClient({ baseUrl: url, apiKey: key });
      }
      return client;
    },
  };
}

/**
 * The client's errors as the CLI's: the fleet's refusal by its status (exit.ts), with its code, message, details
 * and request id; no answer at all (network, timeout, not the fleet) exit 1. Neither ever holds the key.
 */
export function cliErrorOf(error: unknown): CliError | undefined {
  if (isFleetApiError(error)) {
    const details = error.details !== undefined && error.details !== null && Object.keys(error.details).length > 0 ? ` ${JSON.stringify(error.details)}` : '';
    const request = error.requestId !== undefined ? ` (request ${error.requestId})` : '';
    const retry = error.retryAfter !== undefined ? `; retry after ${error.retryAfter} s` : '';
    return new CliError(`${error.code}: ${error.message}${details}${retry}${request}`, exitForStatus(error.status));
  }
  if (isFleetNetworkError(error)) return new CliError(error.message, EXIT.failed);
  return undefined;
}

