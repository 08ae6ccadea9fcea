/** Helpers of the stdio tests: real processes, observed through `ps` and `kill(pid, 0)`. */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, copyFileSync, cpSync, existsSync, mkdirSync, realpathSync, renameSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildSync } from 'esbuild';
import { accessIssue } from './access.js';
import type { StdioChannel } from './supervisor.js';

/** Someone with no rights of owner or group: what a stdio child's own uid sees of the repository. */
const OTHERS = { uid: 4_000_000_000, gid: 4_000_000_000, home: undefined, label: 'others', ownUid: true };

/** Where copies every stdio user can read are kept: a 0755 folder under the temporary folder. */
function readableRoot(): string {
  const root = join(tmpdir(), 'mcp-fleet-readable-fixtures');
  mkdirSync(root, { recursive: true, mode: 0o755 });
  chmodSync(root, 0o755);
  return root;
}

/**
 * The Node binary a stdio child of the tests runs: this process's own when every user can run it (`/usr/bin/node`),
 * else a copy in a 0755 folder. A Node from the `node` npm package (`npx -p node@24`, the CI's other legs) or from
 * nvm lives under root's 0700 home, where the fleet rightly refuses it for an account's uid.
 */
function readableNode(): string {
  if (accessIssue({ command: process.execPath }, OTHERS, '/usr/bin:/bin') === undefined) return process.execPath;
  const folder = join(readableRoot(), `node-${process.version}`);
  const out = join(folder, 'node');
  if (existsSync(out)) return out;
  const staging = `${folder}.${process.pid}`;
  mkdirSync(staging, { recursive: true, mode: 0o755 });
  copyFileSync(realpathSync(process.execPath), join(staging, 'node'));
  chmodSync(join(staging, 'node'), 0o755);
  try {
    renameSync(staging, folder);
  } catch {
    // Another test file made it first.
  }
  return out;
}

export const NODE = readableNode();

/**
 * A script a stdio child can run whatever user it runs as: the file itself when every user can read it, else (the
 * repository cloned in a 0700 folder, as root) a copy in a 0755 folder under the temporary folder, with what it
 * imports bundled in (esbuild), so that the child needs nothing of the repository. `assets` are folders beside the
 * entry that the script reads at run time (`<entry folder>/docs`), copied beside the bundle's folder, where the
 * bundled code looks for them (`<bundle folder>/../docs`).
 */
export function readableScript(path: string, options: { assets?: readonly string[] } = {}): string {
  if (accessIssue({ command: NODE, args: [path] }, OTHERS, '/usr/bin:/bin') === undefined) return path;
  const key = createHash('sha256').update(`${path}:${statSync(path).mtimeMs}`).digest('hex').slice(0, 16);
  const folder = join(readableRoot(), key);
  const out = join(folder, 'bin', basename(path).replace(/\.(c|m)?js$/, '.mjs'));
  if (existsSync(out)) return out;
  const staging = `${folder}.${process.pid}`;
  const staged = join(staging, 'bin', basename(out));
  mkdirSync(dirname(staged), { recursive: true, mode: 0o755 });
  buildSync({
    entryPoints: [path],
    bundle: true,
    platform: 'node',
    format: 'esm',
    outfile: staged,
    logLevel: 'silent',
    // CommonJS packages inside an ES module bundle still call require().
    banner: { js: "import { createRequire as __fixtureRequire } from 'node:module'; const require = __fixtureRequire(import.meta.url);" },
  });
  for (const asset of options.assets ?? []) cpSync(join(dirname(path), asset), join(staging, asset), { recursive: true });
  execFileSync('chmod', ['-R', 'a+rX', staging]);
  try {
    renameSync(staging, folder);
  } catch {
    // Another test file made it first.
  }
  return out;
}

export const fixture = (name: string) => readableScript(fileURLToPath(new URL(`./fixtures/${name}`, import.meta.url)));

/** `@modelcontextprotocol/server-everything`'s entry, readable by every stdio user (`readableScript`). */
export const EVERYTHING = readableScript(fileURLToPath(new URL('../../../../node_modules/@modelcontextprotocol/server-everything/dist/index.js', import.meta.url)), { assets: ['docs'] });

/** True while the pid names a process, zombies included (a zombie still answers signal 0). */
export function exists(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ESRCH') return false;
    throw error;
  }
}

/** `ps` state letters of a process (`S`, `Z`, ...), or undefined when there is none. */
export function processState(pid: number): string | undefined {
  try {
    return execFileSync('ps', ['-o', 'stat=', '-p', String(pid)], { encoding: 'utf8' }).trim() || undefined;
  } catch {
    return undefined; // ps exits 1 when the pid is unknown
  }
}

/** Pids of the direct children of `parent`, except the `ps` that lists them. */
export function childPids(parent: number): number[] {
  let out = '';
  try {
    out = execFileSync('ps', ['-o', 'pid=,comm=', '--ppid', String(parent)], { encoding: 'utf8' });
  } catch {
    return []; // none
  }
  return out
    .split('\n')
    .map((line) => line.trim().split(/\s+/))
    .filter(([pid, comm]) => pid !== undefined && pid !== '' && comm !== 'ps')
    .map(([pid]) => Number(pid));
}

/** The next complete stdout line of a channel. */
export function nextLine(channel: StdioChannel, timeoutMs = 5000): Promise<string> {
  return new Promise((resolve, reject) => {
    let text = '';
    const timer = setTimeout(() => {
      off();
      reject(new Error(`no line on stdout within ${timeoutMs} ms`));
    }, timeoutMs);
    const off = channel.onData((chunk) => {
      text += chunk.toString('utf8');
      const newline = text.indexOf('\n');
      if (newline === -1) return;
      clearTimeout(timer);
      off();
      resolve(text.slice(0, newline));
    });
  });
}

/** Waits until `check` holds, polling; fails the test after `timeoutMs`. */
export async function eventually(check: () => boolean, timeoutMs = 5000, what = 'condition'): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`${what} did not hold within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
