// Choosing the agent's runtime on the real engine: gVisor (runsc) when the engine offers it and
// a test start under it works (Python, `ls -l`, `stat`), runc otherwise or when told; a runtime
// the operator names that the engine lacks is one line saying what to do.
import { execFileSync } from 'node:child_process';
import { expect } from 'vitest';
import { connectDocker } from '../../src/sandbox/docker-engine.js';
import { DEFAULT_SANDBOX_IMAGE } from '../../src/sandbox/docker-sandbox.js';
import {
  chooseSandboxRuntime,
  reapRuntimeTests,
  RUNTIME_TEST_LABEL,
} from '../../src/sandbox/sandbox-runtime.js';
import { describeDocker, ensureSandboxImage, itDocker } from '../support/docker-engine.js';

const docker = connectDocker();
const image = DEFAULT_SANDBOX_IMAGE;

async function offered(): Promise<string[]> {
  return Object.keys(((await docker.info()) as { Runtimes?: object }).Runtimes ?? {});
}

/** What the image's shell says under `runtime`, run by the docker CLI: the ground truth. */
function shellWorksUnder(runtime: string): boolean {
  try {
    execFileSync(
      'docker',
      [
        'run',
        '--rm',
        '--runtime',
        runtime,
        '--network',
        'none',
        '--user',
        '1000:1000',
        image,
        'sh',
        '-c',
        'python3 -c pass && ls -l / >/dev/null && stat -c %s / >/dev/null',
      ],
      { stdio: 'ignore', timeout: 120_000 },
    );
    return true;
  } catch {
    return false;
  }
}

describeDocker('chooseSandboxRuntime', () => {
  itDocker('opts out with runc, in so many words', async () => {
    await ensureSandboxImage();
    expect(await chooseSandboxRuntime(docker, { wanted: 'runc', image })).toEqual({
      name: 'runc',
      reason: 'FROGNANO_SANDBOX_RUNTIME=runc opts out of gVisor',
    });
  });

  itDocker('refuses in one line a runtime the engine does not offer', async () => {
    const error = await chooseSandboxRuntime(docker, { wanted: 'no-such-runtime', image }).catch(
      (e: unknown) => e as Error,
    );
    expect(error).toBeInstanceOf(Error);
    expect((error as Error).message).toMatch(
      /^FROGNANO_SANDBOX_RUNTIME=no-such-runtime: the Docker engine offers no such runtime \(it has .*runc.*\); register it in \/etc\/docker\/daemon\.json or unset the variable$/,
    );
  });

  itDocker(
    'picks gVisor only when the engine offers it and the shell works under it, and says why',
    async () => {
      await ensureSandboxImage();
      const started = Date.now();
      const chosen = await chooseSandboxRuntime(docker, { wanted: undefined, image });
      if (!(await offered()).includes('runsc')) {
        expect(chosen).toEqual({
          name: 'runc',
          reason:
            'the Docker engine offers no runsc runtime (gVisor); register it to isolate the agent further',
        });
        return;
      }
      if (shellWorksUnder('runsc')) {
        expect(chosen).toEqual({
          name: 'runsc',
          reason: 'the engine offers it and a test start under it succeeded',
        });
      } else {
        // gVisor 2022-12 (Debian's) refuses coreutils 9's statx flags: `ls -l` says EINVAL.
        expect(chosen.name).toBe('runc');
        expect(chosen.reason).toMatch(
          /^a test start under runsc failed \(`ls -l` and `stat` fail under it: .+\); runc instead$/,
        );
      }
      // The operator's runsc stands, with what failed said.
      const named = await chooseSandboxRuntime(docker, { wanted: 'runsc', image });
      expect(named.name).toBe('runsc');
      expect(named.reason).toMatch(
        /^FROGNANO_SANDBOX_RUNTIME=runsc(, although | and a test start)/,
      );
      // The test starts leave nothing behind (another process's killed test start may be left;
      // the reaper's, below).
      const left = await docker.listContainers({
        all: true,
        filters: JSON.stringify({ label: [RUNTIME_TEST_LABEL] }),
      });
      expect(left.filter((c) => c.Created * 1000 >= started - 1000)).toEqual([]);
    },
    240_000,
  );

  itDocker('refuses in one line a named runtime under which the image cannot start', async () => {
    const error = await chooseSandboxRuntime(docker, {
      wanted: 'runc',
      image: 'frognano-test/no-such-image:none',
    }).catch((e: unknown) => e);
    // runc is never test-started: opting out needs no proof.
    expect(error).toMatchObject({ name: 'runc' });
    if (!(await offered()).includes('runsc')) return;
    const failed = await chooseSandboxRuntime(docker, {
      wanted: 'runsc',
      image: 'frognano-test/no-such-image:none',
    }).catch((e: unknown) => e as Error);
    expect((failed as Error).message).toMatch(
      /^FROGNANO_SANDBOX_RUNTIME=runsc: a test start of frognano-test\/no-such-image:none under it failed \(.+\); fix the runtime or unset the variable$/,
    );
  });

  itDocker(
    'the reaper removes a test start a killed process left, once it is old enough to be an orphan',
    async () => {
      await ensureSandboxImage();
      // What a process killed mid test start leaves: an exited container with the label.
      const orphan = await docker.createContainer({
        Image: image,
        Entrypoint: [],
        Cmd: ['true'],
        Labels: { [RUNTIME_TEST_LABEL]: '1' },
        HostConfig: { NetworkMode: 'none' },
      });
      try {
        await orphan.start();
        await orphan.wait();
        // Young: it may be a live process's test start between its exit and its removal.
        expect(await reapRuntimeTests(docker, { olderThanMs: 600_000 })).toBe(0);
        expect((await orphan.inspect()).Id).toBe(orphan.id);
        expect(await reapRuntimeTests(docker, { olderThanMs: 0 })).toBeGreaterThanOrEqual(1);
        await expect(orphan.inspect()).rejects.toMatchObject({ statusCode: 404 });
      } finally {
        await orphan.remove({ force: true }).catch(() => undefined);
      }
    },
  );
});
