// Which addresses the egress proxy refuses to connect to, whatever a name resolves to: the
// host itself (loopback, its own interfaces), link-local (169.254.0.0/16 holds the cloud
// metadata service) and private networks. Only these: other reserved ranges stay reachable
// (some machines resolve public registries into documentation ranges such as 203.0.113.0/24).
import { BlockList, isIP } from 'node:net';
import { networkInterfaces } from 'node:os';

const RANGES: readonly { reason: string; v4: [string, number][]; v6: [string, number][] }[] = [
  {
    // 0.0.0.0 reaches the host's own loopback on Linux.
    reason: 'loopback address',
    v4: [
      ['127.0.0.0', 8],
      ['0.0.0.0', 8],
    ],
    v6: [
      ['::1', 128],
      ['::', 128],
    ],
  },
  { reason: 'link-local address', v4: [['169.254.0.0', 16]], v6: [['fe80::', 10]] },
  {
    reason: 'private address',
    v4: [
      ['10.0.0.0', 8],
      ['172.16.0.0', 12],
      ['192.168.0.0', 16],
    ],
    v6: [['fc00::', 7]],
  },
];

const lists = RANGES.map(({ reason, v4, v6 }) => {
  const list = new BlockList();
  for (const [net, prefix] of v4) list.addSubnet(net, prefix, 'ipv4');
  for (const [net, prefix] of v6) list.addSubnet(net, prefix, 'ipv6');
  return { reason, list };
});

/**
 * Why the proxy must not connect to `address` (`loopback address`, `link-local address`,
 * `private address`, `address of this host`), or undefined when it may.
 */
export function refusedAddressReason(
  address: string,
  hostAddresses: ReadonlySet<string> = ownAddresses(),
): string | undefined {
  const plain = unmapped(address);
  const family = isIP(plain);
  if (family === 0) return 'not an IP address';
  const type = family === 4 ? 'ipv4' : 'ipv6';
  for (const { reason, list } of lists) if (list.check(plain, type)) return reason;
  if (hostAddresses.has(plain)) return 'address of this host';
  return undefined;
}

/** `::ffff:10.0.0.1` is 10.0.0.1: an IPv4-mapped address is judged as the IPv4 it is. */
function unmapped(address: string): string {
  const lower = address.toLowerCase().replace(/%.*$/, '');
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/.exec(lower);
  return mapped ? mapped[1]! : lower;
}

/** Every address of this machine's interfaces (a public one is still the host). */
export function ownAddresses(): Set<string> {
  const out = new Set<string>();
  for (const infos of Object.values(networkInterfaces()))
    for (const info of infos ?? []) out.add(unmapped(info.address));
  return out;
}
