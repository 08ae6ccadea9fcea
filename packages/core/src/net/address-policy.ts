import { BlockList, isIP, isIPv4 } from 'node:net';

/** Why an address is not a public destination. `public` and `invalid` complete {@link AddressClass}. */
export type BlockedRange =
  | 'unspecified'
  | 'loopback'
  | 'private'
  | 'shared'
  | 'link-local'
  | 'unique-local'
  | 'multicast'
  | 'documentation'
  | 'benchmarking'
  | 'reserved';

export type AddressClass = BlockedRange | 'public' | 'invalid';

type Family = 'ipv4' | 'ipv6';

/**
 * The special-purpose ranges refused by default (IANA special-purpose registries, RFC 6890 and successors).
 * Four IPv6 forms are absent on purpose because they carry an IPv4 address that is judged instead (see
 * {@link embeddedIPv4}): `::ffff:0:0/96` (mapped), `::ffff:0:0:0/96` (translated), `64:ff9b::/96` (NAT64) and
 * `2002::/16` (6to4). Every other IPv6 address outside `2000::/3`, the only block IANA hands out for unicast, is
 * `reserved`.
 */
const BLOCKED: readonly (readonly [BlockedRange, string, number, Family])[] = [
  // "This network"; Linux connects 0.0.0.0 to the local host.
  ['unspecified', '0.0.0.0', 8, 'ipv4'],
  ['private', '10.0.0.0', 8, 'ipv4'],
  // Carrier-grade NAT (RFC 6598): provider-internal, and some clouds put services there.
  ['shared', '100.64.0.0', 10, 'ipv4'],
  ['loopback', '127.0.0.0', 8, 'ipv4'],
  // Includes the cloud metadata service 169.254.169.254.
  ['link-local', '169.254.0.0', 16, 'ipv4'],
  ['private', '172.16.0.0', 12, 'ipv4'],
  ['reserved', '192.0.0.0', 24, 'ipv4'],
  ['documentation', '192.0.2.0', 24, 'ipv4'],
  ['reserved', '192.88.99.0', 24, 'ipv4'],
  ['private', '192.168.0.0', 16, 'ipv4'],
  ['benchmarking', '198.18.0.0', 15, 'ipv4'],
  ['documentation', '198.51.100.0', 24, 'ipv4'],
  ['documentation', '203.0.113.0', 24, 'ipv4'],
  ['multicast', '224.0.0.0', 4, 'ipv4'],
  // Class E, and with it the broadcast address 255.255.255.255.
  ['reserved', '240.0.0.0', 4, 'ipv4'],

  ['unspecified', '::', 128, 'ipv6'],
  ['loopback', '::1', 128, 'ipv6'],
  // IPv4-compatible addresses (deprecated by RFC 4291); `::`, `::1` above take their own names first.
  ['reserved', '::', 96, 'ipv6'],
  // Local-use NAT64 (RFC 8215): translates into the operator's own network.
  ['reserved', '64:ff9b:1::', 48, 'ipv6'],
  ['reserved', '100::', 64, 'ipv6'],
  // Teredo: the client address inside is obfuscated and may be anything behind a NAT.
  ['reserved', '2001::', 32, 'ipv6'],
  ['documentation', '2001:db8::', 32, 'ipv6'],
  ['documentation', '3fff::', 20, 'ipv6'],
  ['unique-local', 'fc00::', 7, 'ipv6'],
  ['link-local', 'fe80::', 10, 'ipv6'],
  // Site-local (deprecated by RFC 3879) is still routed internally by some networks.
  ['reserved', 'fec0::', 10, 'ipv6'],
  ['multicast', 'ff00::', 8, 'ipv6'],
];

const BLOCKED_LISTS: readonly (readonly [BlockedRange, BlockList])[] = BLOCKED.map(([range, network, prefix, family]) => {
  const list = new BlockList();
  list.addSubnet(network, prefix, family);
  return [range, list] as const;
});

const GLOBAL_UNICAST_V6 = new BlockList();
GLOBAL_UNICAST_V6.addSubnet('2000::', 3, 'ipv6');

/** `[::1]` → `::1`, `fe80::1%eth0` → `fe80::1`: the forms a URL or a resolver may hand over. */
function bare(ip: string): string {
  const unbracketed = ip.startsWith('[') && ip.endsWith(']') ? ip.slice(1, -1) : ip;
  const zone = unbracketed.indexOf('%');
  return zone === -1 ? unbracketed : unbracketed.slice(0, zone);
}

/** The eight 16-bit groups of a valid IPv6 address (validate with `isIP` first). */
function hextets(ip: string): number[] {
  let text = ip.toLowerCase();
  const tail: number[] = [];
  const lastColon = text.lastIndexOf(':');
  const last = text.slice(lastColon + 1);
  if (isIPv4(last)) {
    const [a = 0, b = 0, c = 0, d = 0] = last.split('.').map(Number);
    tail.push((a << 8) | b, (c << 8) | d);
    // Two placeholder groups where the dotted quad stood, replaced by its value once the groups are laid out.
    text = `${text.slice(0, lastColon + 1)}0:0`;
  }
  const [head = '', rest] = text.split('::');
  const parse = (part: string) => (part === '' ? [] : part.split(':').map((group) => Number.parseInt(group, 16)));
  const left = parse(head);
  const right = rest === undefined ? [] : parse(rest);
  const groups =
    rest === undefined ? left : [...left, ...new Array<number>(8 - left.length - right.length).fill(0), ...right];
  if (tail.length > 0) groups.splice(6, 2, ...tail);
  return groups;
}

function ipv4FromHextets(high: number, low: number): string {
  return `${high >> 8}.${high & 0xff}.${low >> 8}.${low & 0xff}`;
}

/** `::ffff:a.b.c.d` is an IPv4 address in IPv6 clothing: the socket goes to a.b.c.d. */
function unmapped(ip: string): { address: string; family: Family } {
  if (isIPv4(ip)) return { address: ip, family: 'ipv4' };
  const groups = hextets(ip);
  const mapped = groups.slice(0, 5).every((group) => group === 0) && groups[5] === 0xffff;
  return mapped ? { address: ipv4FromHextets(groups[6] ?? 0, groups[7] ?? 0), family: 'ipv4' } : { address: ip, family: 'ipv6' };
}

/** The IPv4 address an IPv6 transition form delivers to: translated (SIIT), NAT64 well-known prefix, 6to4. */
function embeddedIPv4(ipv6: string): string | undefined {
  const [g0 = 0, g1 = 0, g2 = 0, g3 = 0, g4 = 0, g5 = 0, g6 = 0, g7 = 0] = hextets(ipv6);
  if (g0 === 0 && g1 === 0 && g2 === 0 && g3 === 0 && g4 === 0xffff && g5 === 0) return ipv4FromHextets(g6, g7);
  if (g0 === 0x64 && g1 === 0xff9b && g2 === 0 && g3 === 0 && g4 === 0 && g5 === 0) return ipv4FromHextets(g6, g7);
  if (g0 === 0x2002) return ipv4FromHextets(g1, g2);
  return undefined;
}

function blockedRangeOf(address: string, family: Family): BlockedRange | undefined {
  for (const [range, list] of BLOCKED_LISTS) if (list.check(address, family)) return range;
  return undefined;
}

/**
 * What kind of destination `ip` is, ignoring any allow option: `public`, the name of the special-purpose range it
 * falls in (following an IPv4 address embedded in an IPv6 one), or `invalid` when it is not an IP address at all.
 * Accepts `[v6]` and zone ids. Does no DNS.
 */
export function classifyAddress(ip: string): AddressClass {
  const text = bare(ip);
  if (isIP(text) === 0) return 'invalid';
  const { address, family } = unmapped(text);
  const range = blockedRangeOf(address, family);
  if (range !== undefined) return range;
  if (family === 'ipv4') return 'public';
  const embedded = embeddedIPv4(address);
  if (embedded !== undefined) return classifyAddress(embedded);
  return GLOBAL_UNICAST_V6.check(address, 'ipv6') ? 'public' : 'reserved';
}

export interface AddressPolicyOptions {
  /**
   * Destinations to allow despite the default refusal. `true` allows every address (for a deployment whose MCP
   * servers all live on its own network; the guard then refuses nothing). A list allows exactly its entries, each
   * either a CIDR (`10.1.0.0/16`, `fd00::/8`), a single IP (`127.0.0.1`), or an exact hostname (`mcp.internal`),
   * which allows that name whatever it resolves to. Hostnames are compared case-insensitively, without a trailing
   * dot; there are no wildcards.
   * @default false
   */
  allowPrivateNetworks?: boolean | readonly string[];
}

export interface AddressPolicy {
  /** May a connection go to `ip`, reached through the URL hostname `hostname` (when it was a name)? */
  isAllowedAddress(ip: string, hostname?: string): boolean;
  /** Is `hostname` itself on the allow list, so that its resolved addresses need no check? */
  isAllowedHost(hostname: string): boolean;
  /** Whether the policy allows every destination (`allowPrivateNetworks: true`). */
  readonly allowsAll: boolean;
}

function normalizeHostname(hostname: string): string {
  const lower = bare(hostname).toLowerCase();
  return lower.endsWith('.') ? lower.slice(0, -1) : lower;
}

const HOSTNAME = /^(?=.{1,253}$)[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?(?:\.[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?)*$/;

function addAllowEntry(entry: string, networks: BlockList, hosts: Set<string>): void {
  const text = entry.trim();
  const slash = text.indexOf('/');
  if (slash !== -1) {
    const network = bare(text.slice(0, slash));
    const prefixText = text.slice(slash + 1);
    const version = isIP(network);
    const prefix = /^\d{1,3}$/.test(prefixText) ? Number(prefixText) : Number.NaN;
    if (version === 0 || !(prefix >= 0 && prefix <= (version === 4 ? 32 : 128))) {
      throw new TypeError(`allowPrivateNetworks: "${entry}" is not a valid CIDR (e.g. "10.0.0.0/8", "fd00::/8").`);
    }
    const { address, family } = unmapped(network);
    // A mapped network (::ffff:10.0.0.0/104) means the IPv4 network it maps.
    const mappedPrefix = family === 'ipv4' && version === 6 ? prefix - 96 : prefix;
    if (mappedPrefix < 0) throw new TypeError(`allowPrivateNetworks: "${entry}" is wider than the IPv4-mapped range.`);
    networks.addSubnet(address, mappedPrefix, family);
    return;
  }
  if (isIP(bare(text)) !== 0) {
    const { address, family } = unmapped(bare(text));
    networks.addAddress(address, family);
    return;
  }
  const hostname = normalizeHostname(text);
  if (!HOSTNAME.test(hostname)) {
    throw new TypeError(`allowPrivateNetworks: "${entry}" is neither a CIDR, an IP address nor a hostname.`);
  }
  hosts.add(hostname);
}

/**
 * The guard's decision table. An address is refused when it falls in a special-purpose range (see
 * {@link classifyAddress}) that no allow entry covers; for an IPv6 form that carries an IPv4 address, the carried
 * address is judged. Throws a `TypeError` for an allow entry it cannot read, at construction, never later.
 */
export function createAddressPolicy(options: AddressPolicyOptions = {}): AddressPolicy {
  const allow = options.allowPrivateNetworks ?? false;
  const allowsAll = allow === true;
  const networks = new BlockList();
  const hosts = new Set<string>();
  if (Array.isArray(allow)) for (const entry of allow as readonly string[]) addAllowEntry(entry, networks, hosts);

  const isAllowedHost = (hostname: string): boolean => allowsAll || hosts.has(normalizeHostname(hostname));

  const addressAllowed = (ip: string): boolean => {
    const text = bare(ip);
    if (isIP(text) === 0) return false;
    if (allowsAll) return true;
    const { address, family } = unmapped(text);
    if (networks.check(address, family)) return true;
    if (blockedRangeOf(address, family) !== undefined) return false;
    if (family === 'ipv4') return true;
    const embedded = embeddedIPv4(address);
    if (embedded !== undefined) return addressAllowed(embedded);
    return GLOBAL_UNICAST_V6.check(address, 'ipv6');
  };

  return {
    allowsAll,
    isAllowedHost,
    isAllowedAddress: (ip, hostname) => (isIP(bare(ip)) !== 0 && hostname !== undefined && isAllowedHost(hostname)) || addressAllowed(ip),
  };
}
