// Setup's registry-only network against the real Docker engine (issue 25): setup installs from a
// mirror on the bot's host and from the npm registry through the egress proxy, everything else
// is refused and counted, a refusal or an untrusted certificate ends setup at once with the
// reason, the agent has no network, and no network of ours outlives the run.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { runPipeline, type PipelineDeps } from '../../src/runner/run.js';
import type { RunRequest } from '../../src/runner/run-types.js';
import { connectDocker } from '../../src/sandbox/docker-engine.js';
import { LABEL_RUN, createDockerSandbox } from '../../src/sandbox/docker-sandbox.js';
import { AllowList } from '../../src/sandbox/egress-allow.js';
import { openSetupNetwork } from '../../src/sandbox/setup-network.js';
import {
  describeDocker,
  ensureSandboxImage,
  labelledContainers,
} from '../support/docker-engine.js';
import { startPep503Index, type Pep503Index } from '../support/pep503-index.js';
import { ISSUE_TEXT, createPythonRepo } from '../support/python-repo.js';
import {
  finalAnswer,
  startScriptedModelServer,
  toolCall,
  type ScriptStep,
} from '../support/scripted-model-server.js';

const docker = connectDocker();
const root = mkdtempSync(path.join(tmpdir(), 'setup-net-'));
const VENV = '/home/frognano/venv';
const CA = '/etc/ssl/certs/ca-certificates.crt';

async function networksOf(runId: string): Promise<string[]> {
  const networks = await docker.listNetworks({
    filters: JSON.stringify({ label: [`${LABEL_RUN}=${runId}`] }),
  });
  return networks.map((n) => n.Name);
}

async function run(
  name: string,
  yml: string,
  env: NodeJS.ProcessEnv,
  script: ScriptStep[] = [],
): Promise<{ result: Awaited<ReturnType<typeof runPipeline>>; runId: string; chats: number }> {
  const repo = createPythonRepo(mkdtempSync(path.join(root, `${name}-`)), {
    '.github/frognano.yml': yml,
  });
  const server = await startScriptedModelServer({ script });
  const runId = `t-${name}-${Date.now()}`;
  const request: RunRequest = {
    runId,
    instanceId: 'fixture/calc#7',
    repo: repo.dir,
    issueText: ISSUE_TEXT,
    sandbox: 'docker',
    outDir: path.join(root, `out-${name}`),
  };
  const deps: PipelineDeps = {
    modelConfig: { baseUrl: server.baseUrl, maxRetries: 0 },
    docker,
    dataDir: path.join(root, 'data'),
    logger: pino({ level: 'silent' }),
    sandboxLimits: { memoryBytes: 1024 * 1024 * 1024, pidsLimit: 256 },
    snapshots: { enabled: false },
    env: { PATH: process.env.PATH, ...env },
  };
  try {
    const result = await runPipeline(request, deps);
    return { result, runId, chats: server.chatRequests.length };
  } finally {
    await server.close();
  }
}

describeDocker("setup's registry-only network", () => {
  let index: Pep503Index;
  let hostService: Server;
  let hostPort: number;
  let hostHits = 0;

  beforeAll(async () => {
    await ensureSandboxImage();
    index = await startPep503Index([{ name: 'frogdep', version: '1.2.3' }], {
      listen: '127.0.0.1',
      urlHost: '127.0.0.1',
    });
    // A service on every address of the host: setup must not reach it past the proxy.
    hostService = createServer((_req, res) => res.end('host service'));
    hostService.on('connection', () => hostHits++);
    await new Promise<void>((resolve) => hostService.listen(0, '0.0.0.0', resolve));
    hostPort = (hostService.address() as AddressInfo).port;
  });

  afterAll(async () => {
    await index?.close();
    hostService?.close();
    rmSync(root, { recursive: true, force: true });
  });

  it('installs from a mirror on the bot host through the proxy; the agent then has no network', async () => {
    const { result, runId } = await run(
      'pip',
      [
        'setup:',
        `  - python3 -m venv ${VENV} && ${VENV}/bin/pip install --no-cache-dir frogdep`,
        `  - ${VENV}/bin/python -c "import frogdep; print('frogdep', frogdep.VALUE)"`,
        // IPv6 off in setup's container: no address, none to come (the firewall is IPv4's).
        '  - echo "v6 off=$(cat /proc/sys/net/ipv6/conf/all/disable_ipv6) addresses=$(cat /proc/net/if_inet6 2>/dev/null | wc -l)"',
      ].join('\n'),
      { FROGNANO_PIP_INDEX_URL: index.url },
      [
        // The venv setup made is the agent's plain python3 (README's venv example).
        toolCall('Bash', {
          command: 'ls /sys/class/net; python3 -c "import frogdep; print(frogdep.VALUE)"',
        }),
        finalAnswer('ok'),
      ],
    );
    expect(result.error).toBeUndefined();
    expect(result.setupTail).toContain('frogdep 1.2.3');
    expect(result.setupTail).toContain('v6 off=1 addresses=0');
    expect(index.requests).toEqual(
      expect.arrayContaining(['/simple/frogdep/', '/files/frogdep-1.2.3-py3-none-any.whl']),
    );
    expect(result.egress).toEqual({
      mode: 'registries',
      allowedHosts: [
        `127.0.0.1:${index.port}`,
        'files.pythonhosted.org',
        'pypi.org',
        'registry.npmjs.org',
      ],
      blocked: [],
    });
    // The agent's sandbox: loopback only, and what setup installed.
    expect(readFileSync(result.trajectoryPath!, 'utf8')).toContain('STDOUT:\\nlo\\n1.2.3\\n');
    expect(await networksOf(runId)).toEqual([]);
    expect(await labelledContainers(runId)).toEqual([]);
  });

  it('is IPv4 only: the network has no IPv6, the setup container turns it off', async () => {
    const runId = `t-v4-${Date.now()}`;
    const net = await openSetupNetwork({
      docker,
      runId,
      allow: new AllowList([]),
      log: pino({ level: 'silent' }),
      selfContainer: null,
    });
    try {
      expect((await docker.getNetwork(net.name).inspect()).EnableIPv6).toBe(false);
      const sandbox = await createDockerSandbox({
        docker,
        runId,
        repo: 'v4/only',
        network: net.name,
        limits: { memoryBytes: 256 * 1024 * 1024, pidsLimit: 64 },
      });
      try {
        const info = await docker.getContainer(sandbox.containerId).inspect();
        expect(info.HostConfig.Sysctls).toEqual({ 'net.ipv6.conf.all.disable_ipv6': '1' });
        const v6 = await sandbox.exec(
          'cat /proc/sys/net/ipv6/conf/all/disable_ipv6; cat /proc/net/if_inet6 2>/dev/null | wc -l',
        );
        expect(v6.stdout.toString()).toBe('1\n0\n');
      } finally {
        await sandbox.dispose();
      }
    } finally {
      await net.close();
    }
    expect(await networksOf(runId)).toEqual([]);
  });

  it('refuses and counts every other destination, and ends setup at once naming the host', async () => {
    const probe = [
      'import socket, urllib.request',
      'def get(url):',
      '    try:',
      '        urllib.request.urlopen(url, timeout=10)',
      "        return 'reached'",
      '    except Exception as e:',
      '        return type(e).__name__ + ": " + str(e)[:200]',
      "for url in ['http://169.254.169.254/latest/meta-data/', 'http://10.0.0.1/', 'http://127.0.0.1:6379/', 'https://example.org/', 'https://example.org/']:",
      "    print('PROXIED', url, get(url))",
      'import os',
      "gw = os.environ['HTTP_PROXY'].split('//')[1].split(':')[0]",
      `for host, port in [(gw, ${hostPort}), ('1.1.1.1', 80)]:`,
      '    s = socket.socket(); s.settimeout(3)',
      "    try: s.connect((host, port)); print('DIRECT', host, port, 'reached')",
      "    except Exception as e: print('DIRECT', host, port, 'failed', type(e).__name__)",
      // Left running past setup's failure: it must never reach the host while setup comes down.
      'if os.fork() == 0:',
      '    os.setsid()',
      '    for fd in (0, 1, 2): os.close(fd)',
      '    while True:',
      '        s = socket.socket(); s.settimeout(0.01)',
      `        try: s.connect((gw, ${hostPort}))`,
      '        except Exception: pass',
      '        s.close()',
    ].join('\n');
    const { result, runId, chats } = await run(
      'refuse',
      [
        'network_allow: ["169.254.169.254:80", "10.0.0.1:80"]',
        'setup:',
        `  - "python3 - <<'EOF'\\n${probe.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n')}\\nEOF"`,
        `  - python3 -m venv ${VENV} && ${VENV}/bin/pip install --index-url https://example.org/simple frogdep`,
      ].join('\n'),
      {},
    );
    expect(result.outcome).toBe('setup_failed');
    expect(chats).toBe(0);
    expect(result.error).toContain('setup command 2');
    expect(result.error).toContain(
      'example.org:443 refused by the setup network; add it to network_allow',
    );
    const tail = result.setupTail ?? '';
    expect(tail).not.toMatch(/reached/);
    expect(tail).toContain('169.254.169.254:80 refused by the setup network (link-local address)');
    expect(tail).toContain(`DIRECT 1.1.1.1 80 failed`);
    expect(tail).toMatch(new RegExp(`DIRECT \\S+ ${hostPort} failed`));
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(hostHits).toBe(0);
    const blocked = Object.fromEntries(
      (result.egress?.blocked ?? []).map((b) => [`${b.host}:${b.port}`, [b.count, b.reason]]),
    );
    expect(blocked['169.254.169.254:80']).toEqual([1, 'link-local address']);
    expect(blocked['10.0.0.1:80']).toEqual([1, 'private address']);
    expect(blocked['127.0.0.1:6379']).toEqual([1, 'not allowed']);
    expect(blocked['example.org:443']?.[1]).toBe('not allowed');
    // Twice by the probe, at least once by pip (one retry at most: PIP_RETRIES=1).
    expect(blocked['example.org:443']?.[0]).toBeGreaterThanOrEqual(3);
    expect(blocked['example.org:443']?.[0]).toBeLessThanOrEqual(5);
    expect(await networksOf(runId)).toEqual([]);
    expect(await labelledContainers(runId)).toEqual([]);
  });

  it('installs from the npm registry through the proxy with the operator CA, and names an untrusted one', async () => {
    const setup =
      'setup: mkdir -p /tmp/n && cd /tmp/n && npm install --no-audit --no-fund is-number && node -e "console.log(require(\'is-number\')(5))"';
    const trusted = await run('npm', setup, { FROGNANO_SETUP_CA_FILE: CA }, [finalAnswer('ok')]);
    expect(trusted.result.error).toBeUndefined();
    expect(trusted.result.setupTail).toContain('true');
    expect(trusted.result.egress?.blocked).toEqual([]);

    const untrusted = await run('npm-noca', setup, {});
    expect(untrusted.result.outcome).toBe('setup_failed');
    expect(untrusted.result.error).toContain(
      'registry.npmjs.org: certificate not trusted; set FROGNANO_SETUP_CA_FILE',
    );
    expect(await networksOf(untrusted.runId)).toEqual([]);
  });
});
