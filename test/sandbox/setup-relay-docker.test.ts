// The setup relay (setup-relay.ts) against the real engine: hardened as its create options say
// and the engine accepts them (no routing, IPv4 only, an unprivileged user, no health check, its
// limits), and its removal takes the anonymous volume the bot image's VOLUME gives it.
import { execFileSync } from 'node:child_process';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { connectDocker } from '../../src/sandbox/docker-engine.js';
import { DEFAULT_SANDBOX_IMAGE } from '../../src/sandbox/docker-sandbox-options.js';
import { startSetupRelay } from '../../src/sandbox/setup-relay.js';
import { describeDocker, ensureSandboxImage, testRunId } from '../support/docker-engine.js';

const docker = connectDocker();
// The sandbox image has node; with a VOLUME like the bot's image (/data).
const IMAGE = 'frognano-test/relay-volume:1';
const runId = testRunId('relay');
const setupNetwork = `frognano-setup-${runId}`.slice(0, 60);

describeDocker('setup relay', () => {
  beforeAll(async () => {
    await ensureSandboxImage();
    execFileSync('docker', ['build', '-q', '-t', IMAGE, '-'], {
      input: `FROM ${DEFAULT_SANDBOX_IMAGE}\nVOLUME /data\n`,
      stdio: ['pipe', 'ignore', 'inherit'],
    });
    await docker.createNetwork({ Name: setupNetwork, Driver: 'bridge', Internal: true });
  }, 120_000);

  afterAll(async () => {
    await docker
      .getNetwork(setupNetwork)
      .remove()
      .catch(() => undefined);
    await docker
      .getImage(IMAGE)
      .remove()
      .catch(() => undefined);
  });

  it('runs hardened and leaves no volume behind', async () => {
    const relay = await startSetupRelay({
      docker,
      name: `${setupNetwork}-relay`,
      runId,
      image: IMAGE,
      botNetwork: 'bridge',
      setupNetwork,
      target: { host: '127.0.0.1', port: 9 },
    });
    let volume: string | undefined;
    try {
      const info = await docker.getContainer(`${setupNetwork}-relay`).inspect();
      expect(info.Config.User).toBe('65534:65534');
      expect(info.Config.Healthcheck).toEqual({ Test: ['NONE'] });
      expect(info.HostConfig.MemorySwap).toBe(info.HostConfig.Memory);
      expect(info.HostConfig.NanoCpus).toBeGreaterThan(0);
      expect(info.HostConfig.Ulimits).toEqual([{ Name: 'nofile', Soft: 1024, Hard: 1024 }]);
      volume = info.Mounts.find((m) => m.Destination === '/data')?.Name;
      expect(volume).toBeTruthy();
      const inside = execFileSync(
        'docker',
        [
          'exec',
          info.Id,
          'cat',
          '/proc/sys/net/ipv4/ip_forward',
          '/proc/sys/net/ipv6/conf/all/disable_ipv6',
        ],
        { encoding: 'utf8' },
      );
      expect(inside.split('\n').slice(0, 2)).toEqual(['0', '1']);
    } finally {
      await relay.close();
    }
    await expect(docker.getContainer(`${setupNetwork}-relay`).inspect()).rejects.toMatchObject({
      statusCode: 404,
    });
    await expect(docker.getVolume(volume!).inspect()).rejects.toMatchObject({ statusCode: 404 });
  }, 60_000);
});
