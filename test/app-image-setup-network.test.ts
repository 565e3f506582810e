// Setup's registry-only network when the bot itself runs in the App's image with the engine's
// socket (issue 25): its sandboxes are sibling containers. `frognano env` runs in the App's
// container; the setup container installs from a PEP 503 index through the egress proxy (over
// the setup relay), reaches no other port of the bot's container and nothing of the host, and
// what it tries besides is refused and reported. The image is built offline (test/support/
// app-image.ts) and reused while its inputs are unchanged.
import { execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chownSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { connectDocker } from '../src/sandbox/docker-engine.js';
import { LABEL_SETUP_NETWORK } from '../src/sandbox/setup-network.js';
import { LABEL_SETUP_RELAY } from '../src/sandbox/setup-relay.js';
import { ensureAppImage } from './support/app-image.js';
import { describeDocker, ensureSandboxImage } from './support/docker-engine.js';
import { startPep503Index, type Pep503Index } from './support/pep503-index.js';
import { createPythonRepo } from './support/python-repo.js';

const docker = connectDocker();
const root = mkdtempSync(path.join(tmpdir(), 'app-image-setup-'));
const VENV = '/home/frognano/venv';
const SECOND_PORT = 4555;

function chownTree(dir: string, uid: number): void {
  chownSync(dir, uid, uid);
  for (const entry of readdirSync(dir)) {
    const file = path.join(dir, entry);
    if (statSync(file).isDirectory()) chownTree(file, uid);
    else chownSync(file, uid, uid);
  }
}

/** What setup tries on its own: each line `PROBE <what> reached|failed <why>`. */
function probe(bot: string, gateway: string, indexPort: number): string {
  return [
    'import os, socket, urllib.request',
    'def direct(host, port):',
    '    s = socket.socket(); s.settimeout(3)',
    '    try:',
    '        s.connect((host, port)); return "reached"',
    '    except Exception as e:',
    '        return "failed " + type(e).__name__',
    'def proxied(url):',
    '    try:',
    '        urllib.request.urlopen(url, timeout=10); return "reached"',
    '    except Exception as e:',
    '        return "failed " + str(e)[:120]',
    `print("PROBE bot-second-port", direct("${bot}", ${SECOND_PORT}))`,
    `print("PROBE bot-app-port", direct("${bot}", 3000))`,
    `print("PROBE host-index", direct("${gateway}", ${indexPort}))`,
    'print("PROBE outside", direct("1.1.1.1", 80))',
    `print("PROBE proxied-bot-second-port", proxied("http://${bot}:${SECOND_PORT}/"))`,
    'print("PROBE proxied-example", proxied("https://example.org/"))',
    '',
  ].join('\n');
}

describeDocker(
  'the App’s image with the engine’s socket: setup’s network for sibling sandboxes',
  () => {
    let image: string;
    let index: Pep503Index;
    let gateway: string;
    let bot = '';
    /** Every bot container started (a retry starts another). */
    const bots: string[] = [];
    let botAddress: string;

    beforeAll(async () => {
      await ensureSandboxImage();
      image = await ensureAppImage();
      const bridge = await docker.getNetwork('bridge').inspect();
      // The host's address on the default bridge (its IPAM may name no gateway: the first one).
      const ipam = bridge.IPAM?.Config?.[0] as { Gateway?: string; Subnet: string };
      gateway = ipam.Gateway ?? ipam.Subnet.replace(/\.\d+\/\d+$/, '.1');
      // On the host's bridge address: what the bot's container reaches as a mirror.
      index = await startPep503Index([{ name: 'frogdep', version: '1.2.3' }], {
        listen: gateway,
        urlHost: gateway,
      });
    }, 30 * 60_000);

    afterAll(async () => {
      for (const name of bots)
        execFileSync('docker', ['rm', '-f', '-v', name], { stdio: 'ignore' });
      await index?.close();
      rmSync(root, { recursive: true, force: true });
    });

    it(
      'installs through the proxy over the relay, reaches nothing else of the bot or the host, and reports the refusals',
      async () => {
        const socketGroup = String(statSync('/var/run/docker.sock').gid);
        bot = `frognano-test-app-${randomBytes(4).toString('hex')}`;
        bots.push(bot);
        execFileSync('docker', [
          'run',
          '-d',
          '--name',
          bot,
          '--group-add',
          socketGroup,
          '-v',
          '/var/run/docker.sock:/var/run/docker.sock',
          image,
          // A second service in the bot's container, on every address (as the webhook server is).
          'node',
          '-e',
          `require('http').createServer((q, s) => s.end('second')).listen(${SECOND_PORT}, '0.0.0.0'); setInterval(() => {}, 1 << 30);`,
        ]);
        botAddress = (await docker.getContainer(bot).inspect()).NetworkSettings.Networks.bridge!
          .IPAddress;
        // Without the setup network's isolation the second service is reachable: a sibling on the
        // default bridge gets to it.
        const control = execFileSync(
          'docker',
          [
            'run',
            '--rm',
            '--network',
            'bridge',
            'frognano/sandbox:py3-r2',
            'python3',
            '-c',
            `import urllib.request; print(urllib.request.urlopen("http://${botAddress}:${SECOND_PORT}/", timeout=10).read().decode())`,
          ],
          { encoding: 'utf8' },
        );
        expect(control.trim()).toBe('second');

        const files: Record<string, string> = {
          'probe.py': probe(botAddress, gateway, index.port),
          'requirements.txt': `--trusted-host ${gateway}\nfrogdep\n`,
          'test_dep.py':
            'import frogdep\n\n\ndef test_dep():\n    assert frogdep.VALUE == "1.2.3"\n',
          '.github/frognano.yml': [
            'setup:',
            // The probe never fails setup: its lines are checked below, from the proxy's report.
            '  - python3 probe.py > /tmp/probe.txt 2>&1; cat /tmp/probe.txt; ! grep -q " reached" /tmp/probe.txt',
            `  - python3 -m venv ${VENV} && ${VENV}/bin/pip install --no-cache-dir -r requirements.txt`,
            `test: ${VENV}/bin/python -m pytest -q`,
          ].join('\n'),
        };
        const dir = createPythonRepo(mkdtempSync(path.join(root, 'dep-')), files).dir;
        chownTree(path.dirname(dir), 1000);
        execFileSync('docker', ['cp', path.dirname(dir), `${bot}:/tmp/repo`]);
        const env = spawn(
          'docker',
          [
            'exec',
            '-e',
            `FROGNANO_PIP_INDEX_URL=http://${gateway}:${index.port}/simple`,
            '-e',
            'LOG_LEVEL=info',
            '-w',
            '/tmp',
            bot,
            'node',
            '/app/dist/cli.js',
            'env',
            `/tmp/repo/${path.basename(dir)}`,
            '--json',
          ],
          { stdio: ['ignore', 'pipe', 'pipe'] },
        );
        let stdout = '';
        let stderr = '';
        env.stdout.on('data', (c: Buffer) => (stdout += c.toString('utf8')));
        env.stderr.on('data', (c: Buffer) => (stderr += c.toString('utf8')));
        const code = await new Promise<number | null>((resolve) => env.on('exit', resolve));
        // Log lines (LOG_LEVEL=info) are JSON too: the result is the one with a `source`.
        const line = stdout.split('\n').find((l) => l.startsWith('{"source"')) ?? '';
        expect(line, `exit ${code}\n${stdout}\n${stderr.slice(-4000)}`).toMatch(/^\{/);
        const result = JSON.parse(line) as {
          source: string;
          network: string;
          ok: boolean;
          tests_collected: number;
          blocked: { host: string; port: number; count: number }[];
          allowed_hosts: string[];
        };
        // The sibling path was taken: the proxy came up over a relay.
        expect(`${stdout}${stderr}`).toContain('"sibling":true');
        expect({ code, ok: result.ok }, stderr.slice(-4000)).toEqual({ code: 0, ok: true });
        expect(result.source).toBe('config');
        expect(result.network).toBe('registries');
        expect(result.allowed_hosts).toContain(`${gateway}:${index.port}`);
        expect(index.requests).toEqual(
          expect.arrayContaining(['/simple/frogdep/', '/files/frogdep-1.2.3-py3-none-any.whl']),
        );
        const blocked = Object.fromEntries(
          result.blocked.map((b) => [`${b.host}:${b.port}`, b.count]),
        );
        expect(blocked[`example.org:443`]).toBe(1);
        expect(blocked[`${botAddress}:${SECOND_PORT}`]).toBe(1);
        // Nothing of the run is left: no setup network, no relay.
        const networks = await docker.listNetworks({
          filters: JSON.stringify({ label: [LABEL_SETUP_NETWORK] }),
        });
        expect(networks.filter((n) => n.Name.includes('env-'))).toEqual([]);
        const relays = await docker.listContainers({
          all: true,
          filters: JSON.stringify({ label: [LABEL_SETUP_RELAY] }),
        });
        expect(relays).toEqual([]);
        // The bot's container joined no setup network.
        expect(
          Object.keys((await docker.getContainer(bot).inspect()).NetworkSettings.Networks),
        ).toEqual(['bridge']);
      },
      10 * 60_000,
    );
  },
);
