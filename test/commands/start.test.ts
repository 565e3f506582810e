// `npm start` as an operator runs it: it builds, runs compiled JavaScript with node (no tsx),
// and a SIGTERM to the process it started stops the App.
import { execFile, execFileSync, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseEnv } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  startScriptedModelServer,
  type ScriptedModelServer,
} from '../support/scripted-model-server.js';
import { DEFAULT_SANDBOX_IMAGE } from '../../src/sandbox/docker-sandbox.js';
import { describeDocker } from '../support/docker-engine.js';
import { startFakeGitHubApp, type FakeGitHubApp } from './helpers/fake-github-app.js';

let github: FakeGitHubApp;
let model: ScriptedModelServer;
let work: string;

beforeAll(async () => {
  github = await startFakeGitHubApp();
  model = await startScriptedModelServer();
  work = await mkdtemp(path.join(tmpdir(), 'frognano-start-'));
});
afterAll(async () => {
  await github?.close();
  await model?.close();
  if (work) await rm(work, { recursive: true, force: true });
});

describe('npm start', () => {
  it('builds, starts `node dist/cli.js start`, and stops on SIGTERM', async () => {
    const child = spawn('npm', ['start'], {
      cwd: path.resolve('.'),
      env: {
        // `npm start` loads ./.env, where a user's own App lives after registration; it never
        // overrides a variable that is set, so every documented one is set to its default
        // (the commented-out `# NAME=` ones to empty: unset).
        ...parseEnv(
          readFileSync(path.resolve('.env.example'), 'utf8').replace(
            /^# ([A-Z][A-Z0-9_]*)=.*$/gm,
            '$1=',
          ),
        ),
        PATH: process.env.PATH,
        HOME: process.env.HOME,
        APP_ID: '1',
        PRIVATE_KEY: github.privateKey,
        WEBHOOK_SECRET: 'secret',
        GITHUB_API_URL: github.url,
        FROGNANO_MODEL_URL: model.baseUrl,
        FROGNANO_DATA_DIR: path.join(work, 'data'),
        // An App start reaps the engine's frognano containers: other tests' sandboxes included.
        FROGNANO_SANDBOX: 'local',
        PORT: '0',
        HOST: '127.0.0.1',
      },
    });
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    child.stdout.resume();
    const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
    try {
      const deadline = Date.now() + 150_000;
      while (!/"msg":"frognano-bot started"/.test(stderr) && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
      const startedLine = stderr.split('\n').find((line) => line.includes('frognano-bot started'));
      expect(startedLine, stderr).toBeDefined();
      const { pid, url } = JSON.parse(startedLine as string) as { pid: number; url: string };
      // The App runs in its own node process, from the compiled output.
      const command = await processCommand(pid);
      expect(command).toMatch(/node(\S*)? dist\/cli\.js start$/);
      expect(command).not.toContain('tsx');
      expect(await (await fetch(`${url}/ping`)).text()).toBe('PONG');

      child.kill('SIGTERM');
      await exited;
      expect(await gone(pid, 15_000)).toBe(true);
      expect(stderr).toMatch(/"signal":"SIGTERM".*"msg":"stopping/);
    } finally {
      child.kill('SIGKILL');
    }
  }, 180_000);
});

describe('frognano worker on a data directory another process holds', () => {
  it('refuses with the one line naming the owner, no stack trace, exit 1', async () => {
    const dataDir = path.join(work, 'busy-data');
    const holder = spawn(
      process.execPath,
      [
        '--import',
        'tsx',
        path.resolve('test/queue/lock-holder-child.ts'),
        dataDir,
        'start',
        'intake',
        'worker',
      ],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    try {
      await new Promise<void>((resolve, reject) => {
        holder.stdout.on('data', (c: Buffer) => c.toString().includes('locked') && resolve());
        holder.once('exit', (code) => reject(new Error(`lock holder exited with ${code}`)));
      });
      const result = await new Promise<{ code: number | null; stderr: string }>((resolve) => {
        const child = spawn(process.execPath, [path.resolve('bin/frognano.js'), 'worker'], {
          cwd: work,
          env: {
            PATH: process.env.PATH,
            HOME: process.env.HOME,
            APP_ID: '1',
            PRIVATE_KEY: github.privateKey,
            WEBHOOK_SECRET: 'secret',
            GITHUB_API_URL: github.url,
            FROGNANO_MODEL_URL: model.baseUrl,
            FROGNANO_DATA_DIR: dataDir,
            FROGNANO_SANDBOX: 'local',
          },
        });
        let stderr = '';
        child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
        child.stdout.resume();
        child.once('exit', (code) => resolve({ code, stderr }));
      });
      const lines = result.stderr.split('\n').filter((line) => line && !line.startsWith('{'));
      expect(lines, result.stderr).toEqual([
        expect.stringMatching(
          new RegExp(
            `^frognano: the data directory .* is in use by frognano start \\(pid ${holder.pid} on .*\\) for its runs: stop that process first, or give this one its own FROGNANO_DATA_DIR$`,
          ),
        ),
      ]);
      expect(result.code).toBe(1);
    } finally {
      holder.kill('SIGKILL');
    }
  }, 60_000);
});

describe('frognano worker without the App credentials', () => {
  it('refuses in one line that says what to set, no stack trace', async () => {
    const result = await new Promise<{ code: number | null; stderr: string }>((resolve) => {
      const child = spawn(process.execPath, [path.resolve('bin/frognano.js'), 'worker'], {
        cwd: work,
        env: { PATH: process.env.PATH, HOME: process.env.HOME, FROGNANO_SANDBOX: 'local' },
      });
      let stderr = '';
      child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
      child.stdout.resume();
      child.once('exit', (code) => resolve({ code, stderr }));
    });
    expect(result.stderr).toMatch(
      /^frognano: APP_ID and PRIVATE_KEY \(or PRIVATE_KEY_PATH\) must be set to run workers: .+\n$/,
    );
    expect(result.code).toBe(2);
  }, 60_000);
});

describe('frognano start without credentials in production (the Docker image)', () => {
  it('says in one line that the registration flow is off and what to set', async () => {
    const result = await new Promise<{ code: number | null; stderr: string }>((resolve) => {
      const child = spawn(process.execPath, [path.resolve('bin/frognano.js'), 'start'], {
        cwd: work,
        env: {
          PATH: process.env.PATH,
          HOME: process.env.HOME,
          NODE_ENV: 'production',
          PORT: '0',
          FROGNANO_SANDBOX: 'local',
        },
      });
      let stderr = '';
      child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
      child.stdout.resume();
      child.once('exit', (code) => resolve({ code, stderr }));
    });
    expect(result.stderr).toMatch(
      /^frognano: APP_ID and PRIVATE_KEY \(or PRIVATE_KEY_PATH\) are not set, and NODE_ENV=production turns the registration flow off: .+\n$/,
    );
    expect(result.code).toBe(2);
  }, 60_000);
});

describe('frognano start on a port already in use', () => {
  it('says so in one line (no stack trace), exit 1', async () => {
    const { createServer } = await import('node:net');
    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    const port = (taken.address() as { port: number }).port;
    try {
      const result = await new Promise<{ code: number | null; stderr: string }>((resolve) => {
        const child = spawn(process.execPath, [path.resolve('bin/frognano.js'), 'start'], {
          cwd: work,
          env: {
            PATH: process.env.PATH,
            HOME: process.env.HOME,
            APP_ID: '1',
            PRIVATE_KEY: github.privateKey,
            WEBHOOK_SECRET: 'secret',
            GITHUB_API_URL: github.url,
            FROGNANO_MODEL_URL: model.baseUrl,
            FROGNANO_DATA_DIR: path.join(work, 'port-data'),
            FROGNANO_SANDBOX: 'local',
            PORT: String(port),
            HOST: '127.0.0.1',
          },
        });
        let stderr = '';
        child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
        child.stdout.resume();
        child.once('exit', (code) => resolve({ code, stderr }));
      });
      const lines = result.stderr.split('\n').filter((line) => line && !line.startsWith('{'));
      expect(lines, result.stderr).toEqual([
        `frognano: Port ${port} is already in use. You can define the PORT environment variable to use a different port.`,
      ]);
      expect(result.code).toBe(1);
    } finally {
      taken.close();
    }
  }, 60_000);
});

describeDocker('the .env the registration flow writes, passed by `docker run --env-file`', () => {
  it('keeps its quotes and \\n there, and doctor and start still read the key', async () => {
    const dir = await mkdtemp(path.join(work, 'registered-'));
    const cli = path.resolve('bin/frognano.js');
    const base = { PATH: process.env.PATH, HOME: process.env.HOME, FROGNANO_SANDBOX: 'local' };
    // 1. Registration as a user goes through it: `frognano start` without credentials serves
    //    Probot's flow; GitHub's redirect to /probot/setup?code=… makes Probot convert the code
    //    (the fake answers, as GitHub Enterprise at GHE_HOST) and write .env.
    const registering = spawn(process.execPath, [cli, 'start'], {
      cwd: dir,
      env: {
        ...base,
        NO_SMEE_SETUP: 'true',
        GHE_HOST: new URL(github.url).host,
        GHE_PROTOCOL: 'http',
        PORT: '0',
        HOST: '127.0.0.1',
        FROGNANO_DATA_DIR: path.join(dir, 'registration-data'),
      },
    });
    let regStderr = '';
    registering.stderr.setEncoding('utf8').on('data', (c: string) => (regStderr += c));
    registering.stdout.resume();
    const registered = new Promise((resolve) => registering.once('exit', resolve));
    try {
      const deadline = Date.now() + 60_000;
      while (!regStderr.includes('register the GitHub App') && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      const { url } = JSON.parse(
        regStderr.split('\n').find((line) => line.includes('register the GitHub App')) ?? '{}',
      ) as { url?: string };
      expect(url, regStderr).toBeDefined();
      const setup = await fetch(`${url}/probot/setup?code=a1b2c3`, { redirect: 'manual' });
      expect(setup.status).toBe(302);
    } finally {
      registering.kill('SIGTERM');
      await registered;
    }
    const dotenv = readFileSync(path.join(dir, '.env'), 'utf8');
    expect(dotenv).toMatch(/^PRIVATE_KEY="-----BEGIN RSA PRIVATE KEY-----\\n[^\n]+\\n"$/m);

    // 2. What the App's process sees in a container started with --env-file: the value verbatim.
    const seen = JSON.parse(
      execFileSync(
        'docker',
        [
          'run',
          '--rm',
          '--network',
          'none',
          '--env-file',
          path.join(dir, '.env'),
          DEFAULT_SANDBOX_IMAGE,
          'python3',
          '-c',
          'import json, os; print(json.dumps(dict(os.environ)))',
        ],
        { encoding: 'utf8' },
      ),
    ) as Record<string, string>;
    expect(seen.PRIVATE_KEY).toMatch(/^"-----BEGIN RSA PRIVATE KEY-----\\n.*\\n"$/s);
    const fromEnvFile = Object.fromEntries(
      [...dotenv.matchAll(/^([A-Z_]+)=/gm)].map(([, name]) => [name, seen[name as string]]),
    );
    expect(Object.keys(fromEnvFile)).toEqual(expect.arrayContaining(['APP_ID', 'WEBHOOK_SECRET']));

    // 3. That environment, in a directory without .env (as in the image).
    const runDir = await mkdtemp(path.join(work, 'from-env-file-'));
    const env = {
      ...base,
      ...fromEnvFile,
      GITHUB_API_URL: github.url,
      FROGNANO_MODEL_URL: model.baseUrl,
      FROGNANO_DATA_DIR: path.join(runDir, 'data'),
      PORT: '0',
      HOST: '127.0.0.1',
    };
    const doctor = await new Promise<string>((resolve) =>
      execFile(process.execPath, [cli, 'doctor'], { cwd: runDir, env }, (_error, stdout) =>
        resolve(stdout),
      ),
    );
    expect(doctor).toContain('✓ configuration: every variable is valid\n');
    expect(doctor).toContain(
      `✓ GitHub App: App frognano-test (id 1) answers GET /app at ${github.url}\n`,
    );

    const child = spawn(process.execPath, [cli, 'start'], { cwd: runDir, env });
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (c: string) => (stderr += c));
    child.stdout.resume();
    const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
    try {
      const deadline = Date.now() + 60_000;
      while (!/"msg":"frognano-bot started"/.test(stderr) && child.exitCode === null) {
        if (Date.now() > deadline) break;
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      expect(stderr).toMatch(/"msg":"frognano-bot started"/);
      child.kill('SIGTERM');
      expect(await exited).toBe(0);
    } finally {
      child.kill('SIGKILL');
    }
  }, 180_000);
});

async function processCommand(pid: number): Promise<string> {
  const { readFile } = await import('node:fs/promises');
  return (await readFile(`/proc/${pid}/cmdline`, 'utf8')).split('\0').filter(Boolean).join(' ');
}

async function gone(pid: number, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    try {
      process.kill(pid, 0);
    } catch {
      return true;
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return false;
}
