// The one mutable state of a Leaf run: its limits and deadline, the trajectory recorder that
// holds the history, and the counters the steps advance (queries, tokens, fallbacks).
import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import type { LeafRunOptions, LeafStepSummary, LeafUsageTotals } from './loop-types.js';
import {
  DEFAULT_MAX_CONTEXT_TOKENS,
  DEFAULT_MAX_STEPS,
  DEFAULT_REQUEST,
  SYSTEM_PROMPT,
  TOOL_SCHEMAS,
} from './protocol.js';
import { TrajectoryRecorder, type SandboxRecovery } from './trajectory.js';

export const Limits = z.object({
  maxSteps: z.number().int().min(0),
  maxContextTokens: z.number().int().positive(),
  maxTokensPerTurn: z.number().int().positive(),
  timeBudgetMs: z.number().min(0).optional(),
});
export type Limits = z.infer<typeof Limits>;

/** A changing call of the loop and the outcome a replay must reproduce (sandbox-recovery.ts). */
export interface ReplayedCall {
  name: string;
  arguments: string;
  outcome: string;
}

export interface LoopState {
  readonly options: LeafRunOptions;
  readonly limits: Limits;
  /** performance.now() at the start; the run's elapsed time counts from here. */
  readonly started: number;
  /** performance.now() past which no new step or tool call starts (infinite without a budget). */
  readonly deadline: number;
  readonly recorder: TrajectoryRecorder;
  readonly usage: LeafUsageTotals;
  readonly summaries: LeafStepSummary[];
  /** Model queries made so far, a failed one included (Leaf's n_steps). */
  nSteps: number;
  contextTokens: number;
  /** Steps whose tool calls were recovered from text. */
  fallbacks: number;
  /** Tool-call ids handed out by the fallback so far, so recovered ids stay unique. */
  fallbackIds: number;
  trajectoryError: string | null;
  /** The Write, Edit and Bash calls so far, for replay on a rebuilt sandbox. */
  replayLog: ReplayedCall[];
  /** Each loss of the sandbox, rebuilt or not. */
  recoveries: SandboxRecovery[];
}

/** Validates the limits, starts the clock and the history (system + user, §1). */
export function createLoopState(options: LeafRunOptions): LoopState {
  const limits = Limits.parse({
    maxSteps: options.maxSteps ?? DEFAULT_MAX_STEPS,
    maxContextTokens: options.maxContextTokens ?? DEFAULT_MAX_CONTEXT_TOKENS,
    maxTokensPerTurn: options.maxTokensPerTurn ?? DEFAULT_REQUEST.maxCompletionTokens,
    timeBudgetMs: options.timeBudgetMs,
  });
  const started = performance.now();
  const recorder = new TrajectoryRecorder(
    {
      trajectoryId: options.trajectoryId ?? randomUUID(),
      instanceId: options.instanceId,
      seed: options.seed ?? null,
      tools: TOOL_SCHEMAS,
    },
    options.trajectoryPath,
  );
  recorder.appendMessage({ role: 'system', content: SYSTEM_PROMPT });
  recorder.appendMessage({ role: 'user', content: options.task });
  return {
    options,
    limits,
    started,
    deadline: started + (limits.timeBudgetMs ?? Number.POSITIVE_INFINITY),
    recorder,
    usage: { requests: 0, requestsWithoutUsage: 0, promptTokens: 0, completionTokens: 0 },
    summaries: [],
    nSteps: 0,
    contextTokens: recorder.historyTokenEstimate(),
    fallbacks: 0,
    fallbackIds: 0,
    trajectoryError: null,
    replayLog: [],
    recoveries: [],
  };
}

export function elapsedMs(state: LoopState): number {
  return performance.now() - state.started;
}

/** The budget's clock: time the model spent waiting for a slot does not count. */
export function budgetNow(state: LoopState): number {
  return performance.now() - (state.options.model.waitedMs?.() ?? 0);
}

/** The deadline on the wall clock: the budget's deadline moved on by the time spent waiting. */
export function wallDeadline(state: LoopState): number {
  return state.deadline + (performance.now() - budgetNow(state));
}
