// `npm start` as an operator runs it: it builds, runs compiled JavaScript with node (no tsx),
// and a SIGTERM to the process it started stops the App.
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  startScriptedModelServer,
  type ScriptedModelServer,
} from '../support/scripted-model-server.js';
import { startFakeGitHubApp, type FakeGitHubApp } from './fake-github-app.js';

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
