import { type ChildProcess, spawn } from 'node:child_process';
import { createHmac } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { startReceiver } from '../packages/core/src/webhooks/fixtures/receiver.js';
import { deleteKeys, REDIS_URL, uniquePrefix, withoutRedis } from './support/redis.js';

const CHILD = fileURLToPath(new URL('./support/webhook-child.mjs', import.meta.url));
const children = new Set<ChildProcess>();

/** Starts the child and resolves with the JSON line it prints first. */
function child(env: Record<string, string>): Promise<{ process: ChildProcess; line: Record<string, unknown> }> {
  const proc = spawn(process.execPath, [CHILD], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  children.add(proc);
  let stderr = '';
  proc.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  return new Promise((resolve, reject) => {
    let out = '';
    proc.stdout?.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const nl = out.indexOf('\n');
      if (nl !== -1) resolve({ process: proc, line: JSON.parse(out.slice(0, nl)) });
    });
    proc.once('exit', (code) => reject(new Error(`child exited with ${code}: ${stderr}`)));
  });
}

function kill(proc: ChildProcess, signal: NodeJS.Signals): Promise<void> {
  if (proc.exitCode !== null || proc.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    proc.once('exit', () => resolve());
    proc.kill(signal);
  });
}

afterEach(async () => {
  await Promise.all([...children].map((c) => kill(c, 'SIGKILL')));
  children.clear();
});

const stores: { name: string; skip: boolean; store: () => Promise<{ url: string; prefix: string; cleanup: () => Promise<void> }> }[] = [
  {
    name: 'SQLite (the embedded store)',
    skip: false,
    store: async () => {
      const dir = await mkdtemp(join(tmpdir(), 'mcp-fleet-wh-'));
      return { url: `sqlite://${join(dir, 'fleet.sqlite')}`, prefix: 'mcp-fleet:', cleanup: () => rm(dir, { recursive: true, force: true }) };
    },
  },
  {
    name: 'Redis',
    skip: withoutRedis('webhook crash test on Redis'),
    store: async () => {
      const prefix = uniquePrefix('webhooks-crash');
      return { url: REDIS_URL as string, prefix, cleanup: () => deleteKeys(prefix) };
    },
  },
];

describe.each(stores)('a delivery survives SIGKILL ($name)', ({ skip, store }) => {
  it.skipIf(skip)('a new process on the same storage delivers what the killed one staged', async () => {
    const receiver = await startReceiver();
    const { url, prefix, cleanup } = await store();
    try {
      const staged = await child({ MODE: 'stage', STORE: url, PREFIX: prefix, RECEIVER: receiver.url });
      // Killed hard right after the server was created: its worker never ran, nothing was sent.
      await kill(staged.process, 'SIGKILL');
      expect(receiver.received).toHaveLength(0);
      await child({ MODE: 'work', STORE: url, PREFIX: prefix });
      const [request] = await receiver.waitFor(1);
      expect(request!.headers['x-service-event']).toBe('server.created');
      const payload = JSON.parse(request!.body.toString('utf8'));
      expect(payload.data.server.id).toBe((staged.line.servers as string[])[0]);
      const secret = staged.line.secret as string;
      expect(request!.headers['x-service-signature']).toBe(`sha256=${createHmac('sha256', secret).update(request!.body).digest('hex')}`);
    } finally {
      await receiver.close();
      await cleanup();
    }
  });
});

describe.skipIf(withoutRedis('two webhook workers on one Redis'))('two processes on one Redis', () => {
  const prefix = uniquePrefix('webhooks-two');
  afterAll(() => deleteKeys(prefix));

  it('deliver each delivery exactly once', async () => {
    const receiver = await startReceiver();
    try {
      const count = 30;
      const staged = await child({ MODE: 'stage', STORE: REDIS_URL as string, PREFIX: prefix, RECEIVER: receiver.url, COUNT: String(count) });
      await kill(staged.process, 'SIGKILL');
      const workers = await Promise.all([
        child({ MODE: 'work', STORE: REDIS_URL as string, PREFIX: prefix }),
        child({ MODE: 'work', STORE: REDIS_URL as string, PREFIX: prefix }),
      ]);
      await receiver.waitFor(count);
      // Time for a duplicate to arrive, if the leases let one through.
      await new Promise((r) => setTimeout(r, 1000));
      const ids = receiver.received.map((r) => r.headers['x-service-delivery']);
      expect(ids).toHaveLength(count);
      expect(new Set(ids).size).toBe(count);
      const servers = receiver.received.map((r) => JSON.parse(r.body.toString('utf8')).data.server.id).sort();
      expect(servers).toEqual([...(staged.line.servers as string[])].sort());
      await Promise.all(workers.map((w) => kill(w.process, 'SIGTERM')));
    } finally {
      await receiver.close();
    }
  });
});
