// The one thing a sibling setup container reaches when the bot itself runs in a container of
// the same engine (the App's image with the engine's socket): a relay container on the run's
// setup network that forwards every connection on one port to the bot's egress proxy, and does
// nothing else. The bot's own container never joins the setup network, so setup reaches none of
// its other ports (the webhook server, metrics, a debugger); and the setup network has no host
// address (setup-network.ts), so setup reaches nothing of the host either. The relay runs the
// bot's own image (node is there) with no capabilities, and carries the run's labels: the
// reaper removes one a killed run left.
import type Docker from 'dockerode';
import { LABEL_RUN } from './docker-sandbox-options.js';
import { ownerLabels, type SandboxOwner } from './owner.js';

/** Marks a setup relay container. */
export const LABEL_SETUP_RELAY = 'frognano.setup-relay';
/** The port the relay listens on, on its setup network address. */
export const SETUP_RELAY_PORT = 3128;

const READY = 'frognano setup relay ready';
// Plain node, no dependencies: each connection piped to the proxy and back.
const SCRIPT = `const net = require('net');
const [host, port] = process.env.RELAY_TARGET.split(' ');
net.createServer((c) => {
  const u = net.connect(Number(port), host);
  c.pipe(u); u.pipe(c);
  c.on('error', () => u.destroy()); u.on('error', () => c.destroy());
}).listen(${SETUP_RELAY_PORT}, '0.0.0.0', () => console.log('${READY}'));`;

export interface SetupRelayOptions {
  docker: Docker;
  name: string;
  runId: string;
  owner?: SandboxOwner;
  /** The bot's image (the relay runs its node). */
  image: string;
  /** A network of the bot's container: the relay reaches the proxy over it. */
  botNetwork: string;
  /** The setup network: setup reaches the relay over it. */
  setupNetwork: string;
  /** The egress proxy, on the bot's address on `botNetwork`. */
  target: { host: string; port: number };
}

export interface SetupRelay {
  /** `http://address:port` on the setup network, as setup's HTTP(S)_PROXY. */
  readonly url: string;
  /** Removes the relay. Idempotent. */
  close(): Promise<void>;
}

/** Starts the relay and waits until it listens; removes it again if any step fails. */
export async function startSetupRelay(options: SetupRelayOptions): Promise<SetupRelay> {
  const { docker } = options;
  const container = await docker.createContainer({
    name: options.name,
    Image: options.image,
    Entrypoint: ['node', '-e', SCRIPT],
    Cmd: [],
    Env: [`RELAY_TARGET=${options.target.host} ${options.target.port}`],
    Labels: {
      ...(options.owner ? ownerLabels(options.owner) : {}),
      [LABEL_RUN]: options.runId,
      [LABEL_SETUP_RELAY]: '1',
    },
    // The bot's image checks its own health; the relay is not the bot.
    Healthcheck: { Test: ['NONE'] },
    // Any unprivileged user: node runs the script, nothing is written.
    User: '65534:65534',
    HostConfig: {
      NetworkMode: options.botNetwork,
      CapDrop: ['ALL'],
      SecurityOpt: ['no-new-privileges'],
      ReadonlyRootfs: true,
      Memory: 128 * 1024 * 1024,
      MemorySwap: 128 * 1024 * 1024,
      NanoCpus: 500_000_000,
      PidsLimit: 64,
      Ulimits: [{ Name: 'nofile', Soft: 1024, Hard: 1024 }],
      // It joins two networks: it must route between neither, and speak IPv4 only.
      Sysctls: { 'net.ipv4.ip_forward': '0', 'net.ipv6.conf.all.disable_ipv6': '1' },
    },
  });
  let closing: Promise<void> | undefined;
  const close = () =>
    // v: the bot image's anonymous volumes (its VOLUME /data) go with it.
    (closing ??= container.remove({ force: true, v: true }).then(
      () => undefined,
      () => undefined,
    ));
  try {
    await docker.getNetwork(options.setupNetwork).connect({ Container: container.id });
    await container.start();
    await waitReady(container);
    const info = await container.inspect();
    const address = info.NetworkSettings?.Networks?.[options.setupNetwork]?.IPAddress;
    if (!address) throw new Error(`the setup relay got no address on ${options.setupNetwork}`);
    return { url: `http://${address}:${SETUP_RELAY_PORT}`, close };
  } catch (error) {
    await close();
    throw error;
  }
}

async function waitReady(container: Docker.Container): Promise<void> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const logs = (await container.logs({ stdout: true, stderr: true })).toString('utf8');
    if (logs.includes(READY)) return;
    const state = (await container.inspect()).State;
    if (!state?.Running)
      throw new Error(
        `the setup relay exited (${state?.ExitCode ?? '?'}): ${logs.slice(-300).trim()}`,
      );
    if (Date.now() > deadline) throw new Error('the setup relay did not listen within 30 s');
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
