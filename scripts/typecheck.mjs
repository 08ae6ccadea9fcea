#!/usr/bin/env node
// `npm run typecheck`: tsc over the two TypeScript projects, the packages with their tests and examples (tsconfig.json)
// and the dashboard (packages/core/ui/tsconfig.json, DOM and JSX), at the same time. tsc uses one core; one after the
// other they took the sum of both (about 40 s and 17 s of CPU), side by side on 2 cores the longer of the two. Each
// project's output is printed whole, in this order, once both have ended; the exit code is non-zero if either failed.
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const PROJECTS = ['tsconfig.json', 'packages/core/ui/tsconfig.json'];
const root = fileURLToPath(new URL('..', import.meta.url));
const tsc = fileURLToPath(new URL('../node_modules/typescript/bin/tsc', import.meta.url));

function check(project) {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [tsc, '--noEmit', '-p', project], { cwd: root });
    let output = '';
    child.stdout.on('data', (chunk) => (output += chunk));
    child.stderr.on('data', (chunk) => (output += chunk));
    child.on('error', (error) => resolve({ project, code: 1, output: `${output}${error.message}\n` }));
    child.on('close', (code, signal) => resolve({ project, code: code ?? 1, output: signal === null ? output : `${output}tsc ended by ${signal}\n` }));
  });
}

const results = await Promise.all(PROJECTS.map(check));
for (const { project, code, output } of results) {
  if (output !== '') process.stdout.write(output);
  if (code !== 0) console.error(`typecheck: ${project} failed (tsc exited ${code})`);
}
process.exit(results.some((r) => r.code !== 0) ? 1 : 0);
