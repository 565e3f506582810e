// Which addresses the egress proxy refuses to connect to, whatever a name resolves to: the
// host itself (loopback, its own interfaces, the engine host's when the bot is a sibling
// container), link-local (169.254.0.0/16 holds the cloud metadata service), private networks,
// and the ranges that reach internal services too: shared address space 100.64.0.0/10
// (tailnets, Alibaba's metadata at 100.100.100.200), benchmarking 198.18.0.0/15, IETF protocol
// 192.0.0.0/24, reserved 240.0.0.0/4 with broadcast, multicast, Azure's WireServer. An IPv6
// address that carries an IPv4 one (IPv4-compatible, mapped, NAT64, 6to4) is judged as that
// IPv4. Only these: other reserved ranges stay reachable (some machines resolve public
// registries into documentation ranges such as 203.0.113.0/24).
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
  { reason: 'shared address', v4: [['100.64.0.0', 10]], v6: [] },
  { reason: 'benchmarking address', v4: [['198.18.0.0', 15]], v6: [] },
  { reason: 'IETF protocol address', v4: [['192.0.0.0', 24]], v6: [] },
  { reason: 'reserved address', v4: [['240.0.0.0', 4]], v6: [] },
  { reason: 'multicast address', v4: [['224.0.0.0', 4]], v6: [['ff00::', 8]] },
  { reason: 'cloud platform address', v4: [['168.63.129.16', 32]], v6: [] },
  // Where in it a translator puts the IPv4 address is the site's choice (RFC 8215): the whole
  // prefix, since no public registry is reached through a local translator.
  { reason: 'NAT64 local-use address', v4: [], v6: [['64:ff9b:1::', 48]] },
];

const lists = RANGES.map(({ reason, v4, v6 }) => {
  const list = new BlockList();
  for (const [net, prefix] of v4) list.addSubnet(net, prefix, 'ipv4');
  for (const [net, prefix] of v6) list.addSubnet(net, prefix, 'ipv6');
  return { reason, list };
});

/**
 * Why the proxy must not connect to `address` (`loopback address`, `private address`,
 * `address of this host`, ...), or undefined when it may. `hostSubnets`: the bot container's
 * networks (CIDR) when it runs as a sibling container.
 */
export function refusedAddressReason(
  address: string,
  hostAddresses: ReadonlySet<string> = ownAddresses(),
  hostSubnets: readonly string[] = [],
): string | undefined {
  const plain = address.toLowerCase().replace(/%.*$/, '');
  const family = isIP(plain);
  if (family === 0) return 'not an IP address';
  const v4 = family === 4 ? plain : embeddedIPv4(plain);
  if (v4 !== undefined && v4 !== plain) {
    // ::1 and :: are IPv6's own loopback and unspecified address, not IPv4-compatible ones.
    const own = v4Reason(plain, 'ipv6');
    if (own) return own;
    return refusedAddressReason(v4, hostAddresses, hostSubnets);
  }
  const type = family === 4 ? 'ipv4' : 'ipv6';
  const reason = v4Reason(plain, type);
  if (reason) return reason;
  if (hostAddresses.has(plain) || hostAddresses.has(canonical(plain)))
    return 'address of this host';
  if (hostSubnets.length > 0 && subnetList(hostSubnets).check(plain, type))
    return "address of the bot's network";
  return undefined;
}

function v4Reason(address: string, type: 'ipv4' | 'ipv6'): string | undefined {
  for (const { reason, list } of lists) if (list.check(address, type)) return reason;
  return undefined;
}

const subnetLists = new Map<string, BlockList>();

/** A BlockList of CIDR subnets, cached by their text (the proxy asks per address). */
function subnetList(subnets: readonly string[]): BlockList {
  const key = subnets.join(',');
  let list = subnetLists.get(key);
  if (!list) {
    list = new BlockList();
    for (const subnet of subnets) {
      const [net, bits] = subnet.split('/');
      const family = isIP(net ?? '');
      if (family === 0) continue;
      const type = family === 4 ? 'ipv4' : 'ipv6';
      list.addSubnet(net!, Number(bits ?? (family === 4 ? 32 : 128)), type);
    }
    subnetLists.set(key, list);
  }
  return list;
}

/**
 * The IPv4 address an IPv6 one carries, if it is of a form that does: IPv4-compatible
 * (::/96), IPv4-mapped (::ffff:0:0/96), NAT64 well-known (64:ff9b::/96), 6to4 (2002::/16).
 */
export function embeddedIPv4(address: string): string | undefined {
  const bytes = ipv6Bytes(address);
  if (!bytes) return undefined;
  const zero = (from: number, to: number) => bytes.slice(from, to).every((b) => b === 0);
  const quad = (at: number) => bytes.slice(at, at + 4).join('.');
  if (zero(0, 12)) return quad(12);
  if (zero(0, 10) && bytes[10] === 0xff && bytes[11] === 0xff) return quad(12);
  if (bytes[0] === 0 && bytes[1] === 0x64 && bytes[2] === 0xff && bytes[3] === 0x9b && zero(4, 12))
    return quad(12);
  if (bytes[0] === 0x20 && bytes[1] === 0x02) return quad(2);
  return undefined;
}

/** The 16 bytes of an IPv6 address (with or without a trailing dotted IPv4), or undefined. */
function ipv6Bytes(address: string): number[] | undefined {
  if (isIP(address) !== 6) return undefined;
  let text = address;
  const dotted = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  if (dotted) {
    const [a, b, c, d] = dotted.slice(1).map(Number) as [number, number, number, number];
    text = `${text.slice(0, dotted.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head = '', tail] = text.split('::');
  const groups = (part: string) => (part === '' ? [] : part.split(':'));
  const left = groups(head);
  const right = tail === undefined ? [] : groups(tail);
  const missing = 8 - left.length - right.length;
  const all = [...left, ...Array<string>(tail === undefined ? 0 : missing).fill('0'), ...right];
  if (all.length !== 8) return undefined;
  return all.flatMap((group) => {
    const value = parseInt(group, 16);
    return [value >> 8, value & 0xff];
  });
}

/** The IPv4 an IPv4-mapped address is, an IPv6 one compressed (as interfaces list them). */
function canonical(address: string): string {
  const bytes = ipv6Bytes(address);
  if (bytes && bytes.slice(0, 10).every((b) => b === 0) && bytes[10] === 0xff && bytes[11] === 0xff)
    return bytes.slice(12).join('.');
  if (bytes) return new URL(`http://[${address}]/`).hostname.slice(1, -1);
  return address;
}

/** `::ffff:10.0.0.1` is 10.0.0.1: an IPv4-mapped address is judged as the IPv4 it is. */
function unmapped(address: string): string {
  return canonical(address.toLowerCase().replace(/%.*$/, ''));
}

/** Every address of this machine's interfaces (a public one is still the host). */
export function ownAddresses(): Set<string> {
  const out = new Set<string>();
  for (const infos of Object.values(networkInterfaces()))
    for (const info of infos ?? []) out.add(unmapped(info.address));
  return out;
}
