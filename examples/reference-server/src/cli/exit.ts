/**
 * The CLI's exit codes (docs/cli.md "Exit codes"): 0 done; 1 failed (the network, a 5xx, a 429 after the retries,
 * an upstream's failure, anything unexpected); 2 usage (the command line or the connection settings, refused before
 * any request); 4 refused by the fleet as the caller's to fix (every other 4xx: not found, unauthorized, forbidden,
 * conflict, invalid). Messages go to stderr, one line each, prefixed `mcp-fleet:`.
 */

export const EXIT = { ok: 0, failed: 1, usage: 2, refused: 4 } as const;
export type ExitCode = (typeof EXIT)[keyof typeof EXIT];

/** An error that ends the command with its exit code and its message alone (no stack trace). */
export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode: ExitCode,
  ) {
    super(message);
  }
}

/** The command line or the connection settings are wrong: exit 2, before any request. */
export class UsageError extends CliError {
  constructor(message: string) {
    super(message, EXIT.usage);
  }
}

/**
 * An HTTP status the fleet answered → the exit code. 429 and 5xx are the fleet's or the moment's, worth a retry
 * later (1); any other 4xx is the request's, and the same command would be refused again (4).
 */
export function exitForStatus(status: number): ExitCode {
  if (status >= 400 && status < 500 && status !== 429) return EXIT.refused;
  return EXIT.failed;
}

export function warn(message: string): void {
  process.stderr.write(`mcp-fleet: warning: ${message}\n`);
}

export function note(message: string): void {
  process.stderr.write(`mcp-fleet: ${message}\n`);
}
