#!/usr/bin/env node
/**
 * `npx mcp-fleet …` from the repository (docs/cli.md): builds if the sources changed (quietly, on stderr), then runs
 * the command, dist/mcp-fleet.js, with the arguments as given, flags included (npm passes nothing through `npm run`
 * without `--`). `npx mcp-fleet --help` lists the commands.
 */
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const build = spawnSync(process.execPath, [fileURLToPath(new URL('../../../scripts/build-if-stale.mjs', import.meta.url))], { stdio: ['ignore', 'ignore', 'inherit'] });
if (build.status !== 0) process.exit(build.status ?? 1);
process.argv = [process.argv[0], fileURLToPath(new URL('../dist/mcp-fleet.js', import.meta.url)), ...process.argv.slice(2)];
await import(new URL('../dist/mcp-fleet.js', import.meta.url).href);
