import type Docker from 'dockerode';
import { SandboxFailure } from '../leaf/sandbox.js';
import { SANDBOX_GID, SANDBOX_UID } from './docker-sandbox-options.js';
import { errorText } from './engine-error-text.js';
import { packDirectory } from './pack-directory.js';
import { packDirectories } from './sandbox-skeleton.js';

/**
 * Copies the contents of a host directory into the container at `target` through the Engine
 * API: symlinks kept as links, every entry owned by uid 1000. `target` other than the workdir
 * is made first.
 */
export async function copyIntoContainer(
  container: Docker.Container,
  hostDir: string,
  target: string,
  workdir: string,
): Promise<{ entries: number }> {
  if (!target.startsWith('/')) throw new Error(`copyIn target must be an absolute path: ${target}`);
  if (target !== workdir) {
    // putArchive needs an existing directory; made here as the sandbox user's.
    await container.putArchive(packDirectories([target]), { path: '/' });
  }
  const packed = packDirectory(hostDir, {
    uid: SANDBOX_UID,
    gid: SANDBOX_GID,
    uname: 'frognano',
    gname: 'frognano',
  });
  try {
    const [, entries] = await Promise.all([
      container.putArchive(packed.stream as unknown as NodeJS.ReadableStream, {
        path: target,
      }),
      packed.done,
    ]);
    return { entries };
  } catch (error) {
    packed.stream.destroy();
    throw new SandboxFailure(
      `could not copy ${hostDir} into the sandbox at ${target}: ${errorText(error)}`,
      {
        cause: error,
      },
    );
  }
}
