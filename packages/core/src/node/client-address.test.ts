import { describe, expect, it } from 'vitest';
import { clientAddressBehindProxies } from './client-address.js';

describe('clientAddressBehindProxies', () => {
  it('trusts no header without hops: anyone can write X-Forwarded-For', () => {
    expect(clientAddressBehindProxies(0, '10.0.0.2', '198.51.100.7')).toBe('10.0.0.2');
    expect(clientAddressBehindProxies(1, '10.0.0.2', undefined)).toBe('10.0.0.2');
  });

  it('takes the address each trusted hop appended, never what the client wrote further left', () => {
    expect(clientAddressBehindProxies(1, '10.0.0.2', '198.51.100.7')).toBe('198.51.100.7');
    expect(clientAddressBehindProxies(1, '10.0.0.2', '6.6.6.6, 198.51.100.7')).toBe('198.51.100.7');
    expect(clientAddressBehindProxies(2, '10.0.0.2', '6.6.6.6, 198.51.100.7, 10.0.0.9')).toBe('198.51.100.7');
    expect(clientAddressBehindProxies(2, '10.0.0.2', '2001:db8::1, 10.0.0.9')).toBe('2001:db8::1');
  });

  it('a header shorter than the hops, or with an entry that is no address, stops at the last real one', () => {
    expect(clientAddressBehindProxies(3, '10.0.0.2', '198.51.100.7')).toBe('198.51.100.7');
    expect(clientAddressBehindProxies(2, '10.0.0.2', 'unknown, 10.0.0.9')).toBe('10.0.0.9');
    expect(clientAddressBehindProxies(1, '10.0.0.2', ' , ')).toBe('10.0.0.2');
  });
});
