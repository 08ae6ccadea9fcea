import { ConfigError, readConfig } from './config.js';

/**
 * `npm start`: the configuration first, then the engine. A variable that is wrong stops the start before the fleet's
 * modules load (the MCP SDKs, zod and undici, about half a second), with one line naming it and exit code 2; so does
 * a store that cannot be opened, a key the fleet refuses or a port in use, once they are tried (server.ts).
 */
async function main(): Promise<void> {
  const config = readConfig(process.env);
  const { run } = await import('./server.js');
  await run(config);
}

main().catch((error: unknown) => {
  if (error instanceof ConfigError) console.error(`mcp-fleet: ${error.message}`);
  else console.error('mcp-fleet: failed to start:', error);
  process.exit(2);
});
