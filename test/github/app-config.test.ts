import { createPublicKey, generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { AppConfigError, loadAppConfig } from '../../src/github/app-config.js';
import { testPrivateKey } from './helpers/github.js';

describe('loadAppConfig', () => {
  it('has working defaults and no credentials on a fresh machine', () => {
    const c = loadAppConfig({}, '/srv/bot');
    expect(c).toMatchObject({
      credentials: undefined,
      webhookPath: '/api/github/webhooks',
      port: 3000,
      apiBaseUrl: 'https://api.github.com',
      gitBaseUrl: 'https://github.com',
      label: 'frognano',
      dataDir: '/srv/bot/data',
      concurrency: 1,
      statusThrottleMs: 15_000,
      sandbox: 'docker',
    });
  });

  it('reads credentials from PRIVATE_KEY (escaped newlines or base64) or PRIVATE_KEY_PATH', () => {
    const pem = testPrivateKey();
    const escaped = loadAppConfig({
      APP_ID: '42',
      PRIVATE_KEY: pem.replace(/\n/g, '\\n'),
      WEBHOOK_SECRET: 's',
    });
    expect(escaped.credentials).toEqual({ appId: 42, privateKey: pem, webhookSecret: 's' });
    const b64 = loadAppConfig({
      APP_ID: '42',
      PRIVATE_KEY: Buffer.from(pem).toString('base64'),
      WEBHOOK_SECRET: 's',
    });
    expect(b64.credentials?.privateKey).toBe(pem);
    const dir = mkdtempSync(join(tmpdir(), 'frognano-cfg-'));
    try {
      writeFileSync(join(dir, 'app.pem'), pem);
      const fromFile = loadAppConfig(
        { APP_ID: '42', PRIVATE_KEY_PATH: 'app.pem', WEBHOOK_SECRET: 's' },
        dir,
      );
      expect(fromFile.credentials?.privateKey).toBe(pem);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('derives GitHub Enterprise URLs from GHE_HOST, with explicit overrides winning', () => {
    expect(loadAppConfig({ GHE_HOST: 'ghe.example.com' })).toMatchObject({
      apiBaseUrl: 'https://ghe.example.com/api/v3',
      gitBaseUrl: 'https://ghe.example.com',
    });
    expect(
      loadAppConfig({
        GHE_HOST: 'ghe.example.com',
        GITHUB_API_URL: 'https://api.ghe.example.com/',
        FROGNANO_GIT_URL: 'file:///srv/git',
      }),
    ).toMatchObject({ apiBaseUrl: 'https://api.ghe.example.com', gitBaseUrl: 'file:///srv/git' });
  });

  it('caps the runs waiting per repository only when FROGNANO_MAX_QUEUED_PER_REPO is set', () => {
    expect(loadAppConfig({}).maxQueuedPerRepo).toBeUndefined();
    expect(loadAppConfig({ FROGNANO_MAX_QUEUED_PER_REPO: '10' }).maxQueuedPerRepo).toBe(10);
    for (const bad of ['0', '-1', '2.5', 'ten'])
      expect(() => loadAppConfig({ FROGNANO_MAX_QUEUED_PER_REPO: bad })).toThrow(
        `FROGNANO_MAX_QUEUED_PER_REPO must be a whole number of runs (at least 1) (got ${JSON.stringify(bad)})`,
      );
  });

  it('names every bad variable on its own line, never echoing secrets', () => {
    let error: unknown;
    try {
      loadAppConfig({
        APP_ID: 'abc',
        FROGNANO_CONCURRENCY: '0',
        PORT: '70000',
        FROGNANO_PUBLIC_URL: 'ftp://x',
        FROGNANO_SANDBOX: 'vm',
        PRIVATE_KEY: 'not a key',
      });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(AppConfigError);
    const lines = (error as AppConfigError).problems;
    expect(lines).toEqual(
      expect.arrayContaining([
        'APP_ID must be the numeric App ID (got "abc")',
        'FROGNANO_CONCURRENCY must be a whole number from 1 to 64 (got "0")',
        'PORT must be a TCP port (0-65535) (got "70000")',
        'FROGNANO_PUBLIC_URL must be an http(s) URL (got "ftp://x")',
        'FROGNANO_SANDBOX must be docker or local (got "vm")',
      ]),
    );
    // The message the issue asks for (it was "PRIVATE_KEY must be a PEM private key").
    expect(() => loadAppConfig({ PRIVATE_KEY: 'not a key' })).toThrow(
      'PRIVATE_KEY is not a PEM key: ',
    );
    // A file that holds no key names the variable that pointed at it, and the file.
    const dir = mkdtempSync(join(tmpdir(), 'frognano-key-'));
    try {
      writeFileSync(join(dir, 'app.pem'), 'not a key\n');
      expect(() => loadAppConfig({ PRIVATE_KEY_PATH: join(dir, 'app.pem') })).toThrow(
        `PRIVATE_KEY_PATH must name a PEM private key file (${JSON.stringify(join(dir, 'app.pem'))} holds none)`,
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    expect(() => loadAppConfig({ APP_ID: '1', PRIVATE_KEY: testPrivateKey() })).toThrow(
      'WEBHOOK_SECRET must be set when APP_ID and a private key are set',
    );
    expect(() => loadAppConfig({ FROGNANO_BOT_NAME: 'x[bot]' })).toThrow('must be set together');
  });
});

describe('the private key, however a .env or `docker run --env-file` hands it over', () => {
  const app = (key: Record<string, string>, cwd?: string) =>
    loadAppConfig({ APP_ID: '42', WEBHOOK_SECRET: 's', ...key }, cwd).credentials?.privateKey;
  const problem = (key: Record<string, string>, cwd?: string): string => {
    try {
      loadAppConfig({ APP_ID: '42', WEBHOOK_SECRET: 's', ...key }, cwd);
    } catch (error) {
      if (error instanceof AppConfigError) return error.problems.join('\n');
      throw error;
    }
    return '(accepted)';
  };

  it('accepts the quoted, \\n-escaped line that Probot registration writes (docker keeps the quotes)', () => {
    const pem = testPrivateKey();
    const escaped = pem.replace(/\n/g, '\\n');
    // Probot's updateEnv writes PRIVATE_KEY="<pem with \n>"; --env-file passes it verbatim.
    expect(app({ PRIVATE_KEY: `"${escaped}"` })).toBe(pem);
    expect(app({ PRIVATE_KEY: `'${escaped}'` })).toBe(pem);
    // A .env saved with Windows line ends: docker keeps the \r too.
    expect(app({ PRIVATE_KEY: `"${escaped}"\r` })).toBe(pem);
    // Quoted with real newlines (a service manager that keeps quotes).
    expect(app({ PRIVATE_KEY: `"${pem}"` })).toBe(pem);
    expect(app({ PRIVATE_KEY: `"${Buffer.from(pem).toString('base64')}"` })).toBe(pem);
  });

  it('accepts the path of the .pem file in PRIVATE_KEY (absolute, or relative to the directory)', () => {
    const pem = testPrivateKey();
    const dir = mkdtempSync(join(tmpdir(), 'frognano-key-'));
    try {
      writeFileSync(join(dir, 'app.pem'), pem);
      expect(app({ PRIVATE_KEY: join(dir, 'app.pem') })).toBe(pem);
      expect(app({ PRIVATE_KEY: '"./app.pem"' }, dir)).toBe(pem);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('says in one line why a key cannot be read, never showing the key', () => {
    const pem = testPrivateKey();
    expect(problem({ PRIVATE_KEY: 'not a key' })).toBe(
      'PRIVATE_KEY is not a PEM key: it holds no "-----BEGIN … PRIVATE KEY-----" block, nor the base64 of one, nor the path of a readable file (set the .pem file\'s text, its base64 or its path)',
    );
    // A block that OpenSSL cannot decode (a line of the body lost in copying).
    const lines = pem.split('\n');
    const damaged = [...lines.slice(0, 3), ...lines.slice(5)].join('\n');
    const damagedProblem = problem({ PRIVATE_KEY: damaged.replace(/\n/g, '\\n') });
    expect(damagedProblem).toMatch(
      /^PRIVATE_KEY is not a PEM key: OpenSSL cannot decode it \(.+\): copy the \.pem file again, or generate a new private key in the App settings$/,
    );
    expect(damagedProblem).not.toContain(lines[1]?.slice(0, 20));
    const publicKey = createPublicKey(pem).export({ type: 'spki', format: 'pem' }) as string;
    expect(problem({ PRIVATE_KEY: publicKey })).toBe(
      "PRIVATE_KEY is not a PEM key: it holds a PUBLIC KEY, not a private key (use the App's private key .pem from its settings)",
    );
    const ec = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({
      type: 'pkcs8',
      format: 'pem',
    }) as string;
    expect(problem({ PRIVATE_KEY: ec })).toBe(
      "PRIVATE_KEY is not a PEM key: it is an ec key, and GitHub Apps sign with RSA (use the App's private key .pem from its settings)",
    );
    expect(problem({ PRIVATE_KEY: '/nonexistent/frognano-app.pem' })).toBe(
      'PRIVATE_KEY is not a PEM key: it names the file "/nonexistent/frognano-app.pem", which cannot be read (ENOENT)',
    );
    const dir = mkdtempSync(join(tmpdir(), 'frognano-key-'));
    try {
      writeFileSync(join(dir, 'damaged.pem'), damaged);
      const file = JSON.stringify(join(dir, 'damaged.pem'));
      expect(problem({ PRIVATE_KEY_PATH: join(dir, 'damaged.pem') })).toMatch(
        /^PRIVATE_KEY_PATH must name a PEM private key file \(".+" is not a PEM key: OpenSSL cannot decode it \(.+\): copy the \.pem file again, or generate a new private key in the App settings\)$/,
      );
      expect(problem({ PRIVATE_KEY_PATH: join(dir, 'damaged.pem') })).toContain(`(${file} is`);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
