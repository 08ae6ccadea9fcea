/**
 * What scripts/conformance/run.mjs (client scenarios) and scripts/conformance/server.mjs (server scenarios) share:
 * where the suite is, the Node 22 it runs on, running a command, reading the suite's checks.json files.
 */
import { spawn } from 'node:child_process';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The Node the suite runs on: the `node` npm package at this exact version. */
export const NODE22 = '22.23.3';
export const ROOT = fileURLToPath(new URL('../..', import.meta.url));
export const SUITE = join(ROOT, 'node_modules', '@modelcontextprotocol', 'conformance', 'dist', 'index.js');

/** Runs a command; resolves with its exit code and, unless `inherit`, its combined output. */
export function run(command, commandArgs, { inherit = false, env = process.env } = {}) {
  return new Promise((resolve, reject) => {
    const child = spawn(command, commandArgs, { cwd: ROOT, env, stdio: inherit ? 'inherit' : ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout?.on('data', (chunk) => (output += chunk));
    child.stderr?.on('data', (chunk) => (output += chunk));
    child.on('error', reject);
    child.on('close', (code, signal) => resolve({ code: code ?? (signal === null ? 1 : 128), output }));
  });
}

export const seconds = (since) => ((performance.now() - since) / 1000).toFixed(1);

export const stripAnsi = (text) => text.replace(/\u001b\[[0-9;]*m/g, '');

/** The absolute path of the Node 22 binary npx provides (downloaded once, then from npm's cache). */
export async function node22() {
  const { code, output } = await run('npx', ['--yes', '--prefer-offline', '--package', `node@${NODE22}`, '--', 'node', '-p', 'process.version + "\\n" + process.execPath']);
  const lines = output.split('\n').map((line) => line.trim());
  const at = lines.indexOf(`v${NODE22}`);
  if (code !== 0 || at === -1 || !lines[at + 1]) throw new Error(`could not get Node ${NODE22} through npx:\n${output}`);
  return lines[at + 1];
}

/** The installed suite's version (package.json). */
export async function suiteVersion() {
  return JSON.parse(await readFile(join(ROOT, 'node_modules', '@modelcontextprotocol', 'conformance', 'package.json'), 'utf8')).version;
}

/** Every checks.json the suite wrote under `dir` (one per scenario run; auth scenarios nest a folder deeper). */
export async function readChecks(dir) {
  const entries = await readdir(dir, { recursive: true });
  const files = entries.filter((entry) => entry.endsWith('checks.json'));
  const lists = await Promise.all(files.map(async (file) => JSON.parse(await readFile(join(dir, file), 'utf8'))));
  return lists.flat();
}

/** Counts of a run's checks by status. */
export function countChecks(checks) {
  const count = (status) => checks.filter((check) => check.status === status).length;
  return { success: count('SUCCESS'), failure: count('FAILURE'), skipped: count('SKIPPED'), warning: count('WARNING') };
}

/**
 * PASSED, FAILED or SKIPPED. Optional checks may be skipped; a run the suite skipped as a whole (`SKIPPED:` line,
 * exit 0), or whose every check was skipped, tested nothing.
 */
export function verdictOf(code, text, counts) {
  if (code !== 0 || counts.failure > 0) return 'FAILED';
  if (/^SKIPPED:/m.test(text) || counts.success === 0) return 'SKIPPED';
  return 'PASSED';
}

/** Starts `server` on a free loopback port: its origin, and a close that also ends the connections it keeps. */
export async function listenOnLoopback(server) {
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    origin: `http://127.0.0.1:${server.address().port}`,
    close: () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
