// The App's own image, tested without building it (its base image needs a registry): the build
// context the real docker CLI sends with .dockerignore (listed by building a FROM-scratch image
// that copies it), and the image's HEALTHCHECK command run against a real `frognano start` and
// `frognano worker`.
import { execFile, execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { copyFileSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { extract } from 'tar-stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeGitHubApp, type FakeGitHubApp } from './commands/helpers/fake-github-app.js';
import { describeDocker } from './support/docker-engine.js';
import {
  startScriptedModelServer,
  type ScriptedModelServer,
} from './support/scripted-model-server.js';

const REPO = path.resolve('.');
const dockerfile = () => readFileSync(path.join(REPO, 'Dockerfile'), 'utf8').replace(/\\\n/g, ' ');

/** Every `COPY` source of the Dockerfile that comes from the build context (not `--from`). */
function copySources(): string[] {
  return dockerfile()
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => /^COPY\s/.test(line) && !/--from=/.test(line))
    .flatMap((line) => line.split(/\s+/).slice(1, -1))
    .filter((source, i, all) => all.indexOf(source) === i);
}

let work: string;
beforeAll(async () => {
  work = await mkdtemp(path.join(tmpdir(), 'frognano-image-'));
});
afterAll(async () => {
  if (work) await rm(work, { recursive: true, force: true });
});

/** The files (path → size) `docker build` sends from `context`, as a COPY sees them. */
async function buildContext(context: string): Promise<Map<string, number>> {
  const tag = `frognano-test/build-context:${randomBytes(6).toString('hex')}`;
  execFileSync('docker', ['build', '-q', '-t', tag, '-f', '-', context], {
    input: 'FROM scratch\nCOPY . /ctx/\n',
    stdio: ['pipe', 'ignore', 'pipe'],
  });
  const container = execFileSync('docker', ['create', tag, '/none'], { encoding: 'utf8' }).trim();
  try {
    const tar = execFileSync('docker', ['export', container], { maxBuffer: 1 << 30 });
    return await listTar(tar);
  } finally {
    execFileSync('docker', ['rm', '-f', container], { stdio: 'ignore' });
    execFileSync('docker', ['rmi', '-f', tag], { stdio: 'ignore' });
  }
}

function listTar(tar: Buffer): Promise<Map<string, number>> {
  return new Promise((resolve, reject) => {
    const files = new Map<string, number>();
    const reader = extract();
    reader.on('entry', (header, stream, next) => {
      if (header.type === 'file' && header.name.startsWith('ctx/')) {
        files.set(header.name.slice('ctx/'.length), header.size ?? 0);
      }
      stream.on('end', next).resume();
    });
    reader.on('finish', () => resolve(files));
    reader.on('error', reject);
    reader.end(tar);
  });
}

function put(root: string, file: string, text = 'x\n'): void {
  mkdirSync(path.dirname(path.join(root, file)), { recursive: true });
  writeFileSync(path.join(root, file), text);
}

describeDocker('the build context (.dockerignore)', () => {
  it('holds what the Dockerfile copies, and no dependencies, history, data or secrets', async () => {
    const context = path.join(work, 'context');
    mkdirSync(context);
    copyFileSync(path.join(REPO, '.dockerignore'), path.join(context, '.dockerignore'));
    const wanted: string[] = [];
    for (const source of copySources()) {
      if (statSync(path.join(REPO, source)).isDirectory()) {
        wanted.push(`${source}/index.ts`, `${source}/deep/er.ts`);
      } else wanted.push(source);
    }
    for (const file of wanted) put(context, file);
    const unwanted = [
      'node_modules/left-pad/index.js',
      '.git/HEAD',
      'data/frognano.sqlite',
      'data/runs/r1/trajectory.json',
      'dist/cli.js',
      'test-output/web/run-page.png',
      'coverage/lcov.info',
      'frognano-out/patch.diff',
      'test/app.test.ts',
      'bench/run.ts',
      '.env',
      '.env.local',
      'frognano.2026-01-01.private-key.pem',
      'src/.env',
      'src/fixtures/app.pem',
      'sandbox/node_modules/x/index.js',
      'bin/frognano.js',
    ];
    for (const file of unwanted) put(context, file);

    const sent = [...(await buildContext(context)).keys()].sort();
    expect(sent).toEqual([...wanted].sort());
  }, 120_000);

  it('sends a small context from this repository, with every tracked file the image needs', async () => {
    const sent = await buildContext(REPO);
    const tracked = execFileSync('git', ['ls-files', ...copySources()], {
      cwd: REPO,
      encoding: 'utf8',
    })
      .split('\n')
      .filter(Boolean);
    expect([...sent.keys()]).toEqual(expect.arrayContaining(tracked));
    // Nothing else: a file sent lies in something the Dockerfile copies (untracked ones too).
    const sources = copySources();
    const stray = [...sent.keys()].filter(
      (file) => !sources.some((source) => file === source || file.startsWith(`${source}/`)),
    );
    expect(stray).toEqual([]);
    const bytes = [...sent.values()].reduce((sum, size) => sum + size, 0);
    console.info(`build context: ${sent.size} files, ${(bytes / 1e6).toFixed(2)} MB`);
    expect(bytes).toBeLessThan(10e6);
  }, 120_000);
});

/** The HEALTHCHECK instruction: its options and its exec-form command. */
function healthcheck(): { options: Record<string, string>; command: string[] } {
  const line = dockerfile()
    .split('\n')
    .find((l) => /^HEALTHCHECK\s/.test(l.trim()));
  expect(line, 'the Dockerfile has a HEALTHCHECK').toBeDefined();
  const match = /^HEALTHCHECK\s+((?:--[a-z-]+=\S+\s+)*)CMD\s+(\[.*\])\s*$/.exec(
    (line as string).trim(),
  );
  expect(match, line).not.toBeNull();
  const options = Object.fromEntries(
    (match?.[1] ?? '')
      .trim()
      .split(/\s+/)
      .filter(Boolean)
      .map((option) => option.slice(2).split('=') as [string, string]),
  );
  return { options, command: JSON.parse(match?.[2] ?? '[]') as string[] };
}

/** Runs the image's health check here: WORKDIR /app is this repository, `node` this node. */
function runHealthcheck(env: NodeJS.ProcessEnv): Promise<{ code: number; stderr: string }> {
  const [program, ...args] = healthcheck().command;
  expect(program).toBe('node');
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      args,
      { cwd: REPO, env: { PATH: process.env.PATH, ...env }, timeout: 30_000 },
      (error, _stdout, stderr) =>
        resolve({ code: error ? (typeof error.code === 'number' ? error.code : 1) : 0, stderr }),
    );
  });
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

describe('the HEALTHCHECK', () => {
  let github: FakeGitHubApp;
  let model: ScriptedModelServer;
  const children: ChildProcess[] = [];
  beforeAll(async () => {
    github = await startFakeGitHubApp();
    model = await startScriptedModelServer();
  });
  afterAll(async () => {
    for (const child of children) child.kill('SIGKILL');
    await github?.close();
    await model?.close();
  });

  /** `frognano <mode>` as the image runs it (HOST=0.0.0.0), until it says it started. */
  async function startApp(mode: string, env: NodeJS.ProcessEnv): Promise<void> {
    const child = spawn(process.execPath, [path.join(REPO, 'bin/frognano.js'), mode], {
      cwd: await mkdtemp(path.join(work, `${mode}-`)),
      env: {
        PATH: process.env.PATH,
        HOME: process.env.HOME,
        APP_ID: '1',
        PRIVATE_KEY: github.privateKey,
        WEBHOOK_SECRET: 'secret',
        GITHUB_API_URL: github.url,
        FROGNANO_MODEL_URL: model.baseUrl,
        FROGNANO_SANDBOX: 'local',
        HOST: '0.0.0.0',
        ...env,
      },
    });
    children.push(child);
    let stderr = '';
    child.stderr?.setEncoding('utf8').on('data', (c: string) => (stderr += c));
    child.stdout?.resume();
    const deadline = Date.now() + 60_000;
    while (!stderr.includes('frognano-bot started') && child.exitCode === null) {
      if (Date.now() > deadline) break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(stderr).toContain('frognano-bot started');
  }

  it('has options Docker accepts, and a start period for a first start that builds', () => {
    const { options } = healthcheck();
    expect(Object.keys(options).sort()).toEqual(
      ['interval', 'retries', 'start-period', 'timeout'].sort(),
    );
    for (const key of ['interval', 'timeout', 'start-period']) {
      expect(options[key]).toMatch(/^\d+(ms|s|m|h)$/);
    }
    expect(options.retries).toMatch(/^\d+$/);
  });

  it('is healthy while `frognano start` answers /ping on PORT', async () => {
    const port = await freePort();
    const dataDir = path.join(work, 'start-data');
    await startApp('start', { PORT: String(port), FROGNANO_DATA_DIR: dataDir });
    expect(await runHealthcheck({ PORT: String(port), HOST: '0.0.0.0' })).toEqual({
      code: 0,
      stderr: '',
    });
  }, 90_000);

  it('is healthy while `frognano worker` answers /ping on FROGNANO_METRICS_PORT', async () => {
    const metricsPort = await freePort();
    const closed = await freePort();
    await startApp('worker', {
      FROGNANO_METRICS_PORT: String(metricsPort),
      FROGNANO_DATA_DIR: path.join(work, 'worker-data'),
    });
    // The image sets PORT=3000 for every command: nothing listens there in a worker's container.
    const env = {
      PORT: String(closed),
      HOST: '0.0.0.0',
      FROGNANO_METRICS_PORT: String(metricsPort),
    };
    expect(await runHealthcheck(env)).toEqual({ code: 0, stderr: '' });
  }, 90_000);

  it('is unhealthy, saying where it asked, when nothing answers', async () => {
    const [a, b] = [await freePort(), await freePort()];
    const result = await runHealthcheck({ PORT: String(a), FROGNANO_METRICS_PORT: String(b) });
    expect(result).toEqual({
      code: 1,
      stderr: `unhealthy: no PONG from GET /ping at 127.0.0.1 on port ${a} or ${b}\n`,
    });
  }, 30_000);
});

/** `docker compose` (the v2 plugin) or Debian's `docker-compose`, whichever is installed. */
function composeCommand(): string[] | undefined {
  for (const command of [['docker', 'compose'], ['docker-compose']]) {
    try {
      execFileSync(command[0] as string, [...command.slice(1), 'version'], { stdio: 'ignore' });
      return command;
    } catch {
      // Not this one.
    }
  }
  return undefined;
}

describe('compose.yaml', () => {
  const text = readFileSync(path.join(REPO, 'compose.yaml'), 'utf8');
  const hint =
    'set DOCKER_GID to the group id of /var/run/docker.sock (stat -c %g /var/run/docker.sock)';

  it('has no default group for the Docker socket: a forgotten DOCKER_GID is an error', () => {
    const uses = [...text.matchAll(/\$\{DOCKER_GID([^}]*)\}/g)].map((m) => m[1]);
    expect(uses.length).toBeGreaterThan(0);
    for (const use of uses) expect(use).toBe(`:?${hint}`);
  });

  const compose = composeCommand();
  it.skipIf(!compose)(
    'stops `compose config` with that line, and takes the group when set',
    async () => {
      const [program, ...args] = compose as string[];
      const dir = await mkdtemp(path.join(work, 'compose-'));
      copyFileSync(path.join(REPO, 'compose.yaml'), path.join(dir, 'compose.yaml'));
      writeFileSync(path.join(dir, '.env'), 'APP_ID=1\n');
      const run = (env: NodeJS.ProcessEnv) =>
        new Promise<{ code: number; stdout: string; stderr: string }>((resolve) =>
          execFile(
            program as string,
            [...args, 'config'],
            { cwd: dir, env: { PATH: process.env.PATH, HOME: process.env.HOME, ...env } },
            (error, stdout, stderr) =>
              resolve({ code: error ? Number(error.code ?? 1) : 0, stdout, stderr }),
          ),
        );
      const unset = await run({});
      expect(unset.code).not.toBe(0);
      expect(unset.stderr).toContain(hint);
      const set = await run({ DOCKER_GID: '4242' });
      expect(set.code, set.stderr).toBe(0);
      expect(set.stdout.match(/group_add:\s*\n\s*- ['"]?4242['"]?\n/g)).toHaveLength(2);
    },
    60_000,
  );
});
