// One command in a running DockerSandbox: sent to the tool helper, watched (exec-watch.ts: the
// timeout, the caller's abort, a helper that does not answer) and rescued from the host when it
// overruns (exec-rescue.ts); its result checked and the limits it hit noted. A command that
// kills the helper is reported as killed on a fresh helper, never retried (side effects).
import type Docker from 'dockerode';
import { PythonError, type ExecOptions } from '../leaf/sandbox.js';
import type { Logger } from '../log.js';
import { helperExitCode } from './container-gone.js';
import {
  execPayload,
  execResult,
  killedResult,
  limitNotes,
  outputCap,
  withNotes,
  type DockerExecResult,
} from './docker-exec-result.js';
import type { SandboxDiskLimit } from './docker-sandbox-disk.js';
import type { SandboxHelper } from './docker-sandbox-helper.js';
import type { DockerSandboxLimits } from './docker-sandbox-options.js';
import { rescueOverrun, type RescueContext } from './exec-rescue.js';
import { ExecWatch } from './exec-watch.js';
import { ExecWireResult } from './helper-wire.js';
import { HelperChannelError, type ToolHelperChannel } from './tool-helper-channel.js';

export interface ExecHost {
  helper: SandboxHelper;
  disk: SandboxDiskLimit;
  container: Docker.Container;
  workdir: string;
  limits: DockerSandboxLimits;
  log: Logger;
  runId: string;
  /** How long a killed command may take to go before the host kills it. */
  graceMs: number;
  disposed: () => boolean;
  /** The container's OOMKilled flag (when the helper could not read the cgroup's counters). */
  oomKilled: () => Promise<boolean>;
}

export async function execInSandbox(
  host: ExecHost,
  command: string,
  options: ExecOptions,
): Promise<DockerExecResult> {
  const started = Date.now();
  const maxOutputBytes = outputCap(options);
  const payload = execPayload(command, options, host.workdir, maxOutputBytes);
  if (options.signal?.aborted) {
    // As if started and killed at once: nothing ran, nothing to say.
    return killedResult(started, maxOutputBytes);
  }
  let helper: ToolHelperChannel;
  try {
    helper = await host.helper.get();
  } catch (error) {
    throw await host.helper.failure(error);
  }
  const rescue: RescueContext = {
    container: host.container,
    log: host.log,
    runId: host.runId,
    graceMs: host.graceMs,
    disposed: host.disposed,
  };
  const watch = new ExecWatch(helper, host.graceMs, options.signal, (pgid) => {
    void rescueOverrun(rescue, helper, pgid, command);
  });
  watch.start(options.timeoutMs);
  try {
    const raw = await helper.request('exec', payload, watch.events);
    return await execOutcome(host, helper, raw, started, maxOutputBytes);
  } catch (error) {
    if (error instanceof PythonError) throw error;
    if (!(error instanceof HelperChannelError)) throw await host.helper.failure(error);
    // The container itself gone is a lost sandbox, for the loop to rebuild.
    const lost = await host.helper.lost(error);
    if (lost) throw lost;
    // The command may have killed the helper (`pkill python3`): a fresh helper keeps the
    // run going, and the command is reported as killed (it is not retried: side effects),
    // to the model as upstream reports a runner that exited.
    const code = await helperExitCode(helper.exec);
    await host.helper.recover(error, false).catch(async (failed: unknown) => {
      throw await host.helper.failure(failed);
    });
    return {
      ...killedResult(
        started,
        maxOutputBytes,
        'the sandbox tool helper died while this command ran',
      ),
      // A helper whose exit the engine did not record was ended by us: as if killed.
      runnerExit: { code: code ?? 137, output: helper.stderr },
    };
  } finally {
    watch.stop();
  }
}

/** The helper's exec reply, checked, with the limits it hit noted and the disk settled. */
async function execOutcome(
  host: ExecHost,
  helper: ToolHelperChannel,
  raw: unknown,
  started: number,
  maxOutputBytes: number,
): Promise<DockerExecResult> {
  const wire = host.helper.validate(helper, ExecWireResult, raw);
  const stdout = Buffer.from(wire.stdout, 'base64');
  const stderr = Buffer.from(wire.stderr, 'base64');
  if (stdout.length > maxOutputBytes || stderr.length > maxOutputBytes) {
    throw host.helper.misbehaved(helper, 'tool helper returned more output than the cap');
  }
  let oomKilled = wire.oomKilled;
  if (!wire.countersAvailable && wire.exitCode === -9 && !wire.timedOut && !wire.cancelled) {
    oomKilled = await host.oomKilled();
  }
  const notes = limitNotes(oomKilled, wire.pidsLimitHit, host.limits);
  if (notes.length > 0) {
    host.log.warn(
      { runId: host.runId, oomKilled, pidsLimitHit: wire.pidsLimitHit },
      'sandbox limit reached',
    );
  }
  await host.disk.settle();
  return execResult(wire, { stdout, stderr: withNotes(stderr, notes), oomKilled, notes }, started);
}
