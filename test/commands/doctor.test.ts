// `frognano doctor` and the start-up checks: a fake GitHub on a socket behind Probot's real App
// auth (a real RSA key, signed JWTs), the scripted model server, the real Docker engine.
import { execFile, spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { doctorCommand } from '../../src/commands/doctor.js';
import { SqliteStore } from '../../src/queue/sqlite-store.js';
import { DEFAULT_SANDBOX_IMAGE } from '../../src/sandbox/docker-sandbox.js';
import {
  startScriptedModelServer,
  type ScriptedModelServer,
} from '../support/scripted-model-server.js';
import { describeDocker } from '../support/docker-engine.js';
import {
  newPrivateKey,
  startFakeGitHubApp,
  type FakeGitHubApp,
} from './helpers/fake-github-app.js';

const CLI = path.resolve('bin/frognano.js');

let github: FakeGitHubApp;
let model: ScriptedModelServer;
let work: string;
let closedPort: number;

beforeAll(async () => {
  github = await startFakeGitHubApp();
  model = await startScriptedModelServer();
  // A port nothing listens on (fetch refuses "bad ports" such as 9 before connecting).
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  closedPort = (probe.address() as AddressInfo).port;
  await new Promise((resolve) => probe.close(resolve));
});
afterAll(async () => {
  await github?.close();
  await model?.close();
});
beforeEach(async () => {
  work = await mkdtemp(path.join(tmpdir(), 'frognano-doctor-'));
  github.hookUrl = 'https://bot.example.com/api/github/webhooks';
  github.requests.length = 0;
});
afterEach(async () => {
  if (work) await rm(work, { recursive: true, force: true });
});

/** Everything in order, on the real Docker engine. */
function healthyEnv(): NodeJS.ProcessEnv {
  return {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    APP_ID: '1',
    PRIVATE_KEY: github.privateKey,
    WEBHOOK_SECRET: 'secret',
    GITHUB_API_URL: github.url,
    FROGNANO_MODEL_URL: model.baseUrl,
    FROGNANO_DATA_DIR: path.join(work, 'data'),
  };
}

async function doctor(env: NodeJS.ProcessEnv): Promise<{ code: number; lines: string[] }> {
  const lines: string[] = [];
  const code = await doctorCommand({ stdout: (line) => lines.push(line), env, cwd: work });
  return { code, lines };
}

const lineFor = (lines: string[], check: string) =>
  lines.find((line) => line.slice(2).startsWith(`${check}:`)) ?? `(no line for ${check})`;

describeDocker('frognano doctor', () => {
  it('passes every check when all is in order, one ✓ line each', async () => {
    // The data directory and queue of an App that has started (a fresh one: cli-errors.test.ts).
    SqliteStore.open({ dataDir: path.join(work, 'data'), concurrency: 1 }).close();
    const { code, lines } = await doctor(healthyEnv());
    expect(lines).toEqual([
      '✓ configuration: every variable is valid',
      `✓ GitHub App: App frognano-test (id 1) answers GET /app at ${github.url}`,
      '✓ webhook URL: GitHub delivers webhooks to https://bot.example.com/api/github/webhooks',
      `✓ model endpoint: ${model.baseUrl} serves microsoft/FrogNano-4B-2609`,
      '✓ Docker engine: the engine answers',
      `✓ sandbox image: ${DEFAULT_SANDBOX_IMAGE} is present`,
      expect.stringMatching(/^✓ sandbox runtime: (runsc \(gVisor\)|runc) for the agent: .+$/),
      `✓ data directory: ${path.join(work, 'data')} is writable`,
      `✓ queue: SQLite ${path.join(work, 'data', 'frognano.sqlite')} opens`,
      'ready: nothing blocks runs',
    ]);
    expect(code).toBe(0);
    expect(github.requests).toEqual(['GET /app', 'GET /app/hook/config']);
  });

  it('names a key GitHub refuses, with the fix, and exits 1', async () => {
    const { code, lines } = await doctor({ ...healthyEnv(), PRIVATE_KEY: newPrivateKey() });
    expect(lineFor(lines, 'GitHub App')).toBe(
      `✗ GitHub App: ${github.url} refused the App's JWT (HTTP 401 on GET /app) → fix: check APP_ID and the private key against the App settings (generate a new key there if needed)`,
    );
    expect(lineFor(lines, 'webhook URL')).toBe(
      '- webhook URL: not checked (the GitHub App check failed)',
    );
    // The skipped check is not counted as a second problem.
    expect(lines.at(-1)).toBe('not ready: 1 problem blocks runs');
    expect(code).toBe(1);
  });

  it('names a key OpenSSL cannot read in the configuration line, and does not ask GitHub', async () => {
    const lines = github.privateKey.split('\n');
    const damaged = [...lines.slice(0, 3), ...lines.slice(5)].join('\\n');
    const { code, lines: out } = await doctor({ ...healthyEnv(), PRIVATE_KEY: `"${damaged}"` });
    expect(lineFor(out, 'configuration')).toMatch(
      /^✗ configuration: PRIVATE_KEY is not a PEM key: OpenSSL cannot decode it \(.+\): copy the \.pem file again, or generate a new private key in the App settings → fix: correct these variables in \.env \(see \.env\.example\)$/,
    );
    expect(lineFor(out, 'GitHub App')).toBe(
      '- GitHub App: not checked (the configuration check failed)',
    );
    expect(github.requests).toEqual([]);
    expect(code).toBe(1);
  });

  it('says when no credentials are set', async () => {
    const env = healthyEnv();
    delete env.APP_ID;
    delete env.PRIVATE_KEY;
    const { code, lines } = await doctor(env);
    expect(lineFor(lines, 'GitHub App')).toMatch(
      /^✗ GitHub App: APP_ID, PRIVATE_KEY \(or PRIVATE_KEY_PATH\) and WEBHOOK_SECRET are not set → fix: run `npm start` once to register the App/,
    );
    expect(code).toBe(1);
  });

  it('says how to provide credentials where the registration flow is off (NODE_ENV=production, the image)', async () => {
    const env = { ...healthyEnv(), NODE_ENV: 'production' as const };
    delete env.APP_ID;
    delete env.PRIVATE_KEY;
    const { code, lines } = await doctor(env);
    expect(lineFor(lines, 'GitHub App')).toBe(
      '✗ GitHub App: APP_ID, PRIVATE_KEY (or PRIVATE_KEY_PATH) and WEBHOOK_SECRET are not set → fix: NODE_ENV=production turns the registration flow off: register the App once elsewhere (`npm start` without NODE_ENV writes them to .env) or create it by hand, then pass APP_ID, PRIVATE_KEY and WEBHOOK_SECRET in (e.g. `docker run --env-file .env`)',
    );
    expect(lineFor(lines, 'GitHub App')).not.toContain('run `npm start` once to register');
    expect(code).toBe(1);
  });

  it('names bad variables in the configuration line', async () => {
    const { code, lines } = await doctor({ ...healthyEnv(), FROGNANO_SANDBOX_CPUS: 'many' });
    expect(lineFor(lines, 'configuration')).toBe(
      '✗ configuration: FROGNANO_SANDBOX_CPUS must be a number of CPUs above 0 (got "many") → fix: correct these variables in .env (see .env.example)',
    );
    expect(code).toBe(1);
  });

  it('fails when the App has no webhook URL, unless WEBHOOK_PROXY_URL forwards deliveries', async () => {
    github.hookUrl = '';
    const missing = await doctor(healthyEnv());
    expect(lineFor(missing.lines, 'webhook URL')).toBe(
      '✗ webhook URL: the App has no webhook URL, so no event reaches this server → fix: set it in the App settings to https://<this host>/api/github/webhooks (or set WEBHOOK_PROXY_URL for development)',
    );
    expect(missing.code).toBe(1);

    const proxied = await doctor({ ...healthyEnv(), WEBHOOK_PROXY_URL: 'https://smee.io/abc' });
    expect(lineFor(proxied.lines, 'webhook URL')).toBe(
      '✓ webhook URL: deliveries come through WEBHOOK_PROXY_URL https://smee.io/abc',
    );
    expect(proxied.code).toBe(0);
  });

  it('fails when the endpoint does not serve the configured model, or is down', async () => {
    const wrong = await doctor({ ...healthyEnv(), FROGNANO_MODEL: 'someone/other-model' });
    expect(lineFor(wrong.lines, 'model endpoint')).toBe(
      `✗ model endpoint: model endpoint ${model.baseUrl} does not serve someone/other-model (it serves: microsoft/FrogNano-4B-2609) → fix: configure one of those models or serve someone/other-model there`,
    );
    expect(wrong.code).toBe(1);

    const down = await doctor({
      ...healthyEnv(),
      FROGNANO_MODEL_URL: `http://127.0.0.1:${closedPort}/v1`,
    });
    expect(lineFor(down.lines, 'model endpoint')).toMatch(
      new RegExp(
        `^✗ model endpoint: model endpoint http://127\\.0\\.0\\.1:${closedPort}/v1 is unreachable \\(ECONNREFUSED\\) → fix: start an OpenAI-compatible server there first`,
      ),
    );
    expect(down.code).toBe(1);
  });

  it('fails when the Docker engine does not answer', async () => {
    const { code, lines } = await doctor({
      ...healthyEnv(),
      DOCKER_HOST: `tcp://127.0.0.1:${closedPort}`,
    });
    expect(lineFor(lines, 'Docker engine')).toMatch(
      new RegExp(
        `^✗ Docker engine: no Docker engine at DOCKER_HOST=tcp://127\\.0\\.0\\.1:${closedPort} \\(.+\\) → fix: start one `,
      ),
    );
    expect(lineFor(lines, 'sandbox image')).toBe(
      '- sandbox image: not checked (the Docker engine check failed)',
    );
    expect(code).toBe(1);
  });

  it('says which runtime the agent gets and why; a runtime the engine lacks fails in one line', async () => {
    const runc = await doctor({ ...healthyEnv(), FROGNANO_SANDBOX_RUNTIME: 'runc' });
    expect(lineFor(runc.lines, 'sandbox runtime')).toBe(
      '✓ sandbox runtime: runc for the agent: FROGNANO_SANDBOX_RUNTIME=runc opts out of gVisor',
    );
    const missing = await doctor({ ...healthyEnv(), FROGNANO_SANDBOX_RUNTIME: 'no-such-rt' });
    expect(lineFor(missing.lines, 'sandbox runtime')).toMatch(
      /^✗ sandbox runtime: FROGNANO_SANDBOX_RUNTIME=no-such-rt: the Docker engine offers no such runtime \(it has .*runc.*\) → fix: register it in \/etc\/docker\/daemon\.json or unset the variable$/,
    );
    expect(missing.code).toBe(1);
  });

  it('fails on a missing custom image; a missing default image only warns (it builds itself)', async () => {
    const custom = await doctor({
      ...healthyEnv(),
      FROGNANO_SANDBOX_IMAGE: 'frognano-test/not-built:nope',
    });
    expect(lineFor(custom.lines, 'sandbox image')).toBe(
      `✗ sandbox image: frognano-test/not-built:nope (FROGNANO_SANDBOX_IMAGE) is missing → fix: pull or build frognano-test/not-built:nope, or unset FROGNANO_SANDBOX_IMAGE to use ${DEFAULT_SANDBOX_IMAGE}`,
    );
    expect(custom.code).toBe(1);
  });

  it('fails when the data directory cannot be written, and then does not check the queue', async () => {
    const file = path.join(work, 'a-file');
    await writeFile(file, '');
    const { code, lines } = await doctor({
      ...healthyEnv(),
      FROGNANO_DATA_DIR: path.join(file, 'data'),
    });
    // The fix fits the cause: a file stands where a directory should be.
    expect(lineFor(lines, 'data directory')).toBe(
      `✗ data directory: ${path.join(file, 'data')} is not writable (ENOTDIR) → fix: ${file} is a file, not a directory: point FROGNANO_DATA_DIR at a directory`,
    );
    // The queue lives in that directory: one problem, one line (not "move the file away").
    expect(lineFor(lines, 'queue')).toBe('- queue: not checked (the data directory check failed)');
    expect(lines.at(-1)).toBe('not ready: 1 problem blocks runs');
    expect(code).toBe(1);
  });

  it('is the `frognano doctor` command: lines on stdout, exit code 1 on a blocking failure', async () => {
    github.hookUrl = '';
    const run = await runCli(['doctor'], healthyEnv());
    expect(run.stdout).toContain('✓ GitHub App: App frognano-test (id 1)');
    expect(run.stdout).toContain('✗ webhook URL: the App has no webhook URL');
    expect(run.code).toBe(1);
  });
});

describe('npm start (frognano start)', () => {
  // FROGNANO_SANDBOX=local: an App start reaps the engine's frognano containers, which would
  // include other test files' sandboxes.
  const startEnv = () => ({
    ...healthyEnv(),
    FROGNANO_SANDBOX: 'local',
    PORT: '0',
    HOST: '127.0.0.1',
  });

  it('refuses to start on a blocking failure, printing the doctor line', async () => {
    const run = await runCli(['start'], { ...startEnv(), PRIVATE_KEY: newPrivateKey() });
    expect(run.stderr).toContain(
      `✗ GitHub App: ${github.url} refused the App's JWT (HTTP 401 on GET /app) → fix: check APP_ID`,
    );
    expect(run.stderr).not.toContain('frognano-bot started');
    expect(run.code).toBe(1);
  });

  it('starts with the model down (a warning), answers GET /ping, and stops on SIGTERM', async () => {
    const child = spawn(process.execPath, [CLI, 'start'], {
      env: { ...startEnv(), FROGNANO_MODEL_URL: `http://127.0.0.1:${closedPort}/v1` },
      cwd: work,
    });
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
    try {
      const started = await waitFor(() => /"msg":"frognano-bot started"/.test(stderr), 45_000);
      expect(started, stderr).toBe(true);
      const warning = stderr.split('\n').find((line) => line.includes('start-up check failed'));
      expect(JSON.parse(warning ?? '{}')).toMatchObject({
        level: 40,
        check: 'model endpoint',
        problem: expect.stringContaining('is unreachable (ECONNREFUSED)'),
      });
      const url = (/"url":"(http:[^"]+)"/.exec(stderr) ?? [])[1];
      const ping = await fetch(`${url}/ping`);
      expect(ping.status).toBe(200);
      expect(await ping.text()).toBe('PONG');

      child.kill('SIGTERM');
      expect(await exited).toBe(0);
    } finally {
      child.kill('SIGKILL');
    }
  }, 60_000);
});

async function waitFor(condition: () => boolean, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (condition()) return true;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return condition();
}

interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
}

function runCli(args: string[], env: NodeJS.ProcessEnv): Promise<CliRun> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [CLI, ...args],
      { env, cwd: work, timeout: 60_000 },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
        resolve({ code, stdout, stderr });
      },
    );
  });
}
