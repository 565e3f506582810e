// A lost sandbox rebuilt and replayed (leaf-protocol.md §8, item 8; upstream's
// `_with_pod_recovery`): the loop keeps every Write, Edit and Bash call with its outcome; when the
// sandbox is lost (its container died or was removed) it is rebuilt from the attempt's starting
// image, at most twice per attempt, and those calls are replayed in order. Each must give the
// outcome it gave before (upstream's `_replay_outcome`), else the attempt stops with `tool_error`.
// The model sees nothing of it; the trajectory keeps a record of each recovery (ours).
import {
  describeError,
  elapsedMs,
  interrupted,
  stopped,
  wallDeadline,
  type LoopState,
  type Stop,
} from './loop-state.js';
import { AbortedError, DEADLINE_PASSED, runToolCall } from './run-tool-call.js';
import type { SandboxLost } from './sandbox.js';
import { round3, type SandboxRecovery } from './trajectory.js';

/** Upstream's `_MAX_POD_RECOVERIES`. */
export const MAX_SANDBOX_REBUILDS = 2;

/** The start of every `tool_error` a lost sandbox ends in. */
export const SANDBOX_LOST_PREFIX = 'the sandbox was lost and could not be rebuilt';

/** Upstream's `_MUTATING_TOOLS`: the calls a rebuilt sandbox must see again. */
const REPLAYED_TOOLS = new Set(['Write', 'Edit', 'Bash']);

/**
 * Upstream's `_replay_outcome`: a Bash call's status line (`Exit code: N`, `Timed out after
 * Xs`) when it has one, else the whole observation (a runner exit, an error, Write and Edit).
 */
export function replayOutcome(name: string, observation: string): string {
  if (name !== 'Bash') return observation;
  const status = /^(Exit code: -?\d+|Timed out after [\d.]+s)\n/.exec(observation);
  return status ? status[1]! : observation;
}

/** Keeps a finished call for a later replay when it is one that changes the sandbox. */
export function rememberCall(
  state: LoopState,
  call: { name: string; arguments: string },
  observation: string,
): void {
  if (!REPLAYED_TOOLS.has(call.name)) return;
  state.replayLog.push({
    name: call.name,
    arguments: call.arguments,
    outcome: replayOutcome(call.name, observation),
  });
}

/**
 * Rebuilds the lost sandbox and replays the loop's changing calls; nothing when the caller may
 * run its call again, else the stop: `tool_error` (not rebuilt), `max_time` (no replay runs past
 * the deadline) or `cancelled`.
 */
export async function recoverSandbox(
  state: LoopState,
  lost: SandboxLost,
  where: { step: number | null; tool: string },
): Promise<Stop | undefined> {
  const started = performance.now();
  const record: SandboxRecovery = {
    step: where.step,
    tool: where.tool,
    at_sec: round3(elapsedMs(state) / 1000),
    reason: lost.message,
    replayed_calls: 0,
    duration_sec: 0,
    rebuilt: false,
  };
  state.recoveries.push(record);
  const stop = await rebuildAndReplay(state, lost, record);
  record.duration_sec = round3((performance.now() - started) / 1000);
  record.rebuilt = stop === undefined;
  state.options.logger?.warn(
    { instanceId: state.options.instanceId, ...record, stop: stop?.error ?? stop?.reason },
    stop ? 'sandbox lost; not rebuilt' : 'sandbox lost; rebuilt and replayed',
  );
  return stop;
}

async function rebuildAndReplay(
  state: LoopState,
  lost: SandboxLost,
  record: SandboxRecovery,
): Promise<Stop | undefined> {
  const { sandbox, signal } = state.options;
  const fail = (why: string): Stop => stopped('tool_error', `${SANDBOX_LOST_PREFIX}: ${why}`);
  if (!sandbox.rebuild)
    return fail(`${lost.message} (this sandbox has no image to start again from)`);
  if (state.recoveries.length > MAX_SANDBOX_REBUILDS) {
    return fail(
      `lost ${state.recoveries.length} times (at most ${MAX_SANDBOX_REBUILDS} rebuilds per attempt); this time: ${lost.message}`,
    );
  }
  const late = interrupted(state);
  if (late) return late;
  try {
    await sandbox.rebuild();
  } catch (error) {
    return fail(`starting it again failed (${describeError(error)}); it was lost: ${lost.message}`);
  }
  const calls = state.replayLog;
  for (const [index, call] of calls.entries()) {
    const interrupt = interrupted(state);
    if (interrupt) return interrupt;
    const which = `${call.name} call ${index + 1} of ${calls.length}`;
    let observation: string | typeof DEADLINE_PASSED;
    try {
      observation = await runToolCall(sandbox, call, signal, wallDeadline(state));
    } catch (error) {
      if (error instanceof AbortedError) return stopped('cancelled');
      return fail(`replaying ${which} failed: ${describeError(error)}`);
    }
    if (observation === DEADLINE_PASSED) return stopped('max_time');
    record.replayed_calls = index + 1;
    const outcome = replayOutcome(call.name, observation);
    if (outcome !== call.outcome) {
      return fail(
        `replayed ${which} returned a different outcome (${brief(call.outcome)} before, ${brief(outcome)} now)`,
      );
    }
  }
  return undefined;
}

/** An outcome's first line, short enough for an error line. */
function brief(outcome: string): string {
  const line = outcome.split('\n', 1)[0]!;
  return line.length > 120 ? `${line.slice(0, 120)}…` : line;
}
