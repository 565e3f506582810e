// Automatic setup for a Node project against the real Docker engine and the real npm registry
// (issue 25): a repository with a package-lock.json and no config gets `npm ci` in the sandbox,
// through the bot's egress proxy (network `registries`, the default) to registry.npmjs.org; the
// agent's Bash then has node_modules and no network, and the "after" passes. This machine's
// TLS to the registry is re-signed by a local CA, which is what FROGNANO_SETUP_CA_FILE is for:
// without it `npm ci` ends within seconds and the Environment names the certificate. A yarn
// lockfile in an image without corepack is said so, not guessed past.
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { environmentLines } from '../../../src/github/status/environment-words.js';
import { runPipeline, type PipelineDeps } from '../../../src/runner/run.js';
import type { RunRequest } from '../../../src/runner/run-types.js';
import { connectDocker } from '../../../src/sandbox/docker-engine.js';
import { LABEL_RUN } from '../../../src/sandbox/docker-sandbox.js';
import {
  describeDocker,
  ensureSandboxImage,
  labelledContainers,
} from '../../support/docker-engine.js';
import {
  finalAnswer,
  startScriptedModelServer,
  toolCall,
  type ScriptStep,
} from '../../support/scripted-model-server.js';
import { removeSnapshotImages } from '../../support/snapshot-images.js';

const docker = connectDocker();
const root = mkdtempSync(path.join(tmpdir(), 'auto-setup-node-'));
const CA = '/etc/ssl/certs/ca-certificates.crt';
const repos: string[] = [];

const PACKAGE_JSON = `${JSON.stringify(
  {
    name: 'frogcalc',
    version: '1.0.0',
    private: true,
    scripts: { test: 'node --test' },
    dependencies: { 'is-number': '7.0.0' },
  },
  null,
  2,
)}\n`;

// What `npm install is-number@7.0.0` writes (lockfile v3), the registry's own integrity.
const PACKAGE_LOCK = `${JSON.stringify(
  {
    name: 'frogcalc',
    version: '1.0.0',
    lockfileVersion: 3,
    requires: true,
    packages: {
      '': { name: 'frogcalc', version: '1.0.0', dependencies: { 'is-number': '7.0.0' } },
      'node_modules/is-number': {
        version: '7.0.0',
        resolved: 'https://registry.npmjs.org/is-number/-/is-number-7.0.0.tgz',
        integrity:
          'sha512-41Cifkg6e8TylSpdtTpeLVMqvSBEVzTttHvERD741+pnZ8ANv0004MRL43QKPDlK9cGvNp6NZWZUBlbGXYxxng==',
        engines: { node: '>=0.12.0' },
      },
    },
  },
  null,
  2,
)}\n`;

const CALC = [
  "const isNumber = require('is-number');",
  '',
  'function add(a, b) {',
  "  if (!isNumber(a) || !isNumber(b)) throw new TypeError('numbers only');",
  '  return Number(a) - Number(b);',
  '}',
  '',
  'module.exports = { add };',
  '',
].join('\n');

const CALC_TEST = [
  "const test = require('node:test');",
  "const assert = require('node:assert');",
  "const { add } = require('../calc.js');",
  '',
  "test('adds', () => assert.strictEqual(add(2, '3'), 5));",
  "test('refuses words', () => assert.throws(() => add('two', 3), TypeError));",
  '',
].join('\n');

function git(cwd: string, ...args: string[]): string {
  return execFileSync('git', args, { cwd, encoding: 'utf8' });
}

function createNodeRepo(name: string, files: Record<string, string>): string {
  const dir = path.join(mkdtempSync(path.join(root, `${name}-`)), 'frogcalc');
  for (const [file, text] of Object.entries({
    'package.json': PACKAGE_JSON,
    'calc.js': CALC,
    'test/calc.test.js': CALC_TEST,
    ...files,
  })) {
    mkdirSync(path.dirname(path.join(dir, file)), { recursive: true });
    writeFileSync(path.join(dir, file), text);
  }
  git(dir, 'init', '-q', '-b', 'main');
  git(dir, 'add', '-A');
  git(dir, '-c', 'user.name=t', '-c', 'user.email=t@x', 'commit', '-qm', 'calc');
  repos.push(dir);
  return dir;
}

async function run(
  name: string,
  repo: string,
  env: NodeJS.ProcessEnv,
  script: ScriptStep[] = [finalAnswer('nothing')],
  snapshots = false,
) {
  const server = await startScriptedModelServer({ script });
  const runId = `t-node-${name}-${Date.now()}`;
  const request: RunRequest = {
    runId,
    instanceId: 'fixture/frogcalc#25',
    repo,
    issueText: 'add() subtracts instead of adding: add(2, 3) is -1, it should be 5.',
    sandbox: 'docker',
    outDir: path.join(root, `out-${runId}`),
  };
  const deps: PipelineDeps = {
    modelConfig: { baseUrl: server.baseUrl, maxRetries: 0 },
    docker,
    dataDir: path.join(root, 'data'),
    logger: pino({ level: 'silent' }),
    sandboxLimits: { memoryBytes: 1024 * 1024 * 1024, pidsLimit: 256 },
    snapshots: { enabled: snapshots },
    env: { PATH: process.env.PATH, ...env },
  };
  try {
    const result = await runPipeline(request, deps);
    expect(await labelledContainers(runId)).toEqual([]);
    const networks = await docker.listNetworks({
      filters: JSON.stringify({ label: [`${LABEL_RUN}=${runId}`] }),
    });
    expect(networks.map((n) => n.Name)).toEqual([]);
    return result;
  } finally {
    await server.close();
  }
}

describeDocker('automatic setup for a Node project, from the npm registry', () => {
  beforeAll(async () => {
    await ensureSandboxImage();
  });

  afterAll(async () => {
    await removeSnapshotImages(docker, repos);
    rmSync(root, { recursive: true, force: true });
  });

  it('runs npm ci through the proxy with no config; the agent has node_modules and no network', async () => {
    const repo = createNodeRepo('npm', { 'package-lock.json': PACKAGE_LOCK });
    const result = await run(
      'ci',
      repo,
      { FROGNANO_SETUP_CA_FILE: CA },
      [
        toolCall('Bash', {
          command:
            "ls /sys/class/net; node -e \"console.log('is-number', require('is-number')(5))\"; ls node_modules; npm test 2>&1 | grep -c '^not ok'",
        }),
        toolCall('Edit', {
          file_path: 'calc.js',
          old_string: 'Number(a) - Number(b)',
          new_string: 'Number(a) + Number(b)',
        }),
        finalAnswer('Fixed.'),
      ],
      true,
    );
    expect(result.error).toBeUndefined();
    expect(result.outcome).toBe('completed');
    expect(result.testCommand?.command).toBe('npm test');
    expect(result.environment).toMatchObject({
      source: 'auto',
      ecosystems: ['node'],
      commands: [{ command: 'npm ci', from: 'package-lock.json' }],
      failed: [],
      snapshot: 'miss',
      network: 'registries',
      importErrors: [],
      runnable: true,
    });
    expect(result.egress).toMatchObject({
      mode: 'registries',
      allowedHosts: expect.arrayContaining(['registry.npmjs.org']),
      blocked: [],
    });
    expect(result.setupTail).toMatch(/added 1 package/);
    // The agent's sandbox: loopback only, and what setup installed.
    const seen = readFileSync(result.trajectoryPath!, 'utf8');
    expect(seen).toContain('STDOUT:\\nlo\\nis-number true\\nis-number\\n1\\n');
    expect(result.verifyBefore!.exitCode).not.toBe(0);
    expect(result.verifyAfter).toMatchObject({ exitCode: 0 });
    expect(result.filesChanged).toEqual(['calc.js']);
    expect(JSON.parse(seen).environment).toMatchObject({
      source: 'auto',
      commands: [{ command: 'npm ci', from: 'package-lock.json' }],
      network: 'registries',
      allowed_hosts: expect.arrayContaining(['registry.npmjs.org']),
      blocked: [],
      tests_collected: null,
      snapshot: 'miss',
      runnable: true,
    });
    expect(environmentLines(result)[0]).toMatch(
      /^- Setup: automatic \(node\): `npm ci` \(from `package-lock.json`\) \(\d+(\.\d)? s\)$/,
    );
  }, 300_000);

  it('without the CA file, npm ci ends within seconds and the Environment names the certificate', async () => {
    const repo = createNodeRepo('noca', { 'package-lock.json': PACKAGE_LOCK });
    const result = await run('noca', repo, {});
    // Automatic setup never fails the run: the tests could not run, and why.
    expect(result.error).toBeUndefined();
    expect(result.environment).toMatchObject({
      source: 'auto',
      commands: [],
      runnable: false,
    });
    const reason = result.environment!.failed[0]?.reason ?? '';
    expect(reason).toContain('`npm ci` (package-lock.json) failed with exit code');
    expect(reason).toContain(
      'registry.npmjs.org: certificate not trusted; set FROGNANO_SETUP_CA_FILE',
    );
    expect(result.environment!.problem).toContain(
      'registry.npmjs.org: certificate not trusted; set FROGNANO_SETUP_CA_FILE',
    );
    // Not at the setup time limit: npm gives up on an untrusted certificate at once.
    expect(result.environment!.seconds).toBeLessThan(30);
  }, 300_000);

  it('a yarn lockfile in an image without corepack: the Environment says so', async () => {
    const repo = createNodeRepo('yarn', { 'yarn.lock': '# yarn lockfile v1\n' });
    const result = await run('yarn', repo, { FROGNANO_SETUP_CA_FILE: CA });
    expect(result.error).toBeUndefined();
    expect(result.environment).toMatchObject({ source: 'auto', commands: [], runnable: false });
    expect(result.environment!.failed).toEqual([
      {
        candidate: 'project files',
        reason: expect.stringContaining(
          'yarn.lock: this image has no corepack to run yarn; install yarn in setup: or pick an image that has it',
        ),
      },
    ]);
    expect(environmentLines(result).join('\n')).toContain('this image has no corepack to run yarn');
  }, 300_000);
});
