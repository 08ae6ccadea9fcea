/**
 * Secrets at rest of the reference server's store, from the command line:
 *
 *   npm run secrets -- rotate      (or: npx mcp-fleet secrets rotate)
 *
 * `rotate` encrypts every stored secret (server tokens, client secrets, stdio env values, webhook secrets) that is
 * still plaintext, or under a key of MCP_FLEET_PREVIOUS_ENCRYPTION_KEYS, under MCP_FLEET_ENCRYPTION_KEY (or the key
 * an SQLite store generated beside its file), and prints how many records it wrote. Run it from the directory the server runs in,
 * with the same variables; the server may keep running.
 */
import { runCli, withStoredFleet } from './cli.js';
import { ConfigError, readConfig } from './config.js';
import { encryptionOptions } from './encryption.js';

const USAGE = `usage (from the repository root, where npm start runs):
  npm run secrets -- rotate
or:
  npx mcp-fleet secrets rotate`;

async function run(argv: string[]): Promise<void> {
  if (argv.length !== 1 || argv[0] !== 'rotate') throw new ConfigError(USAGE);
  const config = readConfig(process.env);
  if (config.store.kind === 'memory') throw new ConfigError('MCP_FLEET_STORE is memory://: there is no stored secret to rotate');
  if (encryptionOptions(config).encryptionKey === undefined) {
    throw new ConfigError('MCP_FLEET_ENCRYPTION_KEY is not set: rotating encrypts under it (e.g. from `openssl rand -base64 32`)');
  }
  await withStoredFleet(config, async (fleet) => {
    await fleet.ready().catch((error: Error) => {
      throw new ConfigError(error.message);
    });
    const rotated = await fleet.secrets.rotate();
    if (rotated.isErr()) throw new ConfigError(`${rotated.error.code}: ${rotated.error.message}`);
    const { servers, webhooks } = rotated.value;
    console.log(`rotated: ${servers} server${servers === 1 ? '' : 's'}, ${webhooks} webhook${webhooks === 1 ? '' : 's'}; every secret is now under the current key`);
  });
}

runCli(run);
