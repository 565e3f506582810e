// A Redis of a test's own (redis-server on a free port, files in a temp dir): for tests that
// restart or reconfigure Redis, which the shared one at 127.0.0.1:6379 must never be.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';

export interface OwnRedis {
  url: string;
  port: number;
  dir: string;
  /** Stops it (SIGKILL with `crash`, else a clean SHUTDOWN) and starts it again on the same files. */
  restart(options?: { crash?: boolean; downMs?: number }): Promise<void>;
  stop(): Promise<void>;
}

export async function startOwnRedis(options: { appendonly?: boolean } = {}): Promise<OwnRedis> {
  const dir = mkdtempSync(join(tmpdir(), 'frognano-redis-'));
  const port = await freePort();
  const args = [
    '--port',
    String(port),
    '--bind',
    '127.0.0.1',
    '--dir',
    dir,
    '--appendonly',
    options.appendonly === false ? 'no' : 'yes',
    '--appendfsync',
    'always',
    '--save',
    '',
  ];
  let child: ChildProcess | undefined;
  const launch = async () => {
    child = spawn('redis-server', args, { stdio: 'ignore' });
    const deadline = Date.now() + 10_000;
    for (;;) {
      const probe = new Redis(port, '127.0.0.1', {
        lazyConnect: true,
        retryStrategy: () => null,
        maxRetriesPerRequest: 0,
      });
      probe.on('error', () => undefined);
      try {
        await probe.connect();
        if ((await probe.ping()) === 'PONG') {
          // Still loading the AOF answers LOADING errors; ping passing means ready.
          return;
        }
      } catch {
        if (Date.now() > deadline) throw new Error(`redis-server on port ${port} did not start`);
        await new Promise((r) => setTimeout(r, 50));
      } finally {
        probe.disconnect();
      }
    }
  };
  const halt = async (crash: boolean) => {
    const c = child;
    if (!c || c.exitCode !== null || c.signalCode !== null) return;
    const exited = new Promise((r) => c.once('exit', r));
    c.kill(crash ? 'SIGKILL' : 'SIGTERM');
    await exited;
  };
  await launch();
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    dir,
    async restart({ crash = true, downMs = 300 } = {}) {
      await halt(crash);
      await new Promise((r) => setTimeout(r, downMs));
      await launch();
    },
    async stop() {
      await halt(true);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as AddressInfo;
      probe.close(() => resolve(port));
    });
  });
}
