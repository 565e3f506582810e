// `npm start` reads its settings once: the CLI loads .env into the environment, and the App's
// configuration is read once and handed to the start-up checks and to the App.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type * as App from '../../src/app.js';
import type * as AppConfig from '../../src/github/app-config.js';
import type * as Doctor from '../../src/commands/doctor.js';
import { testPrivateKey } from '../github/helpers/github.js';

const seen = vi.hoisted(() => ({ appConfigLoads: 0, apps: [] as App.RunningApp[] }));

vi.mock('../../src/github/app-config.js', async (importOriginal) => {
  const real = await importOriginal<typeof AppConfig>();
  return {
    ...real,
    loadAppConfig: (...args: Parameters<typeof real.loadAppConfig>) => {
      seen.appConfigLoads += 1;
      return real.loadAppConfig(...args);
    },
  };
});
vi.mock('../../src/app.js', async (importOriginal) => {
  const real = await importOriginal<typeof App>();
  return {
    ...real,
    startApp: async (...args: Parameters<typeof real.startApp>) => {
      const app = await real.startApp(...args);
      seen.apps.push(app);
      return app;
    },
  };
});
// The checks ask GitHub and Docker; what they read is the point here, not what they find.
vi.mock('../../src/commands/doctor.js', async (importOriginal) => ({
  ...(await importOriginal<typeof Doctor>()),
  runChecks: async () => [],
}));

const saved = { argv: process.argv, cwd: process.cwd(), env: { ...process.env } };
let dir: string | undefined;

afterEach(async () => {
  for (const app of seen.apps.splice(0)) await app.stop();
  process.argv = saved.argv;
  process.chdir(saved.cwd);
  for (const key of Object.keys(process.env)) if (!(key in saved.env)) delete process.env[key];
  Object.assign(process.env, saved.env);
  vi.useRealTimers();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('frognano serve (as npm start does)', () => {
  it('loads .env once and the App configuration once', async () => {
    dir = mkdtempSync(join(tmpdir(), 'frognano-start-once-'));
    writeFileSync(join(dir, '.env'), `APP_ID=1\nWEBHOOK_SECRET=from-dotenv\n`);
    process.chdir(dir);
    Object.assign(process.env, {
      PRIVATE_KEY: testPrivateKey(),
      PORT: '0',
      HOST: '127.0.0.1',
      FROGNANO_DATA_DIR: join(dir, 'data'),
      FROGNANO_SANDBOX: 'local',
      LOG_LEVEL: 'silent',
    });
    const loadEnvFile = vi.spyOn(process, 'loadEnvFile');
    // The command keeps the process alive with an interval until a signal: not in a test.
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] });
    const signals = { SIGINT: process.listeners('SIGINT'), SIGTERM: process.listeners('SIGTERM') };
    process.argv = ['node', 'frognano', 'serve'];
    try {
      await import('../../src/cli.js');
      expect(seen.apps).toHaveLength(1);
      expect(seen.apps[0]!.config?.credentials?.appId).toBe(1);
      expect(seen.apps[0]!.config?.credentials?.webhookSecret).toBe('from-dotenv');
      expect(loadEnvFile).toHaveBeenCalledTimes(1);
      expect(seen.appConfigLoads).toBe(1);
    } finally {
      for (const name of ['SIGINT', 'SIGTERM'] as const) {
        for (const listener of process.listeners(name)) {
          if (!signals[name].includes(listener)) process.removeListener(name, listener);
        }
      }
      loadEnvFile.mockRestore();
    }
  });
});
