// Phase 4, attempts: N Leaf loops at once, each in its own sandbox started from the same
// prepared state, each against the model from the host, with its own step and time budget.
// One attempt failing never stops the others; the run's signal stops them all.
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { runLeaf, type LeafRunResult } from '../../leaf/loop.js';
import type { Model } from '../../leaf/model.js';
import { ModelConfig } from '../../leaf/openai-model.js';
import { fleetOfModelConfig } from '../../model-fleet/open-fleet.js';
import type { EndpointCheck } from '../../model-fleet/fleet.js';
import { DEFAULT_MAX_CONTEXT_TOKENS } from '../../leaf/protocol.js';
import type { Sandbox } from '../../leaf/sandbox.js';
import { errorText } from '../command-output.js';
import { patchFiles as patchFilesOf } from '../patch-policy.js';
import { limitOf, type Failure, type RunContext } from '../run-context.js';
import type { PatchFacts, PolicyViolation, RunRequest, TestResult } from '../run-types.js';
import type { AppliedPatch } from '../workspace.js';
import { excludeUntracked } from './exclude-untracked.js';
import type { Prepared } from './prepare.js';
import { enterPrevious } from './previous-revisions.js';

/** Sent with every model request of a run with several attempts; the body stays Leaf-exact. */
export const ATTEMPT_HEADER = 'x-frognano-attempt';

/** One attempt: its Leaf loop, then the evidence gathered about its patch. */
export interface Attempt {
  /** 1-based. */
  number: number;
  sandbox?: Sandbox;
  trajectoryPath: string;
  leaf?: LeafRunResult;
  /** Why the attempt produced no usable result (cancelled, a sandbox limit, a crash). */
  failure?: Failure;
  /** One plain sentence about something that went wrong along the way. */
  error?: string;
  /** git's reading of the patch on the host's clean clone, once (see analyzePatch). */
  analysis?: Promise<{ applied?: AppliedPatch; error?: string }>;
  filesChanged: string[];
  patchFacts?: PatchFacts;
  verifyAfter?: TestResult;
  agentTests?: TestResult;
  /** The attempt's own tests and harness changes on the ORIGINAL source (several attempts only). */
  ownTestsBefore?: TestResult;
  /** A follow-up: harness files changed since the base revision, its patch included. */
  harnessSinceOrigin?: string[];
  /** The same with the source change's text but not its behaviour (see textOnlyPatch). */
  ownTestsText?: TestResult;
  violations: PolicyViolation[];
}

/** One attempt's Model; `release` gives its model slot back when its loop has ended. */
export type LoopModel = Model & { release?(): Promise<void> };

/**
 * The endpoints, checked once (the run goes on while one of them serves the model); then one
 * Model per attempt, pinned to an endpoint of the fleet (each tells its number in a header).
 */
export async function connectModel(
  run: RunContext,
  attempts: number,
): Promise<((attempt: number) => LoopModel) | Failure> {
  const { deps } = run;
  const fleet =
    deps.fleet ??
    (deps.modelConfig === undefined ? undefined : fleetOfModelConfig(deps.modelConfig, run.log));
  if (fleet) {
    const checks = await fleet.check();
    if (!checks.some((c) => c.ok))
      return { outcome: 'model_unreachable', error: noneServes(checks) };
    for (const c of checks) {
      if (!c.ok)
        run.log.warn({ endpoint: c.endpoint.name, problem: c.message }, 'model endpoint left out');
    }
  }
  const shared = deps.model;
  if (shared) return () => shared;
  if (!fleet)
    return {
      outcome: 'model_unreachable',
      error: 'no model endpoint is configured: set FROGNANO_MODEL_URL',
    };
  const several = attempts > 1;
  return (attempt) =>
    fleet.loop({
      headers: several ? { [ATTEMPT_HEADER]: String(attempt) } : {},
      onWait: (waiting, waitedMs) =>
        run.report({ kind: 'model-wait', ...(several ? { attempt } : {}), waiting, waitedMs }),
    });
}

/** One endpoint: its own line, as always. Several: each one's reason. */
function noneServes(checks: readonly EndpointCheck[]): string {
  const failed = checks.filter((c): c is Extract<EndpointCheck, { ok: false }> => !c.ok);
  if (failed.length === 1) return errorText(new Error(failed[0]!.message));
  return `no model endpoint can serve this run: ${failed.map((c) => c.message).join('; ')}`;
}

/** Where attempt K's trajectory goes: attempt 1 where a one-attempt run has always put it. */
export function attemptDir(outDir: string, attempt: number): string {
  return attempt === 1 ? outDir : path.join(outDir, `attempt-${attempt}`);
}

/**
 * Runs every attempt's Leaf loop to its end, concurrently, as the `agent` phase; `ended` is
 * told of each attempt whose loop ended without a failure, as it ends.
 */
export async function runAttempts(
  run: RunContext,
  prepared: Prepared,
  sandboxes: Promise<Sandbox | Failure>[],
  modelFor: (attempt: number) => LoopModel,
  ended?: (attempt: Attempt) => void,
): Promise<Attempt[]> {
  const attempts = sandboxes.map((_, i): Attempt => ({
    number: i + 1,
    trajectoryPath: path.join(attemptDir(run.request.outDir, i + 1), 'trajectory.json'),
    filesChanged: [],
    violations: [],
  }));
  await mkdir(run.request.outDir, { recursive: true });
  run.result.trajectoryPath = attempts[0]!.trajectoryPath;
  await run.phase('agent', () =>
    Promise.all(
      attempts.map(async (attempt, i) => {
        try {
          const sandbox = await sandboxes[i]!;
          if ('outcome' in sandbox) {
            attempt.failure = sandbox;
            return;
          }
          attempt.sandbox = sandbox;
          // Attempt 1's sandbox did this in verify-before; the copies were taken before it.
          if (attempt.number > 1) {
            const entered = await enterPrevious(run, prepared.previous, sandbox, 'all');
            if (entered) {
              attempt.failure = entered;
              return;
            }
            await excludeUntracked(sandbox, run.signal, run.log);
          }
          const model = modelFor(attempt.number);
          try {
            await runAttempt(run, prepared, attempt, model, attempts.length);
          } finally {
            await model.release?.();
          }
          if (!attempt.failure) ended?.(attempt);
        } catch (error) {
          if (attempts.length === 1) throw error;
          // One attempt's crash is its own: the others go on.
          run.log.error({ attempt: attempt.number, err: errorText(error) }, 'attempt failed');
          attempt.failure = { outcome: 'sandbox_failed', error: errorText(error) };
        }
      }),
    ),
  );
  return attempts;
}

async function runAttempt(
  run: RunContext,
  prepared: Prepared,
  attempt: Attempt,
  model: Model,
  count: number,
): Promise<void> {
  const { request, deps } = run;
  const modelConfig =
    deps.modelConfig === undefined ? undefined : ModelConfig.parse(deps.modelConfig);
  await mkdir(path.dirname(attempt.trajectoryPath), { recursive: true });
  const several = count > 1;
  const leaf = await runLeaf({
    model,
    sandbox: attempt.sandbox!,
    task: taskText(
      { ...request, issueText: prepared.issueText },
      prepared.config,
      prepared.instructionTexts,
    ),
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
  attempt.leaf = leaf;
  attempt.filesChanged = patchFilesOf(leaf.patch);
  if (leaf.exitReason === 'cancelled') {
    attempt.failure = { outcome: 'cancelled', error: 'the run was cancelled' };
    return;
  }
  const limit = limitOf([attempt.sandbox], undefined);
  if (limit) {
    attempt.failure = { outcome: 'sandbox_limit', error: limit.message };
    return;
  }
  if (leaf.error) attempt.error = leaf.error;
  // Without its patch the attempt has nothing to verify or publish: a failure, never
  // `completed` (with one attempt, the run's outcome).
  if (leaf.patchError) {
    attempt.failure = {
      outcome: 'capture_failed',
      error: `the patch could not be captured: ${leaf.patchError}`,
    };
  }
}

/**
 * leaf-protocol.md §1: the issue, then (only if present) a blank line and each extra guidance:
 * the config's `instructions`, the instruction files' texts, the text after `/frognano retry`.
 */
export function taskText(
  request: Pick<RunRequest, 'issueText' | 'extraGuidance'>,
  config: { instructions?: string | undefined },
  instructionTexts: readonly string[] = [],
): string {
  const parts = [request.issueText];
  if (config.instructions?.trim()) parts.push(config.instructions.trim());
  for (const text of instructionTexts) if (text.trim()) parts.push(text.trim());
  if (request.extraGuidance?.trim()) parts.push(request.extraGuidance.trim());
  return parts.join('\n\n');
}
