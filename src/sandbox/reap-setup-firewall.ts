// The host firewall rules of setup networks whose network is gone (issue 25): setup-network.ts
// lifts its rules when a run closes its network, but a process killed with SIGKILL (or a power
// cut) leaves them in the INPUT chain for good. Each rule names its network's bridge
// (`-i fns-<suffix>`) and carries the comment `frognano-setup-<suffix>`; a rule whose bridge
// belongs to no setup network on the engine any more, and whose bridge interface is gone from
// the host, is a dead run's and is deleted. Rules of a network that still exists stay (they keep
// guarding the host while it does), so this runs after the dead runs' networks are removed; a
// bridge still up belongs to a live network even when this engine does not list it (another
// engine's on this host, say), and a rule whose bridge is gone guards nothing. Only where the bot may change the firewall (root,
// iptables); elsewhere it never added any.
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { promisify } from 'node:util';
import type Docker from 'dockerode';
import type { Logger } from 'pino';
import {
  LABEL_SETUP_NETWORK,
  SETUP_BRIDGE_PREFIX,
  SETUP_RULE_COMMENT_PREFIX,
} from './setup-network.js';

const run = promisify(execFile);

const RULE = new RegExp(
  `^-A INPUT (?=.*-i (${SETUP_BRIDGE_PREFIX}([0-9a-f]{8}))(?: |$))(?=.*--comment "?${SETUP_RULE_COMMENT_PREFIX}([0-9a-f]{8})"?(?: |$))(.*)$`,
);

/** Deletes setup firewall rules whose network no longer exists; returns how many. */
export async function reapSetupFirewall(docker: Docker, log?: Logger): Promise<number> {
  if (process.getuid?.() !== 0) return 0;
  let listing: string;
  try {
    listing = (await run('iptables', ['-w', '5', '-S', 'INPUT'])).stdout;
  } catch (error) {
    log?.debug({ err: String(error) }, 'setup firewall rules not reaped: iptables -S failed');
    return 0;
  }
  const rules = listing
    .split('\n')
    .map((line) => RULE.exec(line.trim()))
    .filter((m): m is RegExpExecArray => m !== null && m[2] === m[3]);
  if (rules.length === 0) return 0;
  // Listed after the rules: a network made meanwhile (its rules come after it) is seen here.
  const networks = await docker.listNetworks({
    filters: JSON.stringify({ label: [LABEL_SETUP_NETWORK] }),
  });
  const bridges = new Set(
    networks.map(
      (n) => (n.Options as Record<string, string> | undefined)?.['com.docker.network.bridge.name'],
    ),
  );
  let count = 0;
  for (const [, bridge, , , spec] of rules) {
    if (bridges.has(bridge) || existsSync(`/sys/class/net/${bridge}`)) continue;
    const args = spec!.split(' ').map((word) => word.replace(/^"(.*)"$/, '$1'));
    try {
      await run('iptables', ['-w', '5', '-D', 'INPUT', ...args]);
      count++;
      log?.info({ bridge }, 'reaped setup firewall rule');
    } catch (error) {
      // Another reaper took it first: fine.
      log?.debug({ bridge, err: String(error) }, 'setup firewall rule not deleted');
    }
  }
  return count;
}
