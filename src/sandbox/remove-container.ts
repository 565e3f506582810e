// Removes a sandbox's container with its anonymous volumes; one already gone is no error.
import type Docker from 'dockerode';
import { SandboxFailure } from '../leaf/sandbox.js';
import type { Logger } from '../log.js';
import { errorText } from './engine-error-text.js';

export async function removeContainer(
  container: Docker.Container,
  log: Logger,
  runId: string,
): Promise<void> {
  try {
    await container.remove({ force: true, v: true });
  } catch (error) {
    const status = (error as { statusCode?: number }).statusCode;
    // 404: already gone; 409: removal already in progress.
    if (status === 404 || status === 409) return;
    log.error({ runId, err: errorText(error) }, 'sandbox container removal failed');
    throw new SandboxFailure(
      `could not remove sandbox container ${container.id}: ${errorText(error)}`,
      { cause: error },
    );
  }
}
