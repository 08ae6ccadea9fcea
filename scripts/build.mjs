#!/usr/bin/env node
/**
 * `npm run build`, in its order: core (tsup), then every other package and the examples (tsup, their declarations
 * checked against core's, tsup.config.ts), then the dashboard (Vite, into packages/core/dist/dashboard, which tsup
 * leaves alone). Each step's output is passed through; the first that fails ends the build with its exit code.
 * scripts/build-if-stale.mjs runs the same steps, quietly.
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const TSUP = join(ROOT, 'node_modules', 'tsup', 'dist', 'cli-default.js');
const VITE = join(ROOT, 'node_modules', 'vite', 'bin', 'vite.js');

/** The build's steps: node arguments and the environment each adds. */
const STEPS = [
  { args: [TSUP], env: { MCP_FLEET_BUILD_STAGE: 'core' } },
  { args: [TSUP], env: { MCP_FLEET_BUILD_STAGE: 'packages' } },
  // The production build whoever runs this (vitest's global setup sets NODE_ENV=test, which would keep Preact's debug code).
  { args: [VITE, 'build', '--config', 'packages/core/ui/vite.config.ts'], env: { NODE_ENV: 'production' } },
];

/**
 * Runs the steps in order, each as `node …` in the repository; `quiet` keeps their output (returned with the code of
 * the step that failed, or 0) instead of passing it through.
 */
export async function build({ quiet = false } = {}) {
  let output = '';
  for (const { args, env } of STEPS) {
    const code = await new Promise((resolve) => {
      const child = spawn(process.execPath, args, { cwd: ROOT, stdio: ['ignore', quiet ? 'pipe' : 'inherit', quiet ? 'pipe' : 'inherit'], env: { ...process.env, ...(quiet && { NO_COLOR: '1' }), ...env } });
      if (quiet) {
        child.stdout.on('data', (chunk) => (output += chunk));
        child.stderr.on('data', (chunk) => (output += chunk));
      }
      child.on('error', (error) => {
        output += `${error.message}\n`;
        resolve(1);
      });
      child.on('close', (status) => resolve(status ?? 1));
    });
    if (code !== 0) return { code, output };
  }
  return { code: 0, output };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const { code } = await build();
  process.exit(code);
}
