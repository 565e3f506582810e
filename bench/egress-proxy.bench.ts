// The egress proxy's cost on setup's downloads (issue 25): `pip install` of N wheels from a local
// PEP 503 index, in a sandbox on the plain bridge (`network: open`, straight to the index) against
// one on a setup network (`network: registries`, through the proxy on the host), alternating, in
// the same run. Target: through the proxy at most 1.2x direct.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pino from 'pino';
import {
  assertDockerReachable,
  connectDocker,
  describeDockerEndpoint,
} from '../src/sandbox/docker-engine.js';
import {
  DEFAULT_SANDBOX_IMAGE,
  createDockerSandbox,
  type DockerSandbox,
} from '../src/sandbox/docker-sandbox.js';
import { AllowList } from '../src/sandbox/egress-allow.js';
import { openSetupNetwork } from '../src/sandbox/setup-network.js';
import { startPep503Index } from '../test/support/pep503-index.js';

const TARGET_RATIO = 1.2;
const WHEELS = 12;
const WHEEL_BYTES = 2 * 1024 * 1024;
const ROUNDS = 3;

export default async function run(): Promise<void> {
  const docker = connectDocker();
  try {
    await assertDockerReachable(docker);
    await docker.getImage(DEFAULT_SANDBOX_IMAGE).inspect();
  } catch {
    console.log(
      `egress-proxy: SKIPPED (needs a Docker engine at ${describeDockerEndpoint()} and the image ${DEFAULT_SANDBOX_IMAGE})`,
    );
    return;
  }
  const root = mkdtempSync(path.join(tmpdir(), 'bench-egress-'));
  const log = pino({ level: process.env.BENCH_LOG ?? 'silent' });
  const names = Array.from({ length: WHEELS }, (_, i) => `benchdep${i}`);
  // On every address: the direct sandbox reaches it at the bridge's gateway.
  const index = await startPep503Index(
    names.map((name) => ({ name, version: '1.0', extraBytes: WHEEL_BYTES })),
    { urlHost: '127.0.0.1' },
  );
  const gateway = await bridgeGateway(docker);
  const setupNet = await openSetupNetwork({
    docker,
    runId: `bench-egress-${Date.now()}`,
    allow: new AllowList([`127.0.0.1:${index.port}`]),
    log,
  });
  const sandboxes: DockerSandbox[] = [];
  try {
    const start = async (network: string) => {
      const sandbox = await createDockerSandbox({
        docker,
        runId: `bench-egress-${Date.now()}`,
        network,
        logger: log,
      });
      sandboxes.push(sandbox);
      return sandbox;
    };
    const direct = await start('bridge');
    const proxied = await start(setupNet.name);
    const proxy = setupNet.proxy.url;
    const install = async (
      sandbox: DockerSandbox,
      indexUrl: string,
      env: Record<string, string>,
      i: number,
    ) => {
      const command = `python3 -m pip install --quiet --no-cache-dir --disable-pip-version-check --target /tmp/t${i} --index-url ${indexUrl} --trusted-host ${new URL(indexUrl).hostname} ${names.join(' ')}`;
      const done = await sandbox.exec(command, { env, timeoutMs: 600_000 });
      if (done.exitCode !== 0)
        throw new Error(`pip install failed: ${done.stderr.toString('utf8').slice(-500)}`);
      return done.durationMs;
    };
    const directMs: number[] = [];
    const proxiedMs: number[] = [];
    for (let i = 0; i < ROUNDS; i++) {
      directMs.push(await install(direct, `http://${gateway}:${index.port}/simple`, {}, i));
      proxiedMs.push(
        await install(
          proxied,
          `http://127.0.0.1:${index.port}/simple`,
          { HTTP_PROXY: proxy, HTTPS_PROXY: proxy, http_proxy: proxy, https_proxy: proxy },
          i,
        ),
      );
    }
    const ratio = median(proxiedMs) / median(directMs);
    console.log(
      `pip install of ${WHEELS} wheels (${WHEEL_BYTES / 1024 / 1024} MiB each) from a local index, median of ${ROUNDS}`,
    );
    console.log(`  direct (bridge):        ${fmt(median(directMs))}`);
    console.log(`  through the proxy:      ${fmt(median(proxiedMs))}`);
    console.log(
      `  ratio proxied/direct:   ${ratio.toFixed(2)}x (target <= ${TARGET_RATIO}x) ${ratio <= TARGET_RATIO ? 'OK' : 'OVER TARGET'}`,
    );
  } finally {
    for (const sandbox of sandboxes) await sandbox.dispose().catch(() => undefined);
    await setupNet.close();
    await index.close();
    rmSync(root, { recursive: true, force: true });
  }
}

async function bridgeGateway(docker: ReturnType<typeof connectDocker>): Promise<string> {
  const info = (await docker.getNetwork('bridge').inspect()) as {
    IPAM?: { Config?: { Gateway?: string; Subnet?: string }[] };
  };
  const config = info.IPAM?.Config?.[0];
  // The default bridge often lists no gateway: it is the subnet's first address (docker0's).
  const gateway = config?.Gateway ?? config?.Subnet?.replace(/^(\d+\.\d+\.\d+)\.\d+\/\d+$/, '$1.1');
  if (!gateway) throw new Error('the bridge network has no gateway');
  return gateway;
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

function fmt(ms: number): string {
  return `${(ms / 1000).toFixed(2)}s`;
}
