/**
 * What docs/architecture.md "stdio servers" asks of stdio servers, in one place: checked when a server is created or
 * updated (`schema.ts`) and again when its process is spawned (`stdio/supervisor.ts`), so the two cannot drift. It
 * lives with the configuration it judges, below the supervisor that also reads it.
 */

/** Env names that change how a program loads or where its traffic goes; refused so a server cannot hijack its child. */
const LOADER_ENV = [/^LD_/i, /^DYLD_/i, /^NODE_OPTIONS$/i, /^NODE_PATH$/i, /^PYTHONPATH$/i, /^BASH_ENV$/i, /^OPENSSL_/i, /_PROXY$/i];

/** True for an env name a stdio server may not set (400 at create and update). */
export function isLoaderEnvName(name: string): boolean {
  return LOADER_ENV.some((re) => re.test(name));
}

/** The allowlist compares the server's `command` exactly: no path lookup, no trimming, no case folding. */
export function isAllowedCommand(commands: readonly string[], command: string): boolean {
  return commands.includes(command);
}

/** The child's whole environment: the server's `env` plus `PATH` (ours, never the server's), nothing of the host's. */
export function childEnv(env: Readonly<Record<string, string>> | undefined, path: string | undefined): Record<string, string> {
  const result: Record<string, string> = { ...env };
  delete result.PATH;
  if (path !== undefined) result.PATH = path;
  return result;
}
