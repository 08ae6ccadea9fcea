import type { LookupAddress, LookupOptions } from 'node:dns';
import { lookup as dnsLookup } from 'node:dns/promises';
import { isIP, type LookupFunction } from 'node:net';
import { Agent, buildConnector } from 'undici';
import { createAddressPolicy, type AddressPolicy, type AddressPolicyOptions } from './address-policy.js';
import { FleetError } from '../errors/fleet-error.js';
import { destinationNotAllowed } from './upstream-error.js';
import { checkOption, positiveNumber } from '../util/options.js';

/** Every address of a hostname, in the resolver's order. */
export type HostnameResolver = (hostname: string) => Promise<readonly LookupAddress[]>;

export interface GuardedAgentOptions extends AddressPolicyOptions {
  /**
   * Resolves a hostname to all of its addresses. Replace it to use another resolver, or in tests.
   * @default `dns.lookup(hostname, { all: true, order: 'verbatim' })` (the system resolver, as Node itself uses)
   */
  lookup?: HostnameResolver;
  /**
   * Milliseconds one connection may take, from the start of the DNS lookup through the TCP (and TLS) handshake.
   * @default 10_000
   */
  connectTimeout?: number;
  /** Milliseconds to wait for the response headers once the request is sent; 0 disables. @default 300_000 */
  headersTimeout?: number;
  /** Milliseconds allowed between two chunks of a response body; 0 disables (long-lived event streams). @default 300_000 */
  bodyTimeout?: number;
}

export const DEFAULT_CONNECT_TIMEOUT_MS = 10_000;

const defaultResolver: HostnameResolver = (hostname) => dnsLookup(hostname, { all: true, order: 'verbatim' });

/** Agents made here, each with its own judgement of a host, so that a fetch can refuse a dispatcher that would bypass the guard. */
const guardedAgents = new WeakMap<Agent, (hostname: string) => Promise<void>>();

/** Whether `dispatcher` is an agent made by {@link createGuardedAgent}. */
export function isGuardedAgent(dispatcher: unknown): dispatcher is Agent {
  return typeof dispatcher === 'object' && dispatcher !== null && guardedAgents.has(dispatcher as Agent);
}

/**
 * Judges a URL hostname as `agent`'s connector would (a literal as it is, a name by resolving it), for requests
 * that never reach the connector: fetch refuses a "bad port" before dispatching, and the guard's answer is the one
 * that tells the user what to change. Rejects with the guard's `DESTINATION_NOT_ALLOWED`.
 */
export function checkDestination(agent: Agent, hostname: string): Promise<void> {
  const check = guardedAgents.get(agent);
  if (check === undefined) throw new TypeError('checkDestination: agent must come from createGuardedAgent.');
  return check(hostname);
}

function unbracketed(hostname: string): string {
  return hostname.startsWith('[') && hostname.endsWith(']') ? hostname.slice(1, -1) : hostname;
}

function wantedFamily(options: LookupOptions): 4 | 6 | undefined {
  const { family } = options;
  if (family === 4 || family === 'IPv4') return 4;
  if (family === 6 || family === 'IPv6') return 6;
  return undefined;
}

/**
 * Resolves `hostname` once and judges every answer. The answers are returned to the socket that asked, so the
 * addresses checked are the addresses connected to: a second, different DNS answer (rebinding) is never consulted.
 * One blocked answer refuses the whole name, so a record set that mixes a public and a private address cannot
 * slip through on a connection attempt that happens to pick the private one.
 */
async function resolveChecked(hostname: string, resolve: HostnameResolver, policy: AddressPolicy): Promise<LookupAddress[]> {
  const answers = await resolve(hostname);
  const addresses: LookupAddress[] = [];
  for (const { address } of answers) {
    const family = isIP(address);
    if (family === 0 || !policy.isAllowedAddress(address, hostname)) throw destinationNotAllowed();
    addresses.push({ address, family });
  }
  if (addresses.length === 0) {
    throw new FleetError('UPSTREAM_UNREACHABLE', { message: 'The upstream hostname did not resolve to any address.' });
  }
  return addresses;
}

/**
 * An undici `Agent` that refuses to connect to loopback, private, link-local, unique-local, CGNAT and other
 * special-purpose addresses (see `classifyAddress`) unless `allowPrivateNetworks` says otherwise.
 *
 * The check sits in the agent's connector, at connect time, on the address the socket will use:
 * - an IP literal host (`http://127.1`, `http://[::ffff:7f00:1]`, already normalised by URL parsing) is judged
 *   as it is, without DNS;
 * - a hostname is resolved by the guard itself, through the socket's `lookup` hook: Node hands those exact answers
 *   to the TCP connect (with its usual happy-eyeballs between them), never asking DNS a second time. The host name
 *   stays the socket's host, so TLS SNI, certificate checks and the `Host` header are those of the URL.
 *
 * The refusal is an `FleetError` with code `DESTINATION_NOT_ALLOWED`; undici's `fetch` wraps it as the
 * `cause` of its `TypeError('fetch failed')` (see `classifyUndiciError`). An agent follows no redirect.
 * Hand it to undici's `fetch` (or use `createGuardedFetch`) and to undici's `WebSocket` as `{ dispatcher }`.
 */
export function createGuardedAgent(options: GuardedAgentOptions = {}): Agent {
  const policy = createAddressPolicy(options);
  const resolve = options.lookup ?? defaultResolver;
  const connectTimeout = checkOption('connectTimeout', options.connectTimeout ?? DEFAULT_CONNECT_TIMEOUT_MS, positiveNumber, 'createGuardedAgent');

  const guardedLookup: LookupFunction = (hostname, lookupOptions, callback) => {
    resolveChecked(hostname, resolve, policy).then(
      (addresses) => {
        const family = wantedFamily(lookupOptions);
        const usable = family === undefined ? addresses : addresses.filter((address) => address.family === family);
        const [first] = usable;
        if (first === undefined) {
          callback(new FleetError('UPSTREAM_UNREACHABLE', { message: 'The upstream hostname has no address of the family asked for.' }), '');
        } else if (lookupOptions.all === true) {
          callback(null, usable);
        } else {
          callback(null, first.address, first.family);
        }
      },
      (error: unknown) => callback(error as NodeJS.ErrnoException, ''),
    );
  };

  // The connect timeout of undici's connector starts when the socket is created, before the lookup hook runs, so
  // one deadline covers DNS, TCP and TLS.
  const connectSocket = buildConnector({ timeout: connectTimeout, lookup: guardedLookup });

  const connect: buildConnector.connector = (connectOptions, callback) => {
    const literal = unbracketed(connectOptions.hostname);
    // Node skips the lookup hook for an IP literal, so a literal is judged here.
    if (isIP(literal) !== 0 && !policy.isAllowedAddress(literal)) {
      // Asynchronously, as a socket error would arrive: undici's client is not written for a callback from inside
      // its own connect call.
      queueMicrotask(() => callback(destinationNotAllowed(), null));
      return;
    }
    connectSocket(connectOptions, callback);
  };

  const agent = new Agent({
    connect,
    ...(options.headersTimeout === undefined ? {} : { headersTimeout: options.headersTimeout }),
    ...(options.bodyTimeout === undefined ? {} : { bodyTimeout: options.bodyTimeout }),
  });
  guardedAgents.set(agent, async (hostname) => {
    const host = unbracketed(hostname);
    if (isIP(host) !== 0) {
      if (!policy.isAllowedAddress(host)) throw destinationNotAllowed();
    } else if (!policy.isAllowedHost(host)) {
      await resolveChecked(host, resolve, policy);
    }
  });
  return agent;
}
