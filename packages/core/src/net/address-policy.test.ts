import { describe, expect, it } from 'vitest';
import { classifyAddress, createAddressPolicy, type AddressClass } from './address-policy.js';

/** Each range with the addresses just outside and at both of its ends. */
const IPV4: [string, AddressClass][] = [
  ['0.0.0.0', 'unspecified'],
  ['0.255.255.255', 'unspecified'],
  ['1.0.0.0', 'public'],
  ['9.255.255.255', 'public'],
  ['10.0.0.0', 'private'],
  ['10.255.255.255', 'private'],
  ['11.0.0.0', 'public'],
  ['100.63.255.255', 'public'],
  ['100.64.0.0', 'shared'],
  ['100.127.255.255', 'shared'],
  ['100.128.0.0', 'public'],
  ['126.255.255.255', 'public'],
  ['127.0.0.0', 'loopback'],
  ['127.0.0.1', 'loopback'],
  ['127.255.255.255', 'loopback'],
  ['128.0.0.0', 'public'],
  ['169.253.255.255', 'public'],
  ['169.254.0.0', 'link-local'],
  ['169.254.169.254', 'link-local'],
  ['169.254.255.255', 'link-local'],
  ['169.255.0.0', 'public'],
  ['172.15.255.255', 'public'],
  ['172.16.0.0', 'private'],
  ['172.31.255.255', 'private'],
  ['172.32.0.0', 'public'],
  ['191.255.255.255', 'public'],
  ['192.0.0.0', 'reserved'],
  ['192.0.0.255', 'reserved'],
  ['192.0.1.0', 'public'],
  ['192.0.2.1', 'documentation'],
  ['192.88.99.1', 'reserved'],
  ['192.167.255.255', 'public'],
  ['192.168.0.0', 'private'],
  ['192.168.255.255', 'private'],
  ['192.169.0.0', 'public'],
  ['198.17.255.255', 'public'],
  ['198.18.0.0', 'benchmarking'],
  ['198.19.255.255', 'benchmarking'],
  ['198.20.0.0', 'public'],
  ['198.51.100.7', 'documentation'],
  ['203.0.113.7', 'documentation'],
  ['223.255.255.255', 'public'],
  ['224.0.0.0', 'multicast'],
  ['239.255.255.255', 'multicast'],
  ['240.0.0.0', 'reserved'],
  ['255.255.255.255', 'reserved'],
  ['8.8.8.8', 'public'],
  ['1.1.1.1', 'public'],
];

const IPV6: [string, AddressClass][] = [
  ['::', 'unspecified'],
  ['::1', 'loopback'],
  ['[::1]', 'loopback'],
  ['0:0:0:0:0:0:0:1', 'loopback'],
  ['::2', 'reserved'],
  // IPv4-mapped: judged as the IPv4 address the socket really reaches.
  ['::ffff:7f00:1', 'loopback'],
  ['::ffff:127.0.0.1', 'loopback'],
  ['0:0:0:0:0:ffff:7f00:1', 'loopback'],
  ['::ffff:10.0.0.1', 'private'],
  ['::ffff:169.254.169.254', 'link-local'],
  ['::ffff:0.0.0.0', 'unspecified'],
  ['::ffff:8.8.8.8', 'public'],
  ['::ffff:808:808', 'public'],
  // IPv4-translated (SIIT).
  ['::ffff:0:7f00:1', 'loopback'],
  ['::ffff:0:808:808', 'public'],
  // NAT64 well-known prefix, and the local-use one.
  ['64:ff9b::7f00:1', 'loopback'],
  ['64:ff9b::10.0.0.1', 'private'],
  ['64:ff9b::8.8.8.8', 'public'],
  ['64:ff9b:1::8.8.8.8', 'reserved'],
  // 6to4.
  ['2002:7f00:1::', 'loopback'],
  ['2002:a9fe:a9fe::1', 'link-local'],
  ['2002:808:808::1', 'public'],
  ['100::1', 'reserved'],
  ['1fff:ffff:ffff:ffff:ffff:ffff:ffff:ffff', 'reserved'],
  ['2000::', 'public'],
  ['2001::1', 'reserved'],
  ['2001:db8::1', 'documentation'],
  ['2001:4860:4860::8888', 'public'],
  ['2606:4700:4700::1111', 'public'],
  ['3fff::1', 'documentation'],
  ['3fff:1000::', 'public'],
  ['4000::', 'reserved'],
  ['fbff:ffff:ffff:ffff:ffff:ffff:ffff:ffff', 'reserved'],
  ['fc00::', 'unique-local'],
  ['fd00::1', 'unique-local'],
  ['fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff', 'unique-local'],
  ['fe00::', 'reserved'],
  ['fe7f:ffff:ffff:ffff:ffff:ffff:ffff:ffff', 'reserved'],
  ['fe80::', 'link-local'],
  ['fe80::1', 'link-local'],
  ['fe80::1%eth0', 'link-local'],
  ['febf:ffff:ffff:ffff:ffff:ffff:ffff:ffff', 'link-local'],
  ['fec0::1', 'reserved'],
  ['ff00::', 'multicast'],
  ['ff02::1', 'multicast'],
];

describe('classifyAddress', () => {
  it.each(IPV4)('%s is %s', (ip, expected) => {
    expect(classifyAddress(ip)).toBe(expected);
  });

  it.each(IPV6)('%s is %s', (ip, expected) => {
    expect(classifyAddress(ip)).toBe(expected);
  });

  it('calls anything that is not an IP address invalid, including the shorthand forms only URL parsing expands', () => {
    for (const text of ['', 'localhost', 'example.com', '127.1', '0x7f000001', '2130706433', '1.2.3.4.5', '::g', '[::1']) {
      expect(classifyAddress(text)).toBe('invalid');
    }
  });
});

describe('createAddressPolicy', () => {
  it('by default refuses every special-purpose address and allows the public ones', () => {
    const policy = createAddressPolicy();
    for (const [ip, range] of [...IPV4, ...IPV6]) expect(policy.isAllowedAddress(ip), ip).toBe(range === 'public');
    expect(policy.allowsAll).toBe(false);
  });

  it('refuses what is not an IP address, whatever the allow option', () => {
    for (const allowPrivateNetworks of [false, true, ['0.0.0.0/0', '::/0']]) {
      const policy = createAddressPolicy({ allowPrivateNetworks });
      expect(policy.isAllowedAddress('localhost')).toBe(false);
      expect(policy.isAllowedAddress('127.1')).toBe(false);
    }
  });

  it('true allows every address, loopback and metadata included', () => {
    const policy = createAddressPolicy({ allowPrivateNetworks: true });
    for (const ip of ['127.0.0.1', '::1', '169.254.169.254', '10.0.0.1', 'fd00::1', '8.8.8.8']) {
      expect(policy.isAllowedAddress(ip), ip).toBe(true);
    }
    expect(policy.allowsAll).toBe(true);
  });

  it('false is the default', () => {
    expect(createAddressPolicy({ allowPrivateNetworks: false }).isAllowedAddress('127.0.0.1')).toBe(false);
  });

  it('an IPv4 CIDR allows exactly that network, also when mapped or carried in IPv6', () => {
    const policy = createAddressPolicy({ allowPrivateNetworks: ['10.1.0.0/16'] });
    expect(policy.isAllowedAddress('10.1.0.0')).toBe(true);
    expect(policy.isAllowedAddress('10.1.255.255')).toBe(true);
    expect(policy.isAllowedAddress('10.0.255.255')).toBe(false);
    expect(policy.isAllowedAddress('10.2.0.0')).toBe(false);
    expect(policy.isAllowedAddress('127.0.0.1')).toBe(false);
    expect(policy.isAllowedAddress('::ffff:10.1.2.3')).toBe(true);
    expect(policy.isAllowedAddress('::ffff:10.2.2.3')).toBe(false);
    expect(policy.isAllowedAddress('64:ff9b::10.1.2.3')).toBe(true);
    expect(policy.isAllowedAddress('8.8.8.8')).toBe(true);
  });

  it('an IPv6 CIDR allows exactly that network', () => {
    const policy = createAddressPolicy({ allowPrivateNetworks: ['fd00:1::/32'] });
    expect(policy.isAllowedAddress('fd00:1::5')).toBe(true);
    expect(policy.isAllowedAddress('fd00:1:ffff::')).toBe(true);
    expect(policy.isAllowedAddress('fd00:2::1')).toBe(false);
    expect(policy.isAllowedAddress('::1')).toBe(false);
  });

  it('a single address allows that address, in any of its spellings, and not its neighbours', () => {
    const policy = createAddressPolicy({ allowPrivateNetworks: ['127.0.0.1', '::1'] });
    expect(policy.isAllowedAddress('127.0.0.1')).toBe(true);
    expect(policy.isAllowedAddress('::ffff:7f00:1')).toBe(true);
    expect(policy.isAllowedAddress('[::1]')).toBe(true);
    expect(policy.isAllowedAddress('127.0.0.2')).toBe(false);
    expect(policy.isAllowedAddress('::2')).toBe(false);
  });

  it('a mapped CIDR means the IPv4 network it maps', () => {
    const policy = createAddressPolicy({ allowPrivateNetworks: ['::ffff:10.0.0.0/112'] });
    expect(policy.isAllowedAddress('10.0.5.5')).toBe(true);
    expect(policy.isAllowedAddress('10.1.0.0')).toBe(false);
    expect(createAddressPolicy({ allowPrivateNetworks: ['::ffff:10.0.0.0/120'] }).isAllowedAddress('10.0.1.1')).toBe(false);
  });

  it('a hostname entry allows that name whatever it resolves to, and no other name', () => {
    const policy = createAddressPolicy({ allowPrivateNetworks: ['MCP.Internal.'] });
    expect(policy.isAllowedHost('mcp.internal')).toBe(true);
    expect(policy.isAllowedHost('mcp.internal.')).toBe(true);
    expect(policy.isAllowedHost('MCP.INTERNAL')).toBe(true);
    expect(policy.isAllowedHost('other.internal')).toBe(false);
    expect(policy.isAllowedHost('x.mcp.internal')).toBe(false);
    expect(policy.isAllowedAddress('10.0.0.1', 'mcp.internal')).toBe(true);
    expect(policy.isAllowedAddress('10.0.0.1', 'other.internal')).toBe(false);
    expect(policy.isAllowedAddress('10.0.0.1')).toBe(false);
  });

  it.each(['10.0.0.0/33', '::/129', '10.0.0.0/x', '10.0.0.0/', '300.1.1.1/8', '*.example.com', 'not a host', '', 'http://x.test', '::ffff:0:0/95'])(
    'refuses the unreadable entry %j at construction',
    (entry) => {
      expect(() => createAddressPolicy({ allowPrivateNetworks: [entry] })).toThrow(TypeError);
    },
  );
});
