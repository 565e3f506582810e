// The engine host's addresses as a sibling bot learns them (security review of issue 25): the
// kernel's local-address tables parsed, and against the real engine, the probe container on the
// host's network stack reports this host's own interface addresses.
import { networkInterfaces } from 'node:os';
import type Docker from 'dockerode';
import { describe, expect, it } from 'vitest';
import { connectDocker } from '../../src/sandbox/docker-engine.js';
import { DEFAULT_SANDBOX_IMAGE } from '../../src/sandbox/docker-sandbox-options.js';
import {
  engineHostAddresses,
  forgetEngineHostAddresses,
  hostAddresses,
  parseLocalAddresses,
} from '../../src/sandbox/engine-host-addresses.js';
import { describeDocker, ensureSandboxImage } from '../support/docker-engine.js';

const FIB_TRIE = `Main:
  +-- 0.0.0.0/0 3 0 4
     |-- 0.0.0.0
        /0 universe UNICAST
     +-- 127.0.0.0/8 2 0 2
        +-- 127.0.0.0/31 1 0 0
           |-- 127.0.0.0
              /8 host LOCAL
           |-- 127.0.0.1
              /32 host LOCAL
        |-- 127.255.255.255
           /32 link BROADCAST
        +-- 198.51.100.0/24 2 0 2
              |-- 198.51.100.0
                 /24 link UNICAST
              |-- 198.51.100.9
                 /32 host LOCAL
`;
const IF_INET6 = `00000000000000000000000000000001 01 80 10 80       lo
20010db8000000000000000000000009 04 40 00 80     eth0
fe8000000000000000fc00fffe000001 04 40 20 80     eth0
`;

describe('parseLocalAddresses', () => {
  it('reads the local IPv4 leaves of fib_trie and every if_inet6 address, compressed', () => {
    expect(parseLocalAddresses(FIB_TRIE + IF_INET6.replace(/\n/g, '\r\n'))).toEqual([
      '127.0.0.1',
      '198.51.100.9',
      '2001:db8::9',
      '::1',
      'fe80::fc:ff:fe00:1',
    ]);
  });
});

/** An engine that answers the probe with `output` and knows one container on one network. */
function fakeEngine(output: () => string) {
  const probes: string[] = [];
  const docker = {
    createContainer: async (spec: { HostConfig: { NetworkMode: string } }) => {
      probes.push(spec.HostConfig.NetworkMode);
      return {
        start: async () => undefined,
        wait: async () => ({ StatusCode: 0 }),
        logs: async () => Buffer.from(output()),
        remove: async () => undefined,
      };
    },
    getContainer: () => ({
      inspect: async () => ({ NetworkSettings: { Networks: { bots: { NetworkID: 'n1' } } } }),
    }),
    getNetwork: () => ({
      inspect: async () => ({ IPAM: { Config: [{ Subnet: '198.51.100.0/24' }] } }),
    }),
  };
  return { docker: docker as unknown as Docker, probes };
}

describe('engineHostAddresses', () => {
  it("probes on the host network once per process, with the bot container's subnets", async () => {
    forgetEngineHostAddresses();
    const { docker, probes } = fakeEngine(() => FIB_TRIE);
    const first = await engineHostAddresses(docker, 'bot', 'bot-image');
    expect(first).toEqual({
      addresses: ['127.0.0.1', '198.51.100.9'],
      subnets: ['198.51.100.0/24'],
    });
    expect(await engineHostAddresses(docker, 'bot', 'bot-image')).toEqual(first);
    expect(probes).toEqual(['host']);
  });

  it('fails with the reason when the probe reads nothing, and tries again next time', async () => {
    forgetEngineHostAddresses();
    let output = 'cat: /proc/net/fib_trie: Permission denied';
    const { docker, probes } = fakeEngine(() => output);
    await expect(engineHostAddresses(docker, 'bot', 'bot-image')).rejects.toThrow(
      /could not read the engine host's addresses with bot-image/,
    );
    output = FIB_TRIE;
    expect((await engineHostAddresses(docker, 'bot', 'bot-image')).addresses).toContain(
      '198.51.100.9',
    );
    expect(probes).toHaveLength(2);
  });
});

describeDocker("the engine host's addresses", () => {
  it('a probe on the host network reports the addresses of this host', async () => {
    await ensureSandboxImage();
    const found = await hostAddresses(connectDocker(), DEFAULT_SANDBOX_IMAGE);
    const mine = Object.values(networkInterfaces())
      .flat()
      .filter((info) => info && info.family === 'IPv4')
      .map((info) => info!.address);
    expect(mine.length).toBeGreaterThan(0);
    for (const address of mine) expect(found).toContain(address);
  }, 60_000);
});
