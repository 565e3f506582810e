// Phase 4, attempts: N Leaf loops at once, each in its own sandbox started from the same
// prepared state, each against the model from the host, with its own step and time budget.
// One attempt failing never stops the others; the run's signal stops them all.
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { runLeaf, type LeafRunResult } from '../../leaf/loop.js';
import type { Model } from '../../leaf/model.js';
import { checkModelEndpoint, createOpenAIModel, ModelConfig } from '../../leaf/openai-model.js';
import { DEFAULT_MAX_CONTEXT_TOKENS } from '../../leaf/protocol.js';
import type { Sandbox } from '../../leaf/sandbox.js';
import { errorText } from '../command-output.js';
import { patchFiles as patchFilesOf } from '../patch-policy.js';
import { limitOf, type Failure, type RunContext } from '../run-context.js';
import type { PatchFacts, PolicyViolation, RunRequest, TestResult } from '../run-types.js';
import type { AppliedPatch } from '../workspace.js';
import { excludeUntracked } from './exclude-untracked.js';
import type { Prepared } from './prepare.js';

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
  /** The same with the source change's text but not its behaviour (see textOnlyPatch). */
  ownTestsText?: TestResult;
  violations: PolicyViolation[];
}

/** The endpoint, checked once; one Model per attempt (each tells its number in a header). */
export async function connectModel(
  run: RunContext,
  attempts: number,
): Promise<((attempt: number) => Model) | Failure> {
  const { deps } = run;
  const modelConfig =
    deps.modelConfig === undefined ? undefined : ModelConfig.parse(deps.modelConfig);
  if (modelConfig) {
    try {
      await checkModelEndpoint(modelConfig);
    } catch (error) {
      return { outcome: 'model_unreachable', error: errorText(error) };
    }
  }
  const shared = deps.model;
  if (shared) return () => shared;
  if (!modelConfig)
    return {
      outcome: 'model_unreachable',
      error: 'no model endpoint is configured: set FROGNANO_MODEL_URL',
    };
  if (attempts === 1) {
    const model = createOpenAIModel(modelConfig);
    return () => model;
  }
  return (attempt) =>
    createOpenAIModel({
      ...modelConfig,
      headers: { ...modelConfig.headers, [ATTEMPT_HEADER]: String(attempt) },
    });
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
  modelFor: (attempt: number) => Model,
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
          if (attempt.number > 1) await excludeUntracked(sandbox, run.signal, run.log);
          await runAttempt(run, prepared, attempt, modelFor(attempt.number), attempts.length);
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
    task: taskText({ ...request, issueText: prepared.issueText }, prepared.config),
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

/** leaf-protocol.md §1: the issue, then (only if present) a blank line and each extra guidance. */
export function taskText(
  request: Pick<RunRequest, 'issueText' | 'extraGuidance'>,
  config: { instructions?: string | undefined },
): string {
  const parts = [request.issueText];
  if (config.instructions?.trim()) parts.push(config.instructions.trim());
  if (request.extraGuidance?.trim()) parts.push(request.extraGuidance.trim());
  return parts.join('\n\n');
}
