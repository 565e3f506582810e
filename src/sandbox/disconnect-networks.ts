import type Docker from 'dockerode';
import { SandboxFailure } from '../leaf/sandbox.js';
import { errorText } from './engine-error-text.js';

/** Cuts every network of the container: afterwards it has loopback only. Idempotent. */
export async function disconnectNetworks(
  docker: Docker,
  container: Docker.Container,
): Promise<void> {
  const info = await container.inspect();
  const networks = Object.keys(info.NetworkSettings?.Networks ?? {}).filter(
    (name) => name !== 'none',
  );
  for (const name of networks) {
    try {
      await docker.getNetwork(name).disconnect({ Container: container.id, Force: true });
    } catch (error) {
      // Already gone (a concurrent call, or the network was removed): that is the goal.
      if (!/is not connected|not found|no such/i.test(errorText(error))) {
        throw new SandboxFailure(
          `could not disconnect the sandbox from network ${name}: ${errorText(error)}`,
          {
            cause: error,
          },
        );
      }
    }
  }
  const after = await container.inspect();
  const left = Object.keys(after.NetworkSettings?.Networks ?? {}).filter((name) => name !== 'none');
  if (left.length > 0)
    throw new SandboxFailure(`sandbox still attached to network(s): ${left.join(', ')}`);
}
