// Vitest global setup: the default sandbox image exists before any Docker test runs. When it
// is missing it is built once here (engine build, else the offline build), with progress
// lines, instead of every Docker suite failing on its own.
import { assertDockerReachable, connectDocker } from '../../src/sandbox/docker-engine.js';
import { DEFAULT_SANDBOX_IMAGE } from '../../src/sandbox/docker-sandbox.js';
import { ensureSandboxImage } from '../../src/sandbox/ensure-sandbox-image.js';
import { scrubOperatorEnv } from './scrub-env.js';

export default async function setup(): Promise<void> {
  scrubOperatorEnv();
  const docker = connectDocker();
  // Without an engine the Docker suites skip (or fail in CI) with their own notice.
  try {
    await assertDockerReachable(docker, { timeoutMs: 2000 });
  } catch {
    return;
  }
  const how = await ensureSandboxImage({
    docker,
    progress: (line) => console.log(`[sandbox image] ${line}`),
  });
  if (how !== 'present') console.log(`[sandbox image] built ${DEFAULT_SANDBOX_IMAGE} (${how})`);
}
