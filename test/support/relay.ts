import { type AddressInfo, connect, createServer, type Socket } from 'node:net';

/** A TCP relay in front of a store, cut and restored by a test: the store going away under a running server. */
export interface Relay {
  /** `target` with the relay's host and port in its place, credentials and path kept. */
  url: string;
  /** Drops every relayed connection and refuses new ones. */
  cut(): void;
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
