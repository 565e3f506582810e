// The order a setup network comes down in (issue 25's review): the setup container leaves the
// network before the proxy stops and the host firewall rules are lifted, so nothing setup left
// running reaches the host in between; and a network that cannot be removed keeps its rules
// (the reaper lifts them with it). The engine is a fake recording the calls; the proxy and the
// iptables rules are real (root and iptables only: elsewhere no rules are added).
import { execFileSync } from 'node:child_process';
import { connect } from 'node:net';
import type Docker from 'dockerode';
import pino from 'pino';
import { expect, it } from 'vitest';
import { AllowList } from '../../src/sandbox/egress-allow.js';
import { openSetupNetwork } from '../../src/sandbox/setup-network.js';

const canFirewall = (() => {
  if (process.getuid?.() !== 0) return false;
  try {
    execFileSync('iptables', ['-w', '5', '-S', 'INPUT'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
})();

function rulesOf(network: string): string[] {
  const bridge = `fns-${network.slice(-8)}`;
  return execFileSync('iptables', ['-w', '5', '-S', 'INPUT'], { encoding: 'utf8' })
    .split('\n')
    .filter((line) => line.includes(bridge));
}

function listening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

interface Seen {
  calls: string[];
  created?: Record<string, unknown>;
  /** At the disconnect: the proxy still listened, the rules were still there. */
  atDisconnect?: { proxy: boolean; rules: number };
}

function fakeDocker(seen: Seen, port: () => number, removeFails = false): Docker {
  let name = '';
  const network = {
    inspect: async () => {
      seen.calls.push('inspect');
      return {
        IPAM: { Config: [{ Gateway: '127.0.0.1' }] },
        Containers: { setupcontainer: {} },
      };
    },
    disconnect: async () => {
      seen.atDisconnect = { proxy: await listening(port()), rules: rulesOf(name).length };
      seen.calls.push('disconnect');
    },
    remove: async () => {
      seen.calls.push('remove');
      if (removeFails) throw new Error('network has active endpoints');
    },
  };
  return {
    createNetwork: async (options: Record<string, unknown>) => {
      seen.created = options;
      name = options.Name as string;
      return network;
    },
    getNetwork: () => network,
  } as unknown as Docker;
}

it.skipIf(!canFirewall)(
  'disconnects the setup container before it stops the proxy and lifts the rules',
  async () => {
    const seen: Seen = { calls: [] };
    let port = 0;
    const net = await openSetupNetwork({
      docker: fakeDocker(seen, () => port),
      runId: 'close-order',
      allow: new AllowList([]),
      log: pino({ level: 'silent' }),
      selfContainer: null,
    });
    port = net.proxy.port;
    expect(net.firewalled).toBe(true);
    expect(seen.created).toMatchObject({ Internal: true, EnableIPv6: false });
    expect(rulesOf(net.name)).toHaveLength(2);
    await net.close();
    expect(seen.calls.slice(-2)).toEqual(['disconnect', 'remove']);
    expect(seen.atDisconnect).toEqual({ proxy: true, rules: 2 });
    expect(await listening(port)).toBe(false);
    expect(rulesOf(net.name)).toEqual([]);
  },
);

it.skipIf(!canFirewall)('keeps the firewall rules when the network cannot be removed', async () => {
  const seen: Seen = { calls: [] };
  let port = 0;
  const net = await openSetupNetwork({
    docker: fakeDocker(seen, () => port, true),
    runId: 'close-stuck',
    allow: new AllowList([]),
    log: pino({ level: 'silent' }),
    selfContainer: null,
  });
  port = net.proxy.port;
  try {
    await net.close();
    expect(seen.calls).toContain('remove');
    expect(rulesOf(net.name)).toHaveLength(2);
  } finally {
    for (const rule of rulesOf(net.name))
      execFileSync(
        'iptables',
        ['-w', '5', ...rule.replace(/^-A /, '-D ').split(' ')].map((w) =>
          w.replace(/^"(.*)"$/, '$1'),
        ),
      );
  }
});
