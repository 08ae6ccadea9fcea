/** Helpers of the stdio tests: real processes, observed through `ps` and `kill(pid, 0)`. */
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { StdioChannel } from './supervisor.js';

export const NODE = process.execPath;

export const fixture = (name: string) => fileURLToPath(new URL(`./fixtures/${name}`, import.meta.url));

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
