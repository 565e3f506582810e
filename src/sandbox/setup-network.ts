// The network a `registries` setup runs on (issue 25): an internal Docker bridge (no route out)
// on which the only thing to reach is the bot's egress proxy. When the bot runs on the host, the
// proxy listens on the bridge's gateway address there; an internal bridge still lets its
// containers reach every service the host has on a wildcard address (verified on this engine),
// so where the bot may change the host's firewall (root, iptables) it drops everything from the
// bridge to the host but the proxy's port. When the bot itself runs in a container of the same
// engine (the App's image with the engine's socket; its sandboxes are siblings), the bridge gets
// no host address at all (inhibit_ipv4: setup reaches nothing of the host) and the one thing on
// it besides setup is a relay container (setup-relay.ts) that forwards to the proxy, which
// listens on the bot's address on its own network: the bot's container never joins the setup
// network, so setup reaches none of its other ports. The network carries the run and owner
// labels: the reaper removes one a dead run left, and the firewall rules with it.
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { promisify } from 'node:util';
import type Docker from 'dockerode';
import type { Logger } from '../log.js';
import { LABEL_RUN } from './docker-sandbox-options.js';
import type { AllowList } from './egress-allow.js';
import { startEgressProxy, type EgressProxy } from './egress-proxy.js';
import { errorText } from './engine-error-text.js';
import { engineHostAddresses } from './engine-host-addresses.js';
import { ownerLabels, type SandboxOwner } from './owner.js';
import { startSetupRelay } from './setup-relay.js';

/** Marks a setup network (reap.ts removes the ones of dead runs). */
export const LABEL_SETUP_NETWORK = 'frognano.setup-network';
/** Every setup network's name starts so (a sandbox may join no other custom network). */
export const SETUP_NETWORK_PREFIX = 'frognano-setup-';
/** A setup network's bridge interface is `fns-<suffix>`, its firewall rules' comment this. */
export const SETUP_BRIDGE_PREFIX = 'fns-';
export const SETUP_RULE_COMMENT_PREFIX = 'frognano-setup-';

const run = promisify(execFile);

export interface SetupNetworkOptions {
  docker: Docker;
  runId: string;
  owner?: SandboxOwner;
  allow: AllowList;
  log: Logger;
  /** The bot's own container on this engine, if it runs in one (default: detected). */
  selfContainer?: string | null;
}

export interface SetupNetwork {
  /** The Docker network the setup container starts on. */
  readonly name: string;
  readonly proxy: EgressProxy;
  /** The proxy as setup reaches it (the relay's address when the bot runs in a container). */
  readonly proxyUrl: string;
  /**
   * Whether setup reaches nothing but the proxy: the host firewall keeps the bridge to the
   * proxy's port, or (bot in a container) the bridge has no host address and only the relay.
   * False: not possible here (not root, no iptables).
   */
  readonly firewalled: boolean;
  /** Whether the bot runs in a container and setup reaches the proxy through a relay. */
  readonly sibling: boolean;
  /** Removes the network, then stops the proxy and lifts the firewall rules. Idempotent. */
  close(): Promise<void>;
}

/** Creates the network and starts the proxy on it; removes what it made if any step fails. */
export async function openSetupNetwork(options: SetupNetworkOptions): Promise<SetupNetwork> {
  const { docker, runId, log } = options;
  const suffix = randomBytes(4).toString('hex');
  const name = `${SETUP_NETWORK_PREFIX}${runId}-${suffix}`.slice(0, 120);
  const bridge = `${SETUP_BRIDGE_PREFIX}${suffix}`;
  const selfId =
    options.selfContainer === undefined ? await selfContainerId(docker) : options.selfContainer;
  // A bot container on the host's network stack (--network host) is the host for this purpose.
  const self = selfId ? await siblingOf(docker, selfId) : undefined;
  const network = await docker.createNetwork({
    Name: name,
    Driver: 'bridge',
    Internal: true,
    // Setup reaches the proxy over IPv4 only; no IPv6 path for the firewall to miss.
    EnableIPv6: false,
    CheckDuplicate: true,
    Labels: {
      ...(options.owner ? ownerLabels(options.owner) : {}),
      [LABEL_RUN]: runId,
      [LABEL_SETUP_NETWORK]: '1',
    },
    Options: {
      'com.docker.network.bridge.name': bridge,
      // On the host: one setup container per network, and only the gateway to reach. As a
      // sibling: no host address on the bridge (setup reaches nothing of the host), and the
      // relay beside setup on it (the two must reach each other).
      ...(self
        ? { 'com.docker.network.bridge.inhibit_ipv4': 'true' }
        : { 'com.docker.network.bridge.enable_icc': 'false' }),
    },
  });
  // Down in this order: the network first (setup's container, and anything it left running,
  // leaves it), then the proxy and relay, then the firewall rules. A network that cannot be
  // removed keeps its rules: they guard the host while it exists, and the reaper lifts them.
  const undo: (() => Promise<unknown>)[] = [];
  const rules: (() => Promise<unknown>)[] = [];
  const closeAll = async () => {
    let removed = true;
    await removeNetwork(docker, name).catch((e: unknown) => {
      removed = false;
      warn(log, name, e);
    });
    for (const step of undo.reverse()) await step().catch((e: unknown) => warn(log, name, e));
    if (!removed) return;
    for (const step of rules.reverse()) await step().catch((e: unknown) => warn(log, name, e));
  };
  try {
    let host: string;
    if (self) {
      host = self.address;
    } else {
      host = await gatewayOf(network);
    }
    // As a sibling the bot's interfaces are its container's: the engine host's are learned.
    const engineHost = self ? await engineHostAddresses(docker, selfId!, self.image) : undefined;
    const proxy = await startEgressProxy({
      allow: options.allow,
      host,
      log,
      ...(engineHost ? { engineHost } : {}),
    });
    undo.push(() => proxy.close());
    let proxyUrl = proxy.url;
    let firewalled: boolean;
    if (self) {
      const relay = await startSetupRelay({
        docker,
        name: `${SETUP_NETWORK_PREFIX}relay-${suffix}`,
        runId,
        owner: options.owner,
        image: self.image,
        botNetwork: self.network,
        setupNetwork: name,
        target: { host, port: proxy.port },
      });
      undo.push(() => relay.close());
      proxyUrl = relay.url;
      firewalled = true;
    } else {
      firewalled = await guardHost(
        bridge,
        `${SETUP_RULE_COMMENT_PREFIX}${suffix}`,
        host,
        proxy.port,
        rules,
        log,
      );
    }
    let closing: Promise<void> | undefined;
    log.info(
      { network: name, proxy: proxyUrl, firewalled, sibling: Boolean(self) },
      'setup network up',
    );
    return {
      name,
      proxy,
      proxyUrl,
      firewalled,
      sibling: Boolean(self),
      close: () => (closing ??= closeAll()),
    };
  } catch (error) {
    await closeAll();
    throw error;
  }
}

async function gatewayOf(network: Docker.Network): Promise<string> {
  const info = (await network.inspect()) as {
    IPAM?: { Config?: { Gateway?: string }[] };
  };
  const gateway = info.IPAM?.Config?.find((c) => c.Gateway)?.Gateway;
  if (!gateway) throw new Error('the setup network has no gateway address for the egress proxy');
  return gateway.replace(/\/\d+$/, '');
}

interface Sibling {
  /** The bot's image: the relay runs it. */
  image: string;
  /** A network of the bot's container with an address (the relay joins it). */
  network: string;
  /** The bot's address there: the proxy listens on it. */
  address: string;
}

/** Where a relay reaches the bot's container, or undefined when it shares the host's network. */
async function siblingOf(docker: Docker, container: string): Promise<Sibling | undefined> {
  const info = await docker.getContainer(container).inspect();
  if (info.HostConfig?.NetworkMode === 'host') return undefined;
  const networks = Object.entries(info.NetworkSettings?.Networks ?? {}).filter(
    ([name, settings]) => !name.startsWith(SETUP_NETWORK_PREFIX) && settings.IPAddress,
  );
  const [network, settings] = networks[0] ?? [];
  if (!network || !settings?.IPAddress)
    throw new Error(
      `the bot's container ${container.slice(0, 12)} has no network address a setup relay could reach; run it on a bridge network (not --network none or container:)`,
    );
  return { image: info.Image, network, address: settings.IPAddress };
}

/**
 * The bot's own container when it runs in one on this engine (the App's image with the
 * engine's socket): the container id in /proc/self/mountinfo (Docker mounts the container's
 * hostname and resolv.conf from /var/lib/docker/containers/<id>/), if the engine knows it.
 */
export async function selfContainerId(docker: Docker): Promise<string | undefined> {
  const mounts = await readFile('/proc/self/mountinfo', 'utf8').catch(() => '');
  const id = /\/containers\/([0-9a-f]{64})\/(?:hostname|resolv\.conf|hosts)/.exec(mounts)?.[1];
  if (!id) return undefined;
  try {
    await docker.getContainer(id).inspect();
    return id;
  } catch {
    // Another engine's container (a remote DOCKER_HOST): the proxy is on this host's side.
    return undefined;
  }
}

/**
 * Keeps the bridge to the proxy: from its interface only the proxy's port on its address gets
 * into the host. Root only; elsewhere the operator's firewall must do it (README says how).
 * The rules carry a comment naming the network's suffix: a process killed before it lifts them
 * leaves them findable, and the reaper (reap-setup-firewall.ts) lifts them with its network.
 */
async function guardHost(
  bridge: string,
  comment: string,
  address: string,
  port: number,
  lift: (() => Promise<unknown>)[],
  log: Logger,
): Promise<boolean> {
  const tag = ['-m', 'comment', '--comment', comment];
  const drop = ['INPUT', '-i', bridge, ...tag, '-j', 'DROP'];
  const accept = [
    'INPUT',
    '-i',
    bridge,
    '-p',
    'tcp',
    '-d',
    address,
    '--dport',
    String(port),
    ...tag,
    '-j',
    'ACCEPT',
  ];
  if (process.getuid?.() !== 0) {
    log.warn(
      { bridge },
      'setup network not firewalled: not root; services on all host addresses are reachable from setup',
    );
    return false;
  }
  try {
    await run('iptables', ['-w', '5', '-I', ...drop]);
    lift.push(() => run('iptables', ['-w', '5', '-D', ...drop]));
    await run('iptables', ['-w', '5', '-I', ...accept]);
    lift.push(() => run('iptables', ['-w', '5', '-D', ...accept]));
    return true;
  } catch (error) {
    log.warn(
      { bridge, err: errorText(error) },
      'setup network not firewalled: iptables failed; services on all host addresses are reachable from setup',
    );
    return false;
  }
}

async function removeNetwork(docker: Docker, name: string): Promise<void> {
  const network = docker.getNetwork(name);
  const info = (await network.inspect().catch(() => undefined)) as
    { Containers?: Record<string, unknown> } | undefined;
  if (!info) return;
  for (const container of Object.keys(info.Containers ?? {}))
    await network.disconnect({ Container: container, Force: true }).catch(() => undefined);
  await network.remove();
}

function warn(log: Logger, network: string, error: unknown): void {
  log.warn({ network, err: errorText(error) }, 'setup network cleanup step failed');
}
