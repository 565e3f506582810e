// What a Leaf run is made of (leaf-protocol.md §5): the options that go in, the one mutable state
// the steps advance (limits and deadline, the trajectory recorder that holds the history, the
// counters), how it stops, and the result that comes out.
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import { z } from 'zod';
import type { Model } from './model.js';
import {
  DEFAULT_MAX_CONTEXT_TOKENS,
  DEFAULT_MAX_STEPS,
  DEFAULT_REQUEST,
  SYSTEM_PROMPT,
  TOOL_SCHEMAS,
  type StopReason,
} from './protocol.js';
import type { Sandbox } from './sandbox.js';
import { TrajectoryRecorder, type SandboxRecovery, type Trajectory } from './trajectory.js';

export interface LeafStepProgress {
  /** 1-based count of model queries so far (for "step n/max" lines). */
  step: number;
  maxSteps: number;
  /** Tool names called in this step, in order (empty for the final answer). */
  tools: string[];
  elapsedMs: number;
  contextTokens: number;
}

export interface LeafRunOptions {
  model: Model;
  sandbox: Sandbox;
  /** The user message, exactly as the model should see it. */
  task: string;
  /** e.g. `owner/repo#123`; recorded in the trajectory. */
  instanceId: string;
  /** Recorded in the trajectory (Leaf's field); not sent to the model. */
  seed?: number | null;
  /** Default 150. */
  maxSteps?: number;
  /** Default 131072. */
  maxContextTokens?: number;
  /** The per-turn output cap used to classify a `length` finish; keep it equal to the model's maxCompletionTokens. Default 8192. */
  maxTokensPerTurn?: number;
  /** Wall-clock budget; checked before each step and also ends a model request in flight. Default: none. */
  timeBudgetMs?: number;
  /** Aborting ends the run with `cancelled`, also in the middle of a model request or tool call. */
  signal?: AbortSignal;
  /** trajectory.json, written after every step and at the end. */
  trajectoryPath?: string;
  trajectoryId?: string;
  onStep?: (progress: LeafStepProgress) => void;
  logger?: Logger;
}

export interface LeafStepSummary {
  /** 0-based, as in the trajectory. */
  step: number;
  /** `args`: the raw argument text, `outcome`: the observation's first line (both shortened). */
  tools: { name: string; args: string; outcome: string }[];
  modelMs: number;
  toolMs: number;
}

export interface LeafUsageTotals {
  requests: number;
  /** Requests whose response carried no usage (their tokens are not in the sums). */
  requestsWithoutUsage: number;
  promptTokens: number;
  completionTokens: number;
}

export interface LeafRunResult {
  trajectory: Trajectory;
  exitReason: StopReason;
  /** The error text for `llm_query_error` and `tool_error`; null otherwise. */
  error: string | null;
  /** The last assistant content when the agent finished (`agent`) or its turn was cut off; empty otherwise. */
  finalMessage: string;
  /** `git diff --binary` as UTF-8 text; empty when nothing changed or not captured. */
  patch: string;
  /** The exact patch bytes (files that are not UTF-8 survive only here). */
  patchBytes: Buffer;
  /** Why the patch could not be captured (the stop reason itself is kept). */
  patchError: string | null;
  /** Ours: true when the run ended on anything but `agent`: the patch is partial work (the trajectory's `ended_on_limit`). */
  partial: boolean;
  /** Model queries made, a failed one included (Leaf's n_steps). */
  nSteps: number;
  contextTokens: number;
  usage: LeafUsageTotals;
  steps: LeafStepSummary[];
  elapsedMs: number;
  toolCallFallbacks: number;
  /** Each time the sandbox was lost, rebuilt and replayed or not (the trajectory's record). */
  sandboxRecoveries: SandboxRecovery[];
  /** Set when a trajectory write failed (the run itself went on). */
  trajectoryError: string | null;
}

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

/** How a run stopped: the reason, with the error text and final message that go with it. */
export interface Stop {
  reason: StopReason;
  error: string | null;
  finalMessage: string;
}

export function stopped(reason: StopReason, error: string | null = null, finalMessage = ''): Stop {
  return { reason, error, finalMessage };
}

/** §5, checked before each step and each tool call: `cancelled` first, then `max_time`. */
export function interrupted(state: LoopState): Stop | undefined {
  if (state.options.signal?.aborted) return stopped('cancelled');
  if (budgetNow(state) >= state.deadline) return stopped('max_time');
  return undefined;
}

/** A stop's error text: the message plus its causes, e.g. `Connection error.: fetch failed: connect ECONNREFUSED ...`. */
export function describeError(error: unknown): string {
  const parts: string[] = [];
  let current: unknown = error;
  for (let depth = 0; depth < 4 && current !== undefined && current !== null; depth++) {
    const text = current instanceof Error ? current.message : String(current);
    if (text && !parts.includes(text)) parts.push(text);
    current = current instanceof Error ? current.cause : undefined;
  }
  return parts.join(': ') || 'unknown error';
}
