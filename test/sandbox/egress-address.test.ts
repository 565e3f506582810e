// Which addresses the egress proxy refuses (security review of issue 25): the ranges beyond
// loopback, link-local and private that reach internal services, and IPv6 forms that embed an
// IPv4 address (judged as the IPv4 they carry). Reserved ranges not named stay reachable.
import { describe, expect, it } from 'vitest';
import { refusedAddressReason } from '../../src/sandbox/egress-address.js';

const none = new Set<string>();

describe('refusedAddressReason beyond loopback, link-local and private', () => {
  it.each([
    ['100.64.0.1', 'shared address'],
    ['100.100.100.200', 'shared address'], // Alibaba Cloud's metadata service
    ['100.127.255.254', 'shared address'],
    ['198.18.0.1', 'benchmarking address'],
    ['198.19.255.255', 'benchmarking address'],
    ['192.0.0.8', 'IETF protocol address'],
    ['240.0.0.1', 'reserved address'],
    ['255.255.255.255', 'reserved address'],
    ['224.0.0.1', 'multicast address'],
    ['239.255.255.250', 'multicast address'],
    ['ff02::1', 'multicast address'],
    ['168.63.129.16', 'cloud platform address'], // Azure WireServer
    ['::ffff:100.100.100.200', 'shared address'],
  ])('refuses %s (%s)', (address, reason) => {
    expect(refusedAddressReason(address, none)).toBe(reason);
  });

  it.each([
    ['::127.0.0.1', 'loopback address'],
    ['::7f00:1', 'loopback address'],
    ['::a00:1', 'private address'],
    ['::ffff:7f00:1', 'loopback address'],
    ['0:0:0:0:0:ffff:a9fe:a9fe', 'link-local address'],
    ['64:ff9b::169.254.169.254', 'link-local address'],
    ['64:ff9b::a00:1', 'private address'],
    ['64:ff9b::7f00:1', 'loopback address'],
    ['2002:7f00:1::', 'loopback address'],
    ['2002:a9fe:a9fe::1', 'link-local address'],
    ['2002:c0a8:101:0:0:0:0:1', 'private address'],
    ['64:ff9b:1::1', 'NAT64 local-use address'],
    ['64:ff9b:1:ffff::8.8.8.8', 'NAT64 local-use address'],
  ])('refuses %s, which embeds a refused IPv4 address (%s)', (address, reason) => {
    expect(refusedAddressReason(address, none)).toBe(reason);
  });

  it('refuses an IPv6 form of one of the host addresses', () => {
    expect(refusedAddressReason('64:ff9b::198.51.100.9', new Set(['198.51.100.9']))).toBe(
      'address of this host',
    );
    expect(refusedAddressReason('2002:c633:6409::', new Set(['198.51.100.9']))).toBe(
      'address of this host',
    );
    expect(refusedAddressReason('2001:DB8:0:0::9', new Set(['2001:db8::9']))).toBe(
      'address of this host',
    );
  });

  it.each([
    '203.0.113.7', // registry.npmjs.org on this machine: TEST-NET-3 stays reachable
    '203.0.113.255',
    '192.0.2.10',
    '198.51.100.1',
    '198.20.0.1',
    '100.128.0.1',
    '100.63.255.255',
    '192.0.1.255',
    '223.255.255.255',
    '168.63.129.17',
    '64:ff9b::8.8.8.8',
    '64:ff9b::cb00:7107',
    '2002:cb00:7107::1',
    '::ffff:203.0.113.7',
    '2606:4700::6810:84e5',
    'fe00::1',
  ])('lets %s through', (address) => {
    expect(refusedAddressReason(address, none)).toBeUndefined();
  });

  it('refuses an address in one of the subnets it is given (the bot container networks)', () => {
    expect(refusedAddressReason('198.51.100.77', none, ['198.51.100.0/24'])).toBe(
      "address of the bot's network",
    );
    expect(refusedAddressReason('2001:db8:5::9', none, ['2001:db8:5::/64'])).toBe(
      "address of the bot's network",
    );
    expect(refusedAddressReason('198.51.101.77', none, ['198.51.100.0/24'])).toBeUndefined();
  });
});
