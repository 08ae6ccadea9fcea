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

type Row = Record<string, unknown>;

/**
 * The client's methods for `/keys` and `POST /servers/import`, in the contract's shapes. The client's facade is one
 * line per route over types generated from the served document; those routes landed beside it (w28-keys,
 * w28-import), so its methods for them come with its next generation. Until a client has them, the commands that
 * need them say so (exit 1) instead of sending requests of their own.
 */
export interface KeysAndImport {
  keys: {
    list(query: { page: number; limit: number }): Promise<PageAnswer<Row>>;
    create(body: { tier?: string; scopes?: string[]; tools?: string[]; expires_at?: string; description?: string }): Promise<Row & { id: string; secret: string }>;
    get(id: string): Promise<Row & { id: string }>;
    revoke(id: string): Promise<{ id: string; revoked: true }>;
  };
  servers: { import(body: { format?: string; document: string; dry_run: boolean; skip_invalid: boolean }): Promise<Row> };
}

export function keysAndImport(client: FleetClient, what: 'keys' | 'import'): KeysAndImport {
  const candidate = client as unknown as Partial<KeysAndImport> & { servers: Partial<KeysAndImport['servers']> };
  const has = what === 'keys' ? typeof candidate.keys?.create === 'function' : typeof candidate.servers.import === 'function';
  if (!has) {
    throw new CliError(`this @mcp-fleet/client has no ${what === 'keys' ? 'keys methods (/keys)' : 'servers.import (POST /servers/import)'} yet; for keys, --local works on the server's store`, EXIT.failed);
  }
  return candidate as KeysAndImport;
}
