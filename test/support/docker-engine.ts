// Docker-backed tests: run against the real engine when one is reachable; otherwise skip
// with a loud notice, except in CI (CI=true), where a missing engine is a failure.
import { randomBytes } from 'node:crypto';
import type Docker from 'dockerode';
import { describe, it } from 'vitest';
import { connectDocker, describeDockerEndpoint } from '../../src/sandbox/docker-engine.js';
import { DEFAULT_SANDBOX_IMAGE, LABEL_RUN } from '../../src/sandbox/docker-sandbox.js';

const inCi = process.env.CI === 'true';

/** True when the engine answers a ping within `timeoutMs`. */
export async function dockerAvailable(
  timeoutMs = 2000,
  docker: Docker = connectDocker(),
): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      docker.ping().then(() => true),
      new Promise<boolean>((resolve) => {
        timer = setTimeout(() => resolve(false), timeoutMs);
      }),
    ]);
  } catch {
    return false;
  } finally {
    clearTimeout(timer);
  }
}

/** Probed once per test file (module), before any suite is collected. */
export const dockerReady: boolean = await dockerAvailable();

const missingMessage = `no Docker engine reachable at ${describeDockerEndpoint()}`;

function loudSkip(what: string): void {
  const line = '!'.repeat(78);
  console.warn(
    `\n${line}\n!! SKIPPED (Docker): ${what}\n!! ${missingMessage}; start dockerd to run these tests.\n!! In CI (CI=true) this is a failure, not a skip.\n${line}\n`,
  );
}

type SuiteBody = () => void;
type TestBody = () => unknown;

/** `describe` for suites that need a Docker engine. */
export function describeDocker(name: string, body: SuiteBody): void {
  if (dockerReady) {
    describe(name, body);
  } else if (inCi) {
    describe(name, () => {
      it('needs a Docker engine (CI=true: Docker tests may not skip)', () => {
        throw new Error(`${missingMessage}; CI must start dockerd before the tests (see .ci/run)`);
      });
    });
  } else {
    loudSkip(name);
    describe.skip(name, body);
  }
}

/** `it` for single tests that need a Docker engine. */
export function itDocker(name: string, body: TestBody, timeoutMs?: number): void {
  if (dockerReady) {
    it(name, body, timeoutMs);
  } else if (inCi) {
    it(name, () => {
      throw new Error(`${missingMessage}; CI must start dockerd before the tests (see .ci/run)`);
    });
  } else {
    loudSkip(name);
    it.skip(name, body);
  }
}

/** Fails with what to do when the default sandbox image (or `image`) is missing. */
export async function ensureSandboxImage(
  image: string = DEFAULT_SANDBOX_IMAGE,
  docker: Docker = connectDocker(),
): Promise<void> {
  try {
    await docker.getImage(image).inspect();
  } catch {
    throw new Error(
      `sandbox image ${image} is missing: the test setup (test/support/global-setup.ts) builds it when an engine answers; by hand: sudo bash sandbox/build-offline.sh (or docker build -t ${image} sandbox/)`,
    );
  }
}

/** A run id unique to one test file run, for labels and cleanup. */
export function testRunId(prefix: string): string {
  return `test-${prefix}-${randomBytes(4).toString('hex')}`;
}

/** Containers labelled with this run id (or, without one, any run of ours). */
export async function labelledContainers(
  runId?: string,
  docker: Docker = connectDocker(),
): Promise<string[]> {
  const label = runId ? `${LABEL_RUN}=${runId}` : LABEL_RUN;
  const list = await docker.listContainers({ all: true, filters: { label: [label] } });
  return list.map((c) => c.Id);
}

/** Force-removes containers left by a crashed test of this run id; returns how many. */
export async function removeLabelledContainers(
  runId: string,
  docker: Docker = connectDocker(),
): Promise<number> {
  const ids = await labelledContainers(runId, docker);
  await Promise.all(
    ids.map((id) =>
      docker
        .getContainer(id)
        .remove({ force: true })
        .catch(() => undefined),
    ),
  );
  return ids.length;
}
