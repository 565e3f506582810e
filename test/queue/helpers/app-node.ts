// One host of a many-machines test, in its own process: `serve` or `worker` through the App
// harness (real startApp, real pipeline on the local sandbox), its own data directory, the
// shared Redis, GitHub served by the parent's strict loopback fake. Prints {"ready":true,...}
// on stdout, then lives until killed.
import nock from 'nock';
import { startHarness } from '../../github/helpers/app-harness.js';

// The harness imports nock; nothing here is to be intercepted.
nock.restore();
const [mode, root, dataDir, modelUrl, githubUrl, redisUrl, prefix, concurrency] =
  process.argv.slice(2) as [string, string, string, string, string, string, string, string];
const harness = await startHarness({
  mode: mode as 'serve' | 'worker',
  root,
  dataDir,
  modelUrl,
  throttleMs: Number(process.env.TEST_STATUS_THROTTLE_MS ?? 0),
  pacedWrites: process.env.TEST_PACED_WRITES === '1',
  concurrency: Number(concurrency),
  botEnv: true,
  env: {
    // Several workers on one host: no metrics servers fighting over one port.
    FROGNANO_METRICS_PORT: '0',
    GITHUB_API_URL: githubUrl,
    FROGNANO_REDIS_URL: redisUrl,
    FROGNANO_REDIS_PREFIX: prefix,
    FROGNANO_LOST_WORKER_SECONDS: process.env.FROGNANO_LOST_WORKER_SECONDS ?? '3',
  },
});
process.stdout.write(`${JSON.stringify({ ready: true, url: harness.url ?? null })}\n`);
const stop = () => {
  harness.stop({ keepFiles: true }).then(
    () => process.exit(0),
    () => process.exit(1),
  );
};
process.once('SIGTERM', stop);
