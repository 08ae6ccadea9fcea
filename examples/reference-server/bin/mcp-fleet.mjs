#!/usr/bin/env node
/**
 * `npx mcp-fleet start`, `npx mcp-fleet keys …` and `npx mcp-fleet secrets rotate` from the repository: builds if the sources changed (quietly),
 * then runs the reference server or its key CLI with the arguments as given, flags included (npm passes nothing
 * through `npm run` without `--`).
 */
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const USAGE = `usage:
  npx mcp-fleet start                  the reference server (as npm start)
  npx mcp-fleet keys create <account> [--tier free|pro|enterprise] [--scopes a,b] [--name text]
  npx mcp-fleet keys list <account>
  npx mcp-fleet keys revoke <key_id>
  npx mcp-fleet secrets rotate         encrypts every stored secret under MCP_FLEET_ENCRYPTION_KEY`;

const [command, ...args] = process.argv.slice(2);
const entry = { start: 'main.js', keys: 'keys.js', secrets: 'secrets.js' }[command ?? ''];
if (entry === undefined) {
  console.error(USAGE);
  process.exit(2);
}
const build = spawnSync(process.execPath, [fileURLToPath(new URL('../../../scripts/build-if-stale.mjs', import.meta.url))], { stdio: 'inherit' });
if (build.status !== 0) process.exit(build.status ?? 1);
process.argv = [process.argv[0], fileURLToPath(new URL(`../dist/${entry}`, import.meta.url)), ...args];
await import(new URL(`../dist/${entry}`, import.meta.url).href);
