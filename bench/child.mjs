/** A bench helper process over IPC: messages are `{ type, ... }`; `next(type)` waits for one, `ask` sends and waits. */
import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';

export function forkChild(file, args = []) {
  const proc = fork(fileURLToPath(new URL(file, import.meta.url)), args, { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
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
