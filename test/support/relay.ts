import { type AddressInfo, connect, createServer, type Socket } from 'node:net';
import { expect } from 'vitest';

/** A TCP relay in front of a store, cut and restored by a test: the store going away under a running server. */
export interface Relay {
  /** `target` with the relay's host and port in its place, credentials and path kept. */
  url: string;
  /** Drops every relayed connection and refuses new ones. */
  cut(): void;
  /** Refuses new connections, keeping the relayed ones (a server shutting down: its backends end themselves). */
  refuse(): void;
  /** Accepts connections again. */
  restore(): void;
  close(): void;
}

export async function startRelay(target: string, defaultPort: number): Promise<Relay> {
  const upstreamUrl = new URL(target);
  const sockets = new Set<Socket>();
  let open = true;
  const relay = createServer((client) => {
    if (!open) return client.destroy();
    const upstream = connect(Number(upstreamUrl.port || defaultPort), upstreamUrl.hostname);
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.on('error', () => {}).on('close', () => sockets.delete(socket));
    }
    client.pipe(upstream).pipe(client);
  });
  await new Promise<void>((resolve) => relay.listen(0, '127.0.0.1', resolve));
  const relayed = new URL(target);
  relayed.host = `127.0.0.1:${(relay.address() as AddressInfo).port}`;
  const dropAll = () => {
    for (const socket of sockets) socket.destroy();
  };
  return {
    url: relayed.toString(),
    cut: () => {
      open = false;
      dropAll();
    },
    refuse: () => {
      open = false;
    },
    restore: () => {
      open = true;
    },
    close: () => {
      open = true;
      dropAll();
      relay.close();
    },
  };
}

/**
 * The reference server's `/readyz` at `origin` through a cut of `relay`: 200, then 503 while the store cannot be
 * reached, then 200 again by itself once the relay is restored.
 */
export async function expectReadyzFollows(origin: string, relay: Relay): Promise<void> {
  const ready = () => fetch(`${origin}/readyz`).then(async (res) => ({ status: res.status, body: await res.json() }));
  expect(await ready()).toEqual({ status: 200, body: { status: 'ready' } });
  relay.cut();
  expect(await ready()).toEqual({ status: 503, body: { status: 'unavailable', reason: 'the store cannot be reached' } });
  relay.restore();
  await expect.poll(() => ready().then((answer) => answer.status), { timeout: 10_000, interval: 200 }).toBe(200);
}
