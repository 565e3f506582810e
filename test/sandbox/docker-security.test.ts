// Security properties of the sandbox, checked against a real Docker engine: what the agent
// could try during the loop (network, credentials, privileges, resource exhaustion).
import { afterAll, beforeAll, expect, it } from 'vitest';
import { connectDocker } from '../../src/sandbox/docker-engine.js';
import {
  createDockerSandbox,
  LABEL_RUN,
  type DockerSandbox,
} from '../../src/sandbox/docker-sandbox.js';
import {
  describeDocker,
  ensureSandboxImage,
  labelledContainers,
  removeLabelledContainers,
  testRunId,
} from '../support/docker-engine.js';

const runId = testRunId('security');
const FAKE_TOKEN = 'ghs_frognanoFakeTokenForTheSecurityTest0123';

/**
 * Tries a TCP connect from inside the sandbox and prints the errno name. It refuses to
 * try while any interface but loopback exists, so no packet can ever leave this machine.
 */
const CONNECT_PROBE = String.raw`
import errno, os, socket, sys
ifaces = sorted(os.listdir("/sys/class/net"))
if ifaces != ["lo"]:
    print("REFUSED: interfaces " + ",".join(ifaces))
    sys.exit(0)
s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
s.settimeout(3)
try:
    s.connect((sys.argv[1], int(sys.argv[2])))
    print("CONNECTED")
except OSError as exc:
    print(errno.errorcode.get(exc.errno, str(exc)))
`;

describeDocker('DockerSandbox security (real Docker)', () => {
  const docker = connectDocker();
  let sandbox: DockerSandbox;
  let bridgeGateway: string;
  const savedToken = process.env.GITHUB_TOKEN;

  beforeAll(async () => {
    await ensureSandboxImage();
    // A credential in the host's environment must not reach the container.
    process.env.GITHUB_TOKEN = FAKE_TOKEN;
    const bridge = await docker.getNetwork('bridge').inspect();
    bridgeGateway = (bridge.IPAM?.Config?.[0]?.Gateway as string | undefined) ?? '172.17.0.1';
    // As in a run: created with a network for setup, then cut before the agent loop.
    sandbox = await createDockerSandbox({
      runId,
      repo: 'security/test',
      network: 'bridge',
      limits: { memoryBytes: 256 * 1024 * 1024, pidsLimit: 128, nanoCpus: 1_000_000_000 },
    });
    await sandbox.disconnectNetwork();
  });

  afterAll(async () => {
    if (savedToken === undefined) delete process.env.GITHUB_TOKEN;
    else process.env.GITHUB_TOKEN = savedToken;
    await sandbox?.dispose();
    await removeLabelledContainers(runId);
  });

  it('has no route out: an outside address and the host bridge fail at once with ENETUNREACH', async () => {
    const routes = await sandbox.exec('ls /sys/class/net; tail -n +2 /proc/net/route | wc -l');
    expect(routes.stdout.toString()).toBe('lo\n0\n');
    await sandbox.writeFile('/tmp/connect_probe.py', Buffer.from(CONNECT_PROBE));
    const outside = await sandbox.exec('python3 /tmp/connect_probe.py 1.1.1.1 80', {
      timeoutMs: 10_000,
    });
    expect(outside.stdout.toString().trim()).toBe('ENETUNREACH');
    const host = await sandbox.exec(`python3 /tmp/connect_probe.py ${bridgeGateway} 2375`, {
      timeoutMs: 10_000,
    });
    expect(host.stdout.toString().trim()).toBe('ENETUNREACH');
  });

  it('carries no credential in any environment, and no docker socket', async () => {
    expect(process.env.GITHUB_TOKEN).toBe(FAKE_TOKEN);
    const env = await sandbox.exec('env; cat /proc/[0-9]*/environ 2>/dev/null | tr "\\0" "\\n"');
    const text = env.stdout.toString();
    expect(text).not.toContain(FAKE_TOKEN);
    expect(text).not.toMatch(/^(GITHUB_TOKEN|GH_TOKEN|DOCKER_HOST|FROGNANO_API_KEY)=/m);
    const names = new Set(
      text
        .split('\n')
        .filter((line) => line.includes('='))
        .map((line) => line.split('=')[0]),
    );
    for (const name of names)
      expect(['PATH', 'HOME', 'LANG', 'HOSTNAME', 'PWD', 'SHLVL', '_', 'OLDPWD']).toContain(name);
    const socket = await sandbox.exec(
      'ls -l /var/run/docker.sock /run/docker.sock 2>&1; find / -xdev -name "docker*.sock" 2>/dev/null | wc -l',
    );
    expect(socket.stdout.toString()).toMatch(
      /No such file or directory[\s\S]*No such file or directory[\s\S]*\n0\n$/,
    );
    const info = await docker.getContainer(sandbox.containerId).inspect();
    expect(info.Mounts.map((m) => m.Source)).not.toContainEqual(
      expect.stringContaining('docker.sock'),
    );
  });

  it('runs as uid 1000 with an empty effective capability set and no new privileges', async () => {
    const result = await sandbox.exec(
      'id -u; id -g; grep -E "^(CapEff|CapPrm|CapBnd|NoNewPrivs):" /proc/self/status',
    );
    expect(result.stdout.toString()).toBe(
      '1000\n1000\nCapPrm:\t0000000000000000\nCapEff:\t0000000000000000\nCapBnd:\t0000000000000000\nNoNewPrivs:\t1\n',
    );
  });

  it('stops a fork bomb at the pids limit and reports it', async () => {
    const bomb = await sandbox.exec(':(){ :|:& };:', { timeoutMs: 5000 });
    expect(bomb.pidsLimitHit).toBe(true);
    expect(bomb.stderr.toString()).toContain('process limit reached');
    const after = await sandbox.exec('ps -e --no-headers | wc -l');
    expect(after.exitCode).toBe(0);
    // init, sleep, the tool helper, this shell and ps: the bomb's processes are gone.
    expect(Number(after.stdout.toString().trim())).toBeLessThan(10);
  });

  it('reports a memory hog as out of memory and keeps working', async () => {
    const hog = await sandbox.exec('python3 -c "b = bytearray(1024 ** 3)"', { timeoutMs: 30_000 });
    expect(hog.exitCode).toBe(-9);
    expect(hog.oomKilled).toBe(true);
    expect(hog.stderr.toString()).toContain('out of memory');
    expect((await sandbox.exec('echo alive')).stdout.toString()).toBe('alive\n');
  });

  it('times out `sleep 9999` and the run goes on', async () => {
    const slept = await sandbox.exec('sleep 9999', { timeoutMs: 2000 });
    expect(slept.timedOut).toBe(true);
    expect(slept.exitCode).toBe(-9);
    const left = await sandbox.exec("ps -eo args= | grep -c '^sleep 9999$' || true");
    expect(left.stdout.toString().trim()).toBe('0');
    expect((await sandbox.readFile('/etc/hostname')).data.length).toBeGreaterThan(0);
  });

  it('leaves no container behind', async () => {
    await sandbox.dispose();
    expect(await labelledContainers(runId)).toEqual([]);
    const ours = await docker.listContainers({
      all: true,
      filters: { label: [`${LABEL_RUN}=${runId}`] },
    });
    expect(ours).toEqual([]);
  });
});
