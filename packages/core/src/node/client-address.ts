import { isIP } from 'node:net';

/**
 * The client's address behind `hops` reverse proxies you trust, for the limit on unauthenticated requests: the
 * socket's peer is the nearest proxy, and each proxy appends the address it heard from to `X-Forwarded-For`. With
 * `hops` 0 the socket's address (the header is anyone's to write); with n, the address n places left of the socket in
 * `[...X-Forwarded-For, socket]`. Entries a client wrote further left are never read, so it cannot pick its own address;
 * a header too short, or an entry that is not an IP address, gives the leftmost one a trusted proxy wrote.
 */
export function clientAddressBehindProxies(hops: number, socketAddress: string | undefined, forwardedFor: string | null | undefined): string | undefined {
  if (hops <= 0 || forwardedFor === null || forwardedFor === undefined) return socketAddress;
  const chain = [
    ...forwardedFor
      .split(',')
      .map((entry) => entry.trim())
      .filter((entry) => entry !== ''),
    socketAddress ?? '',
  ];
  let address = socketAddress;
  // Walk left from the socket, one trusted hop at a time, as far as the chain holds real addresses.
  for (let i = chain.length - 2, step = 0; i >= 0 && step < hops; i -= 1, step += 1) {
    const entry = chain[i] as string;
    if (isIP(entry) === 0) break;
    address = entry;
  }
  return address;
}
