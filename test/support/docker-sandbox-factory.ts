// The DockerSandbox row of the tool conformance suite (see sandbox-factories.ts): the same
// tool observations must come out of the hardened container as out of LocalSandbox.
import { createDockerSandbox, type DockerSandbox } from '../../src/sandbox/docker-sandbox.js';
import { describeDockerEndpoint } from '../../src/sandbox/docker-engine.js';
import { dockerReady, ensureSandboxImage, testRunId } from './docker-engine.js';
import type { SandboxFactory } from './sandbox-factories.js';

const runId = testRunId('tools');

export const dockerSandboxFactory: SandboxFactory = {
  name: 'docker',
  // In CI a missing engine is never "unavailable": create() then fails the rows loudly.
  unavailable: async () =>
    dockerReady || process.env.CI === 'true'
      ? undefined
      : `no Docker engine reachable at ${describeDockerEndpoint()}; start dockerd to run the Docker rows`,
  create: async (sourceDir) => {
    if (!dockerReady)
      throw new Error(
        `no Docker engine reachable at ${describeDockerEndpoint()} (CI=true: may not skip)`,
      );
    return dockerSandboxWithTree(sourceDir, { runId, repo: 'test/tools' });
  },
};

/** A DockerSandbox holding a copy of `sourceDir` at /testbed; nothing is left if the copy fails. */
export async function dockerSandboxWithTree(
  sourceDir: string,
  labels: { runId: string; repo: string },
): Promise<DockerSandbox> {
  await ensureSandboxImage();
  const sandbox = await createDockerSandbox(labels);
  try {
    await sandbox.copyIn(sourceDir);
  } catch (error) {
    await sandbox.dispose();
    throw error;
  }
  return sandbox;
}
