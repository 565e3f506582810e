import type Docker from 'dockerode';
import type { Logger } from '../log.js';
import { SANDBOX_ENV, SANDBOX_USER } from './docker-sandbox-options.js';
import { errorText } from './engine-error-text.js';
import { HelperChannelError, type ToolHelperChannel } from './tool-helper-channel.js';

export interface RescueContext {
  container: Docker.Container;
  log: Logger;
  runId: string;
  /** How long the helper gets after the host's kill before it counts as hung. */
  graceMs: number;
  disposed: () => boolean;
}

/**
 * The helper did not answer in time after a timeout or abort: kill the command's group
 * from the host with a second exec, then give the helper a last chance before dropping it.
 */
export async function rescueOverrun(
  { container, log, runId, graceMs, disposed }: RescueContext,
  helper: ToolHelperChannel,
  pgid: number,
  command: string,
): Promise<void> {
  if (helper.dead) return;
  log.warn(
    { runId, pgid, command: command.slice(0, 200) },
    'sandbox exec overran; killing from host',
  );
  if (pgid > 0) {
    try {
      await runDirect(container, ['kill', '-KILL', '--', `-${pgid}`]);
    } catch (error) {
      log.warn({ runId, err: errorText(error) }, 'host-side kill failed');
    }
  }
  setTimeout(() => {
    if (helper.dead) return;
    helper.fail(new HelperChannelError('tool helper did not finish a killed command'));
    // A hung helper (e.g. stopped by the agent) would linger until the container goes.
    if (!disposed())
      void runDirect(container, ['kill', '-KILL', String(helper.pid)]).catch(() => undefined);
  }, graceMs).unref();
}

/** A plain exec as the sandbox user, outside the helper (used only for rescue). */
async function runDirect(container: Docker.Container, cmd: string[]): Promise<void> {
  const exec = await container.exec({
    Cmd: cmd,
    User: SANDBOX_USER,
    AttachStdout: true,
    AttachStderr: true,
    Env: SANDBOX_ENV,
  });
  const stream = await exec.start({});
  await new Promise<void>((resolve) => {
    stream.on('end', resolve);
    stream.on('close', resolve);
    stream.on('error', () => resolve());
    stream.resume();
  });
}
