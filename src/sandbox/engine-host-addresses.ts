// The engine host's own addresses, for the egress proxy when the bot runs in a sibling container
// (security review of issue 25): the bot's interfaces are its container's, so the host's public
// IPv4 and global IPv6 (its sshd, its published ports) would pass as any outside address. A
// one-shot container on the host's network stack prints the kernel's tables of local addresses
// (/proc/net/fib_trie, /proc/net/if_inet6: cat is in every image, no tool to install); with the
// subnets of the bot container's own networks they are refused unless the operator allows that
// exact host. Learned once per process: the host's addresses do not change under a run.
import type Docker from 'dockerode';

export interface EngineHostAddresses {
  /** The engine host's interface addresses (IPv4 and IPv6, IPv6 compressed). */
  addresses: string[];
  /** The subnets (CIDR) of the bot container's networks. */
  subnets: string[];
}

let cached: Map<string, Promise<EngineHostAddresses>> = new Map();

/**
 * The engine host's addresses and the bot container's subnets; `image` runs the probe (the
 * bot's own image: present, and cat is there). Cached per container; a failure is not.
 */
export function engineHostAddresses(
  docker: Docker,
  container: string,
  image: string,
): Promise<EngineHostAddresses> {
  let found = cached.get(container);
  if (!found) {
    found = probe(docker, container, image);
    cached.set(container, found);
    found.catch(() => cached.delete(container));
  }
  return found;
}

/** Forgets what was learned (tests). */
export function forgetEngineHostAddresses(): void {
  cached = new Map();
}

async function probe(docker: Docker, container: string, image: string) {
  const [addresses, subnets] = await Promise.all([
    hostAddresses(docker, image),
    containerSubnets(docker, container),
  ]);
  return { addresses, subnets };
}

/** The engine host's interface addresses, read by a container on the host's network stack. */
export async function hostAddresses(docker: Docker, image: string): Promise<string[]> {
  const probe = await docker.createContainer({
    Image: image,
    Entrypoint: ['cat'],
    Cmd: ['/proc/net/fib_trie', '/proc/net/if_inet6'],
    User: '65534:65534',
    Tty: true,
    HostConfig: {
      NetworkMode: 'host',
      CapDrop: ['ALL'],
      SecurityOpt: ['no-new-privileges'],
      ReadonlyRootfs: true,
      Memory: 64 * 1024 * 1024,
      PidsLimit: 16,
    },
  });
  try {
    await probe.start();
    const { StatusCode } = (await probe.wait()) as { StatusCode: number };
    const text = (await probe.logs({ stdout: true, stderr: true })).toString('utf8');
    const addresses = parseLocalAddresses(text);
    if (StatusCode !== 0 || addresses.length === 0)
      throw new Error(
        `could not read the engine host's addresses with ${image} (exit ${StatusCode}: ${text.trim().slice(0, 200)}); the bot's image must run cat with --network host`,
      );
    return addresses;
  } finally {
    await probe.remove({ force: true }).catch(() => undefined);
  }
}

/** The subnets of every network the container is on, from the engine's IPAM. */
async function containerSubnets(docker: Docker, container: string): Promise<string[]> {
  const info = await docker.getContainer(container).inspect();
  const out = new Set<string>();
  for (const settings of Object.values(info.NetworkSettings?.Networks ?? {})) {
    if (!settings.NetworkID) continue;
    const network = (await docker
      .getNetwork(settings.NetworkID)
      .inspect()
      .catch(() => undefined)) as { IPAM?: { Config?: { Subnet?: string }[] } } | undefined;
    for (const config of network?.IPAM?.Config ?? []) if (config.Subnet) out.add(config.Subnet);
  }
  return [...out].sort();
}

/**
 * The local addresses in /proc/net/fib_trie (an address followed by `/32 host LOCAL`) and
 * /proc/net/if_inet6 (32 hex digits first on each line), deduplicated and sorted.
 */
export function parseLocalAddresses(text: string): string[] {
  const out = new Set<string>();
  let last: string | undefined;
  for (const line of text.split(/\r?\n/)) {
    const leaf = /[|+]-- (\d+\.\d+\.\d+\.\d+)\s*$/.exec(line);
    if (leaf) last = leaf[1];
    else if (/^\s*\/32 host LOCAL\s*$/.test(line) && last) out.add(last);
    const v6 = /^([0-9a-f]{32})\s/.exec(line);
    if (v6) {
      const groups = v6[1]!.match(/.{4}/g)!.join(':');
      out.add(new URL(`http://[${groups}]/`).hostname.replace(/^\[(.*)\]$/, '$1'));
    }
  }
  return [...out].sort();
}
