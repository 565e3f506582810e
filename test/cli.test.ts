// The `frognano` command's errors as an operator meets them, through the real CLI in a child
// process: every one is one line (no stack trace), a reader that leaves the pipe early ends the
// output quietly, and the read-only commands (doctor, runs) leave the data directory as it was.
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { SqliteStore } from '../src/queue/sqlite-store.js';
import {
  startScriptedModelServer,
  type ScriptedModelServer,
} from './support/scripted-model-server.js';
import { startFakeGitHubApp, type FakeGitHubApp } from './commands/helpers/fake-github-app.js';

const CLI = path.resolve('bin/frognano.js');

let github: FakeGitHubApp;
let model: ScriptedModelServer;
let root: string;
let work: string;

beforeAll(async () => {
  github = await startFakeGitHubApp();
  model = await startScriptedModelServer();
  root = await mkdtemp(path.join(tmpdir(), 'frognano-cli-errors-'));
});
afterAll(async () => {
  await github?.close();
  await model?.close();
  if (root) await rm(root, { recursive: true, force: true });
});
beforeEach(async () => {
  work = await mkdtemp(path.join(root, 'case-'));
});

interface CliRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** The CLI in `work`, with only `env` (and PATH, HOME); `closeStdout`: the reader leaves at once. */
function runCli(
  args: string[],
  env: NodeJS.ProcessEnv,
  options: { closeStdout?: boolean } = {},
): Promise<CliRun> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [CLI, ...args], {
      cwd: work,
      env: { PATH: process.env.PATH, HOME: process.env.HOME, ...env },
    });
    let stdout = '';
    let stderr = '';
    if (options.closeStdout) child.stdout.destroy();
    else child.stdout.setEncoding('utf8').on('data', (c: string) => (stdout += c));
    child.stderr.setEncoding('utf8').on('data', (c: string) => (stderr += c));
    child.once('exit', (code) => resolve({ code, stdout, stderr }));
  });
}

/** The lines a person reads on stderr (the JSON log lines are the logger's). */
const humanLines = (stderr: string) =>
  stderr.split('\n').filter((line) => line !== '' && !line.startsWith('{'));

function appEnv(): NodeJS.ProcessEnv {
  return {
    APP_ID: '1',
    PRIVATE_KEY: github.privateKey,
    WEBHOOK_SECRET: 'secret',
    GITHUB_API_URL: github.url,
    FROGNANO_MODEL_URL: model.baseUrl,
    FROGNANO_DATA_DIR: path.join(work, 'data'),
    FROGNANO_SANDBOX: 'local',
  };
}

describe('a second frognano worker on a host whose metrics port is taken', () => {
  let taken: Server;
  let port: number;
  beforeAll(async () => {
    // What the first worker holds: the port, on every interface (the worker's default).
    taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, resolve));
    port = (taken.address() as { port: number }).port;
  });
  afterAll(() => new Promise<void>((resolve) => taken.close(() => resolve())));

  it('refuses in one line that names FROGNANO_METRICS_PORT, no stack trace, exit 1', async () => {
    const run = await runCli(['worker'], { ...appEnv(), FROGNANO_METRICS_PORT: String(port) });
    expect(humanLines(run.stderr), run.stderr).toEqual([
      `frognano: cannot serve metrics on port ${port} (EADDRINUSE: another process, perhaps another frognano worker, listens there): set FROGNANO_METRICS_PORT to a free port (one per worker on a host), or 0 to turn the metrics server off`,
    ]);
    expect(run.code).toBe(1);
  }, 180_000);
});

describe('a bad LOG_LEVEL', () => {
  const line =
    'frognano: LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent (got "loud")\n';

  it.each([
    [['start']],
    [['worker']],
    [['doctor']],
    [['reap']],
    [['solve', '--repo', '.', '--issue', 'x']],
  ])(
    'frognano %j says so in one line, exit 2',
    async (args) => {
      // Probot types LOG_LEVEL in ProcessEnv; an operator's environment holds any string.
      const env = { LOG_LEVEL: 'loud', FROGNANO_SANDBOX: 'local' } as Record<string, string>;
      const run = await runCli(args, env);
      expect(run.stderr).toBe(line);
      expect(run.code).toBe(2);
    },
    60_000,
  );
});

describe('bad usage', () => {
  it.each([
    [['config', 'validate', '--jsn'], "unknown option '--jsn' (Did you mean --json?)"],
    [
      ['config', 'validate', 'a', 'b'],
      "too many arguments for 'validate'. Expected 1 argument but got 2.",
    ],
    [['config', 'show', '--repo'], "option '--repo <dir>' argument missing"],
    [['config', 'frob'], "unknown command 'frob'"],
    [['action', '--x'], "unknown option '--x'"],
  ])(
    'frognano %j says what is wrong and where help is in one line, exit 2',
    async (args, what) => {
      const run = await runCli(args, {});
      expect(run).toEqual({
        code: 2,
        stdout: '',
        stderr: `frognano: ${what} (run with --help for usage)\n`,
      });
    },
    60_000,
  );
});

describe('a reader that leaves the pipe early (`frognano doctor | head -1`)', () => {
  it('ends doctor quietly, with the exit code of its checks', async () => {
    const run = await runCli(['doctor'], {}, { closeStdout: true });
    expect(run.stderr).toBe('');
    // No credentials: "not ready", as with the reader still there.
    expect(run.code).toBe(1);
  }, 180_000);

  it('ends --version and --help quietly, exit 0', async () => {
    for (const args of [['--version'], ['--help'], ['runs', '--help']]) {
      const run = await runCli(args, {}, { closeStdout: true });
      expect(run.stderr, args.join(' ')).toBe('');
      expect(run.code, args.join(' ')).toBe(0);
    }
  }, 180_000);
});

/** Every file under `dir` with its bytes' hash: what a read-only command must leave alone. */
function tree(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (at: string) => {
    for (const entry of readdirSync(at, { withFileTypes: true })) {
      const file = path.join(at, entry.name);
      if (entry.isDirectory()) walk(file);
      else
        out[path.relative(dir, file)] = createHash('sha256')
          .update(readFileSync(file))
          .digest('hex');
    }
  };
  walk(dir);
  return out;
}

describe('read-only commands write no state', () => {
  it('doctor creates no data directory and no queue, so `runs` answers the same after it', async () => {
    const env = { FROGNANO_DATA_DIR: path.join(work, 'data') };
    const before = await runCli(['runs'], env);
    expect(before.stderr).toMatch(/^frognano: no run queue at .*frognano\.sqlite: /);
    const doctor = await runCli(['doctor'], { ...appEnv(), ...env });
    expect(doctor.stdout).toContain(
      `✓ data directory: ${path.join(work, 'data')} does not exist yet: the first start creates it (${work} is writable)\n`,
    );
    expect(doctor.stdout).toContain(
      `✓ queue: SQLite ${path.join(work, 'data', 'frognano.sqlite')} does not exist yet: the first start creates it\n`,
    );
    expect(readdirSync(work)).toEqual([]);
    const after = await runCli(['runs'], env);
    expect(after).toEqual(before);
  }, 180_000);

  it('doctor and runs leave an existing queue as it was (no migration, no pruning)', async () => {
    const dataDir = path.join(work, 'data');
    const queue = SqliteStore.open({ dataDir, concurrency: 1 });
    queue.recordDelivery('old-delivery', 'issues', { action: 'labeled' });
    queue.close();
    // A delivery recorded long ago: the App prunes it at its next start, a listing must not.
    const db = new Database(path.join(dataDir, 'frognano.sqlite'));
    db.prepare(`UPDATE deliveries SET state = 'done', received_at = 0`).run();
    db.close();
    const files = tree(dataDir);
    const mtime = statSync(path.join(dataDir, 'frognano.sqlite')).mtimeMs;

    const env = { ...appEnv(), FROGNANO_DATA_DIR: dataDir };
    const doctor = await runCli(['doctor'], env);
    expect(doctor.stdout).toContain(`✓ data directory: ${dataDir} is writable\n`);
    expect(doctor.stdout).toContain(
      `✓ queue: SQLite ${path.join(dataDir, 'frognano.sqlite')} opens\n`,
    );
    const runs = await runCli(['runs'], env);
    expect(runs.stdout).toBe('queue: 0 running, 0 queued\nno runs\n');
    expect(runs.code).toBe(0);
    const show = await runCli(['runs', 'show', 'abcd'], env);
    expect(show.stderr).toBe('frognano: no run abcd: see `frognano runs` for the ids\n');

    // SQLite's shared-memory index and empty log, which any reader of a WAL file leaves, aside.
    const now = Object.fromEntries(
      Object.entries(tree(dataDir)).filter(([name]) => !/-(shm|wal)$/.test(name)),
    );
    expect(now).toEqual(files);
    expect(statSync(path.join(dataDir, 'frognano.sqlite')).mtimeMs).toBe(mtime);
    const check = new Database(path.join(dataDir, 'frognano.sqlite'), { readonly: true });
    expect(check.prepare(`SELECT delivery_id FROM deliveries`).all()).toEqual([
      { delivery_id: 'old-delivery' },
    ]);
    check.close();
  }, 180_000);
});

describe('failures no command foresaw', () => {
  it('are one line too; LOG_LEVEL=debug adds the stack trace', async () => {
    const file = path.join(work, 'a-file');
    writeFileSync(file, '');
    // reap's data directory lies under a file: node's own error, not one of ours.
    const env = { FROGNANO_DATA_DIR: path.join(file, 'data'), FROGNANO_SANDBOX: 'local' };
    const run = await runCli(['reap'], env);
    expect(run.stderr).toMatch(
      /^frognano: ENOTDIR: not a directory, .+ \(unexpected: LOG_LEVEL=debug shows the stack trace\)\n$/,
    );
    expect(run.code).toBe(2);
    const debug = await runCli(['reap'], { ...env, LOG_LEVEL: 'debug' });
    expect(debug.stderr).toMatch(/^frognano: Error: ENOTDIR: not a directory, .+\n\s+at /);
  }, 180_000);

  it('runs names a data directory whose queue file is no SQLite database', async () => {
    mkdirSync(path.join(work, 'data'));
    writeFileSync(path.join(work, 'data', 'frognano.sqlite'), 'not a database\n');
    const run = await runCli(['runs'], { FROGNANO_DATA_DIR: path.join(work, 'data') });
    expect(run.stderr).toBe(
      `frognano: cannot read the run queue ${path.join(work, 'data', 'frognano.sqlite')} (file is not a database): set FROGNANO_DATA_DIR to the App's data directory\n`,
    );
    expect(run.code).toBe(2);
  }, 180_000);
});

describe('frognano solve --sandbox local in a GitHub Actions job', () => {
  // The model's commands would run next to this process and could read the job's environment
  // from /proc, as with the Action's own `sandbox` input (src/action/local-sandbox-guard.ts).
  it.each([
    [['--sandbox', 'local'], {}],
    [[], { FROGNANO_SANDBOX: 'local' }],
  ])(
    'is refused in one line before anything runs (%j %j), exit 2',
    async (flags, env) => {
      const run = await runCli(['solve', '--repo', '.', '--issue', 'x', '--out', 'out', ...flags], {
        GITHUB_ACTIONS: 'true',
        FROGNANO_MODEL_URL: 'http://127.0.0.1:9/v1',
        ...env,
      });
      expect(humanLines(run.stderr)).toEqual([
        "frognano: --sandbox local is refused in GitHub Actions: the model's commands would run next to this process and could read the job's secrets from /proc; use --sandbox docker, or set FROGNANO_ALLOW_LOCAL_SANDBOX_IN_ACTIONS=i-understand-the-model-can-read-job-secrets to accept that",
      ]);
      expect(run.code).toBe(2);
      expect(existsSync(path.join(work, 'out'))).toBe(false);
    },
    60_000,
  );
});
