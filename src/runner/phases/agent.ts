// The agent phase: N Leaf loops at once, each in its own sandbox started from the same
// prepared state, each against the model from the host, with its own step and time budget.
// Each loop captures its patch out of the sandbox as it ends (`git add -A; git diff`, the
// Leaf loop's own capture, timed with the agent). One attempt failing never stops the others;
// the run's signal stops them all.
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { runLeaf, type LeafRunResult } from '../../leaf/loop.js';
import type { Model } from '../../leaf/model.js';
import { ModelConfig } from '../../leaf/openai-model.js';
import { DEFAULT_MAX_CONTEXT_TOKENS } from '../../leaf/protocol.js';
import type { Sandbox } from '../../leaf/sandbox.js';
import { errorText } from '../command-output.js';
import { patchFiles as patchFilesOf } from '../patch-policy.js';
import { limitOf, type Failure, type RunContext } from '../run-context.js';
import type { Prepared } from './config.js';
import { excludeUntracked } from './exclude-untracked.js';
import { enterPrevious } from './previous-revisions.js';
import { taskText } from '../task-text.js';

export { taskText };

/** What the agent phase made of one attempt: its Leaf loop and the patch it captured. */
export interface Attempt {
  /** 1-based. */
  readonly number: number;
  readonly trajectoryPath: string;
  /** Its sandbox, once it had one: verify-after disposes of it. */
  readonly sandbox?: Sandbox;
  readonly leaf?: LeafRunResult;
  /** Why the attempt produced no usable result (cancelled, a sandbox limit, a crash). */
  readonly failure?: Failure;
  /** One plain sentence about something that went wrong in its loop. */
  readonly error?: string;
  /** The files its patch text names (git's reading of the patch names them instead, once made). */
  readonly filesChanged: string[];
}

/** An attempt's record while it is being made; the phases after it only read it. */
type Draft = { -readonly [K in keyof Attempt]: Attempt[K] };
type Loop = Pick<Draft, 'leaf' | 'failure' | 'error' | 'filesChanged'>;

/** Where attempt K's trajectory goes: attempt 1 where a one-attempt run has always put it. */
export function attemptDir(outDir: string, attempt: number): string {
  return attempt === 1 ? outDir : path.join(outDir, `attempt-${attempt}`);
}

/** Every attempt's trajectory path, once the run's output directory exists. */
export async function attemptTrajectories(run: RunContext, count: number): Promise<string[]> {
  const paths = Array.from({ length: count }, (_, i) =>
    path.join(attemptDir(run.request.outDir, i + 1), 'trajectory.json'),
  );
  await mkdir(run.request.outDir, { recursive: true });
  return paths;
}

/**
 * Runs every attempt's Leaf loop to its end, concurrently, as the `agent` phase; `ended` is
 * told of each attempt whose loop ended without a failure, as it ends.
 */
export function runAttempts(
  run: RunContext,
  prepared: Prepared,
  sandboxes: Promise<Sandbox | Failure>[],
  trajectories: readonly string[],
  modelFor: (attempt: number) => Model,
  ended?: (attempt: Attempt) => void,
): Promise<Attempt[]> {
  const count = sandboxes.length;
  const one = (sandbox: Promise<Sandbox | Failure>, i: number): Promise<Attempt> =>
    runAttempt(run, prepared, { number: i + 1, trajectoryPath: trajectories[i]!, sandbox }, count, {
      modelFor,
      ended,
    });
  return run.phase('agent', () => Promise.all(sandboxes.map(one)), {
    timeoutMs: prepared.timeoutMs,
  });
}

interface AttemptStart {
  number: number;
  trajectoryPath: string;
  sandbox: Promise<Sandbox | Failure>;
}

/** One attempt, from its sandbox to its loop's end; a crash is its own when there are several. */
async function runAttempt(
  run: RunContext,
  prepared: Prepared,
  start: AttemptStart,
  count: number,
  loops: {
    modelFor: (attempt: number) => Model;
    ended: ((attempt: Attempt) => void) | undefined;
  },
): Promise<Attempt> {
  // As far as it got: a crash keeps what the attempt had.
  const attempt: Draft = {
    number: start.number,
    trajectoryPath: start.trajectoryPath,
    filesChanged: [],
  };
  try {
    const sandbox = await start.sandbox;
    if ('outcome' in sandbox) {
      attempt.failure = sandbox;
      return attempt;
    }
    attempt.sandbox = sandbox;
    // Attempt 1's sandbox did this in verify-before; the copies were taken before it.
    if (attempt.number > 1) {
      const entered = await enterPrevious(run, prepared.previous, sandbox, 'all');
      if (entered) {
        attempt.failure = entered;
        return attempt;
      }
      await excludeUntracked(sandbox, run.signal, run.log);
    }
    Object.assign(attempt, await runLoop(run, prepared, attempt, sandbox, loops.modelFor, count));
    if (!attempt.failure) loops.ended?.(attempt);
  } catch (error) {
    if (count === 1) throw error;
    // One attempt's crash is its own: the others go on.
    run.log.error({ attempt: attempt.number, err: errorText(error) }, 'attempt failed');
    attempt.failure = { outcome: 'sandbox_failed', error: errorText(error) };
  }
  return attempt;
}

/**
 * The Leaf loop of one attempt, and what became of its patch. The attempt's model is taken last,
 * as the loop starts: `runLeaf` gives it back (`Model.release`) however it ends.
 */
async function runLoop(
  run: RunContext,
  prepared: Prepared,
  attempt: { number: number; trajectoryPath: string },
  sandbox: Sandbox,
  modelFor: (attempt: number) => Model,
  count: number,
): Promise<Loop> {
  const { request, deps } = run;
  const modelConfig =
    deps.modelConfig === undefined ? undefined : ModelConfig.parse(deps.modelConfig);
  await mkdir(path.dirname(attempt.trajectoryPath), { recursive: true });
  const several = count > 1;
  const task = taskText(
    { ...request, issueText: prepared.issueText },
    prepared.config,
    prepared.instructionTexts,
  );
  const leaf = await runLeaf({
    model: modelFor(attempt.number),
    sandbox,
    task,
    instanceId: request.instanceId,
    maxSteps: prepared.maxSteps,
    maxContextTokens: deps.maxContextTokens ?? DEFAULT_MAX_CONTEXT_TOKENS,
    ...(modelConfig ? { maxTokensPerTurn: modelConfig.maxCompletionTokens } : {}),
    timeBudgetMs: prepared.timeoutMs,
    signal: run.signal,
    trajectoryPath: attempt.trajectoryPath,
    trajectoryId: several ? `${request.runId}-attempt-${attempt.number}` : request.runId,
    logger: several ? run.log.child({ attempt: attempt.number }) : run.log,
    onStep: (step) =>
      run.report({ kind: 'step', ...step, ...(several ? { attempt: attempt.number } : {}) }),
  });
  const loop: Loop = { leaf, filesChanged: patchFilesOf(leaf.patch) };
  if (leaf.exitReason === 'cancelled')
    return { ...loop, failure: { outcome: 'cancelled', error: 'the run was cancelled' } };
  const limit = limitOf([sandbox], undefined);
  if (limit) return { ...loop, failure: { outcome: 'sandbox_limit', error: limit.message } };
  if (leaf.error) loop.error = leaf.error;
  // Without its patch the attempt has nothing to verify or publish: a failure, never
  // `completed` (with one attempt, the run's outcome).
  if (leaf.patchError) {
    loop.failure = {
      outcome: 'capture_failed',
      error: `the patch could not be captured: ${leaf.patchError}`,
    };
  }
  return loop;
}
