// The public shapes of a Leaf run: its options, per-step progress and summaries, and result.
import type { Logger } from 'pino';
import type { Model } from './model.js';
import type { StopReason } from './protocol.js';
import type { Sandbox } from './sandbox.js';
import type { SandboxRecovery, Trajectory, TrajectoryEnvironment } from './trajectory.js';

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
  /** Recorded in the trajectory as `environment` (never sent to the model). */
  environment?: TrajectoryEnvironment;
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
