/** A bench helper process over IPC: messages are `{ type, ... }`; `next(type)` waits for one, `ask` sends and waits. */
import { execFileSync, fork } from 'node:child_process';
import { availableParallelism } from 'node:os';
import { fileURLToPath } from 'node:url';

/**
 * Pinning (`taskset`) with `BENCH_PIN=1`, when the machine has it and at least 2 CPUs: section 2 then pins the load
 * generator to CPU 0 and every server under test to CPU 1, so that the two never take each other's core. Off by
 * default: on a machine where other work runs, a pinned server cannot move to the core that is free, and measured
 * that way it got about half the CPU time and the spread did not narrow (bench/README.md).
 */
const PIN = (() => {
  if (process.env.BENCH_PIN !== '1' || availableParallelism() < 2) return false;
  try {
    execFileSync('taskset', ['-p', String(process.pid)], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
})();

export const pinning = PIN;

export function cpuFor(role) {
  if (!PIN) return undefined;
  return role === 'load' ? 0 : 1;
}

/** Pins every thread of `pid` to `cpu` (no-op when `cpu` is undefined). */
export function pin(pid, cpu) {
  if (cpu === undefined) return;
  execFileSync('taskset', ['-a', '-p', '-c', String(cpu), String(pid)], { stdio: 'ignore' });
}

export function forkChild(file, args = [], { execArgv = [], cpu } = {}) {
  const proc = fork(fileURLToPath(new URL(file, import.meta.url)), args, { execArgv, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  pin(proc.pid, cpu);
  const waiting = [];
  proc.on('message', (message) => {
    const i = waiting.findIndex((w) => w.type === message.type);
    if (i >= 0) waiting.splice(i, 1)[0].resolve(message);
  });
  const exited = new Promise((resolve) => proc.once('exit', resolve));
  proc.once('exit', (code) => {
    for (const w of waiting.splice(0)) w.reject(new Error(`${file} exited (${code}) while we waited for "${w.type}"`));
  });
  const next = (type) => new Promise((resolve, reject) => waiting.push({ type, resolve, reject }));
  return {
    pid: proc.pid,
    next,
    ask: (message, answer) => {
      const answered = next(answer);
      proc.send(message);
      return answered;
    },
    exit: () => {
      proc.send({ type: 'exit' });
      return exited;
    },
  };
}
