// The host firewall rules of a setup network (setup-network.ts) outlive a process killed with
// SIGKILL; the reaper (start-up reap and `frognano reap`) removes them with the dead run's
// network. Needs root and iptables (this machine's is nft-backed: `iptables -V` says nf_tables).
import { execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { connectDocker } from '../../src/sandbox/docker-engine.js';
import { reap } from '../../src/sandbox/reap.js';
import { reapSetupFirewall } from '../../src/sandbox/reap-setup-firewall.js';
import { describeDocker, testRunId } from '../support/docker-engine.js';

const root = mkdtempSync(path.join(tmpdir(), 'reap-fw-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const canFirewall = (() => {
  if (process.getuid?.() !== 0) return false;
  try {
    execFileSync('iptables', ['-w', '5', '-S', 'INPUT'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
})();

/** INPUT rules that name the bridge of `network` (its name ends in the bridge's suffix). */
function rulesOf(network: string): string[] {
  const bridge = `fns-${network.slice(-8)}`;
  return execFileSync('iptables', ['-w', '5', '-S', 'INPUT'], { encoding: 'utf8' })
    .split('\n')
    .filter((line) => line.includes(bridge));
}

/** A child process that opens a setup network and is then killed with SIGKILL. */
async function killedInSetup(dataDir: string, runId: string): Promise<string> {
  const child = spawn(
    process.execPath,
    [
      '--import',
      'tsx',
      path.join(import.meta.dirname, 'helpers', 'setup-network-process.ts'),
      dataDir,
      runId,
    ],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  const opened = await new Promise<{ name: string; firewalled: boolean }>((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      out += chunk.toString('utf8');
      if (out.includes('\n')) resolve(JSON.parse(out) as { name: string; firewalled: boolean });
    });
    child.once('exit', (code) => reject(new Error(`setup network process exited (${code})`)));
  });
  expect(opened.firewalled).toBe(true);
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGKILL');
  await exited;
  return opened.name;
}

describeDocker('reap of a killed setup’s firewall rules', () => {
  const docker = connectDocker();
  it.skipIf(!canFirewall)(
    'removes the dead run’s iptables rules with its network, and keeps a live run’s',
    async () => {
      const dataDir = mkdtempSync(path.join(root, 'data-'));
      const deadRun = testRunId('reap-fw-dead');
      const dead = await killedInSetup(dataDir, deadRun);
      // Left behind by the kill: the network and its rules (a drop and the proxy's accept).
      expect(rulesOf(dead)).toHaveLength(2);
      expect(rulesOf(dead).join('\n')).toContain('--comment');
      expect((await docker.getNetwork(dead).inspect()).Name).toBe(dead);

      // A live process's setup network of the same data directory is left alone.
      const liveRun = testRunId('reap-fw-live');
      const live = spawn(
        process.execPath,
        [
          '--import',
          'tsx',
          path.join(import.meta.dirname, 'helpers', 'setup-network-process.ts'),
          dataDir,
          liveRun,
        ],
        { stdio: ['ignore', 'pipe', 'inherit'] },
      );
      const liveName = await new Promise<string>((resolve, reject) => {
        let out = '';
        live.stdout!.on('data', (chunk: Buffer) => {
          out += chunk.toString('utf8');
          if (out.includes('\n')) resolve((JSON.parse(out) as { name: string }).name);
        });
        live.once('exit', (code) => reject(new Error(`live process exited (${code})`)));
      });
      try {
        const result = await reap(docker, {
          liveRunIds: [liveRun],
          workRoot: path.join(dataDir, 'runs'),
          snapshotCap: Number.MAX_SAFE_INTEGER,
        });
        expect(result.networks).toBe(1);
        expect(result.firewallRules).toBe(2);
        expect(rulesOf(dead)).toEqual([]);
        await expect(docker.getNetwork(dead).inspect()).rejects.toMatchObject({
          statusCode: 404,
        });
        expect(rulesOf(liveName)).toHaveLength(2);
        expect((await docker.getNetwork(liveName).inspect()).Name).toBe(liveName);
      } finally {
        const exited = new Promise((resolve) => live.once('exit', resolve));
        live.kill('SIGKILL');
        await exited;
        // The live one's leftovers too, through the same reaper.
        await reap(docker, {
          liveRunIds: [],
          workRoot: path.join(dataDir, 'runs'),
          snapshotCap: Number.MAX_SAFE_INTEGER,
        });
        expect(rulesOf(liveName)).toEqual([]);
      }
    },
    120_000,
  );

  it.skipIf(!canFirewall)(
    'keeps the rules of a bridge that exists though this engine lists no setup network for it',
    async () => {
      // Another engine's setup network (or one this engine lost the label of): its bridge is up.
      const suffix = randomBytes(4).toString('hex');
      const name = `reap-fw-other-${suffix}`;
      await docker.createNetwork({
        Name: name,
        Driver: 'bridge',
        Internal: true,
        Options: { 'com.docker.network.bridge.name': `fns-${suffix}` },
      });
      const rule = [
        'INPUT',
        '-i',
        `fns-${suffix}`,
        '-m',
        'comment',
        '--comment',
        `frognano-setup-${suffix}`,
        '-j',
        'DROP',
      ];
      execFileSync('iptables', ['-w', '5', '-I', ...rule]);
      // The engine makes the bridge with the network.
      expect(existsSync(`/sys/class/net/fns-${suffix}`)).toBe(true);
      try {
        // Other tests' leftovers may be reaped meanwhile: only this rule's fate is asserted.
        await reapSetupFirewall(docker);
        expect(rulesOf(name)).toHaveLength(1);
        await docker.getNetwork(name).remove();
        // Its bridge gone with it, the rule is inert and goes.
        expect(await reapSetupFirewall(docker)).toBeGreaterThanOrEqual(1);
        expect(rulesOf(name)).toEqual([]);
      } finally {
        await docker
          .getNetwork(name)
          .remove()
          .catch(() => undefined);
        if (rulesOf(name).length > 0) execFileSync('iptables', ['-w', '5', '-D', ...rule]);
      }
    },
    60_000,
  );
});
