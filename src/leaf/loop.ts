// The Leaf agent loop (leaf-protocol.md §5): system + user, then per step one model query,
// its tool calls run in order, append-only history, the trajectory checkpointed after every
// step, and the patch captured after any stop but `cancelled`.
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import { z } from 'zod';
import { capturePatch } from './capture-patch.js';
import type { AssistantMessage, ToolMessage } from './messages.js';
import type { Model, ModelResponse } from './model.js';
import {
  DEFAULT_MAX_CONTEXT_TOKENS,
  DEFAULT_MAX_STEPS,
  DEFAULT_REQUEST,
  SYSTEM_PROMPT,
  TOOL_SCHEMAS,
  type StopReason,
} from './protocol.js';
import type { Sandbox } from './sandbox.js';
import { arrayJsonBytes, tokensFromBytes } from './token-estimate.js';
import { applyToolCallFallback } from './tool-call-fallback.js';
import { executeTool } from './tools.js';
import {
  TrajectoryRecorder,
  stepUsage,
  type Trajectory,
  type TrajectoryStep,
  type TrajectoryTail,
} from './trajectory.js';

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
  /** The last assistant content when the agent finished (`agent`); empty otherwise. */
  finalMessage: string;
  /** `git diff --binary` as UTF-8 text; empty when nothing changed or not captured. */
  patch: string;
  /** The exact patch bytes (files that are not UTF-8 survive only here). */
  patchBytes: Buffer;
  /** Why the patch could not be captured (the stop reason itself is kept). */
  patchError: string | null;
  /** True when the run ended on anything but `agent`: the patch is partial work. */
  partial: boolean;
  /** Model queries made (Leaf's n_steps). */
  nSteps: number;
  contextTokens: number;
  usage: LeafUsageTotals;
  steps: LeafStepSummary[];
  elapsedMs: number;
  toolCallFallbacks: number;
  /** Set when a trajectory write failed (the run itself went on). */
  trajectoryError: string | null;
}

const Limits = z.object({
  maxSteps: z.number().int().min(0),
  maxContextTokens: z.number().int().positive(),
  maxTokensPerTurn: z.number().int().positive(),
  timeBudgetMs: z.number().min(0).optional(),
});

const LENGTH_FINISH_REASONS = new Set(['length', 'max_tokens', 'max_new_tokens']);
const SUMMARY_TEXT_LIMIT = 200;
const MAX_TIMER_MS = 2 ** 31 - 1;
/**
 * How long past the run's deadline a tool call may still take before it is abandoned (and
 * its command killed). A Bash call's timeout is clamped to the deadline, so it normally
 * returns its timed-out observation well within this.
 */
export const TOOL_DEADLINE_GRACE_MS = 2000;
/**
 * How long past the run's deadline the patch capture may still take: enough for git on an
 * ordinary repository, not for hashing a file the agent blew up to many gigabytes.
 */
export const CAPTURE_DEADLINE_GRACE_MS = 20_000;

/** §5: the error text reads like a context overflow. */
export function isContextOverflowError(text: string): boolean {
  const lower = text.toLowerCase();
  return (
    lower.includes('context_length_exceeded') ||
    lower.includes('reduce the length') ||
    lower.includes('maximum context length') ||
    (lower.includes('context length') && lower.includes('exceed'))
  );
}

interface Stop {
  reason: StopReason;
  error: string | null;
  finalMessage: string;
}

export async function runLeaf(options: LeafRunOptions): Promise<LeafRunResult> {
  const limits = Limits.parse({
    maxSteps: options.maxSteps ?? DEFAULT_MAX_STEPS,
    maxContextTokens: options.maxContextTokens ?? DEFAULT_MAX_CONTEXT_TOKENS,
    maxTokensPerTurn: options.maxTokensPerTurn ?? DEFAULT_REQUEST.maxCompletionTokens,
    timeBudgetMs: options.timeBudgetMs,
  });
  const { model, sandbox, signal, logger } = options;
  const started = performance.now();
  const elapsedMs = (): number => performance.now() - started;
  const deadline = started + (limits.timeBudgetMs ?? Number.POSITIVE_INFINITY);
  // The budget's clock: time the model spent waiting for a slot does not count.
  const budgetNow = (): number => performance.now() - (model.waitedMs?.() ?? 0);

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

  const usage: LeafUsageTotals = {
    requests: 0,
    requestsWithoutUsage: 0,
    promptTokens: 0,
    completionTokens: 0,
  };
  const summaries: LeafStepSummary[] = [];
  let nSteps = 0;
  let contextTokens = recorder.historyTokenEstimate();
  let fallbacks = 0;
  let fallbackIds = 0;
  let trajectoryError: string | null = null;

  const tail = (
    stop: Stop | undefined,
    extra: { status: 'running' | 'finished'; patch: string | null; patchError: string | null },
  ): TrajectoryTail => ({
    n_steps: nSteps,
    exit_reason: stop?.reason ?? null,
    error: stop?.error ?? null,
    final_message: stop?.finalMessage ?? '',
    context_tokens: contextTokens,
    elapsed_sec: round3(elapsedMs() / 1000),
    output_patch: extra.patch,
    partial: stop ? stop.reason !== 'agent' : true,
    status: extra.status,
    budget: {
      max_steps: limits.maxSteps,
      max_context_tokens: limits.maxContextTokens,
      max_tokens_per_turn: limits.maxTokensPerTurn,
      time_budget_sec: limits.timeBudgetMs === undefined ? null : limits.timeBudgetMs / 1000,
    },
    usage: {
      requests: usage.requests,
      requests_without_usage: usage.requestsWithoutUsage,
      prompt_tokens: usage.promptTokens,
      completion_tokens: usage.completionTokens,
    },
    tool_call_fallbacks: fallbacks,
    patch_error: extra.patchError,
    ...(model.servedBy ? { model_endpoints: model.servedBy() } : {}),
    ...(model.waitedMs ? { model_wait_sec: round3(model.waitedMs() / 1000) } : {}),
  });

  const checkpoint = async (t: TrajectoryTail): Promise<void> => {
    try {
      await recorder.write(t);
    } catch (error) {
      // A full disk must not throw away the run: the result still carries everything.
      trajectoryError = describeError(error);
      logger?.warn(
        { instanceId: options.instanceId, error: trajectoryError },
        'trajectory write failed',
      );
    }
  };

  const notify = (progress: LeafStepProgress): void => {
    try {
      options.onStep?.(progress);
    } catch (error) {
      logger?.warn({ error: describeError(error) }, 'onStep callback failed');
    }
  };

  // A record exists from the start, so a run stuck in its first request is still visible.
  await checkpoint(tail(undefined, { status: 'running', patch: null, patchError: null }));
  let stop: Stop | undefined;
  for (let index = 0; index < limits.maxSteps && !stop; index++) {
    if (signal?.aborted) {
      stop = { reason: 'cancelled', error: null, finalMessage: '' };
      break;
    }
    if (budgetNow() >= deadline) {
      stop = { reason: 'max_time', error: null, finalMessage: '' };
      break;
    }

    const query = await queryModel(model, recorder, signal, deadline, budgetNow);
    if (!query.ok) {
      stop = query.stop;
      break;
    }
    const response = query.response;
    nSteps++;
    usage.requests++;
    if (response.usage) {
      usage.promptTokens += response.usage.promptTokens ?? 0;
      usage.completionTokens += response.usage.completionTokens ?? 0;
    } else {
      usage.requestsWithoutUsage++;
    }

    const fallback = applyToolCallFallback(response.message, fallbackIds);
    const message: AssistantMessage = fallback.message;
    if (fallback.applied) {
      fallbacks++;
      fallbackIds += message.tool_calls?.length ?? 0;
      logger?.info(
        { instanceId: options.instanceId, step: index, source: fallback.source },
        'tool calls recovered from text',
      );
    }
    recorder.appendMessage(message);
    contextTokens = contextTokensAfter(response, recorder);

    const step: TrajectoryStep = {
      step: index,
      assistant: message,
      observations: [],
      finish_reason: response.finishReason,
      usage: stepUsage(response.usage),
      model_latency_ms: round3(response.latencyMs),
      tool_latency_ms: [],
      tool_call_fallback: fallback.applied,
      context_tokens: contextTokens,
      elapsed_sec: 0,
    };
    if (fallback.applied) step.raw_assistant = response.message;
    const summary: LeafStepSummary = {
      step: index,
      tools: [],
      modelMs: response.latencyMs,
      toolMs: 0,
    };
    summaries.push(summary);
    const calls = message.tool_calls ?? [];

    if (response.finishReason !== null && LENGTH_FINISH_REASONS.has(response.finishReason)) {
      // A cut-off turn's tool calls may be cut off too: never run them.
      stop = {
        reason: classifyLengthFinish(response, contextTokens, limits),
        error: null,
        finalMessage: '',
      };
    } else if (calls.length === 0) {
      stop = { reason: 'agent', error: null, finalMessage: message.content ?? '' };
    } else {
      let toolBytes = 0;
      let toolCount = 0;
      for (const call of calls) {
        if (signal?.aborted) {
          stop = { reason: 'cancelled', error: null, finalMessage: '' };
          break;
        }
        if (budgetNow() >= deadline) {
          stop = { reason: 'max_time', error: null, finalMessage: '' };
          break;
        }
        const toolStarted = performance.now();
        let observation: string;
        try {
          const wallDeadline = deadline + (performance.now() - budgetNow());
          const outcome = await runToolCall(sandbox, call.function, signal, wallDeadline);
          if (outcome === DEADLINE_PASSED) {
            stop = { reason: 'max_time', error: null, finalMessage: '' };
            logger?.warn(
              { instanceId: options.instanceId, step: index, tool: call.function.name },
              'tool call outlived the run deadline; abandoned',
            );
            break;
          }
          observation = outcome;
        } catch (error) {
          stop =
            error instanceof AbortedError
              ? { reason: 'cancelled', error: null, finalMessage: '' }
              : { reason: 'tool_error', error: describeError(error), finalMessage: '' };
          if (stop.reason === 'tool_error') {
            logger?.warn(
              {
                instanceId: options.instanceId,
                step: index,
                tool: call.function.name,
                error: stop.error,
              },
              'sandbox failed',
            );
          }
          break;
        }
        const toolMs = performance.now() - toolStarted;
        const toolMessage: ToolMessage = {
          role: 'tool',
          tool_call_id: call.id,
          content: observation,
        };
        toolBytes += recorder.appendMessage(toolMessage);
        toolCount++;
        step.observations.push({ tool: call.function.name, observation });
        step.tool_latency_ms.push(round3(toolMs));
        summary.toolMs += toolMs;
        summary.tools.push({
          name: call.function.name,
          args: shorten(call.function.arguments),
          outcome: shorten(firstLine(observation)),
        });
      }
      if (toolCount > 0) contextTokens += tokensFromBytes(arrayJsonBytes(toolBytes, toolCount));
      step.context_tokens = contextTokens;
      if (!stop && contextTokens >= limits.maxContextTokens) {
        stop = { reason: 'max_context_len', error: null, finalMessage: '' };
      }
    }

    step.elapsed_sec = round3(elapsedMs() / 1000);
    recorder.commitStep(step);
    await checkpoint(tail(stop, { status: 'running', patch: null, patchError: null }));
    notify({
      step: nSteps,
      maxSteps: limits.maxSteps,
      tools: calls.map((call) => call.function.name),
      elapsedMs: elapsedMs(),
      contextTokens,
    });
  }
  const final: Stop = stop ?? { reason: 'max_turns', error: null, finalMessage: '' };

  let patchBytes: Buffer = Buffer.alloc(0);
  let patchText: string | null = null;
  let patchError: string | null = null;
  if (final.reason !== 'cancelled') {
    // Record the stop before the (possibly slow) capture, so a crash there loses nothing else.
    await checkpoint(tail(final, { status: 'running', patch: null, patchError: null }));
    try {
      patchBytes = await capturePatch(
        sandbox,
        limits.timeBudgetMs === undefined
          ? {}
          : {
              deadline:
                Date.now() + Math.max(0, deadline - budgetNow()) + CAPTURE_DEADLINE_GRACE_MS,
            },
      );
      patchText = patchBytes.toString('utf8');
    } catch (error) {
      patchError = describeError(error);
      logger?.warn({ instanceId: options.instanceId, error: patchError }, 'patch capture failed');
    }
  }
  const finalTail = tail(final, { status: 'finished', patch: patchText, patchError });
  await checkpoint(finalTail);
  logger?.info(
    { instanceId: options.instanceId, exitReason: final.reason, steps: nSteps, contextTokens },
    'leaf run finished',
  );

  return {
    trajectory: recorder.toRecord(finalTail),
    exitReason: final.reason,
    error: final.error,
    finalMessage: final.finalMessage,
    patch: patchText ?? '',
    patchBytes,
    patchError,
    partial: final.reason !== 'agent',
    nSteps,
    contextTokens,
    usage,
    steps: summaries,
    elapsedMs: elapsedMs(),
    toolCallFallbacks: fallbacks,
    trajectoryError,
  };
}

const DEADLINE_PASSED = Symbol('deadline passed');

/**
 * One tool call, raced against the run's deadline (**Ours**): a Bash timeout is clamped to the
 * time left, and a call still running a grace period after the deadline is aborted and
 * abandoned. The caller's cancel aborts the call too (its command is killed).
 */
async function runToolCall(
  sandbox: Sandbox,
  call: { name: string; arguments: string },
  signal: AbortSignal | undefined,
  deadline: number,
): Promise<string | typeof DEADLINE_PASSED> {
  const controller = new AbortController();
  const onAbort = (): void => controller.abort();
  signal?.addEventListener('abort', onAbort, { once: true });
  const timeLeftMs = deadline - performance.now();
  const finite = Number.isFinite(timeLeftMs);
  const task = executeTool(sandbox, call.name, call.arguments, {
    signal: controller.signal,
    ...(finite ? { timeLeftMs } : {}),
  });
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<typeof DEADLINE_PASSED>((resolve) => {
    const wait = timeLeftMs + TOOL_DEADLINE_GRACE_MS;
    if (finite && wait <= MAX_TIMER_MS) {
      timer = setTimeout(() => resolve(DEADLINE_PASSED), Math.max(0, wait));
    }
  });
  try {
    const first = await raceAbort(Promise.race([task, expired]), signal);
    if (first === DEADLINE_PASSED) {
      // The abandoned call may still fail later; that is expected and must stay quiet.
      task.catch(() => undefined);
      controller.abort();
    }
    return first;
  } finally {
    clearTimeout(timer);
    signal?.removeEventListener('abort', onAbort);
    if (signal?.aborted) controller.abort();
  }
}

type QueryOutcome = { ok: true; response: ModelResponse } | { ok: false; stop: Stop };

async function queryModel(
  model: Model,
  recorder: TrajectoryRecorder,
  signal: AbortSignal | undefined,
  deadline: number,
  budgetNow: () => number,
): Promise<QueryOutcome> {
  // One controller per request: the caller's cancel and the wall-clock deadline both end it.
  const controller = new AbortController();
  const onAbort = (): void => controller.abort();
  signal?.addEventListener('abort', onAbort, { once: true });
  let deadlineHit = false;
  let timer: NodeJS.Timeout | undefined;
  const arm = (atLeastMs: number): void => {
    const remaining = deadline - budgetNow();
    // setTimeout fires at once beyond 2^31-1 ms; such a far deadline is left to the per-step check.
    if (remaining > MAX_TIMER_MS) return;
    const waited = model.waitedMs?.() ?? 0;
    timer = setTimeout(
      () => {
        // The model waited for a slot meanwhile: that time moved the deadline on.
        if ((model.waitedMs?.() ?? 0) > waited && deadline - budgetNow() > 0) return arm(250);
        deadlineHit = true;
        controller.abort();
      },
      Math.max(atLeastMs, remaining),
    );
  };
  arm(0);
  try {
    // Raced as well: the SDK does not wake from a retry back-off when aborted.
    const response = await raceAbort(
      model.complete(recorder.messages, TOOL_SCHEMAS, controller.signal),
      controller.signal,
    );
    return { ok: true, response };
  } catch (error) {
    if (signal?.aborted)
      return { ok: false, stop: { reason: 'cancelled', error: null, finalMessage: '' } };
    if (deadlineHit)
      return { ok: false, stop: { reason: 'max_time', error: null, finalMessage: '' } };
    const text = describeError(error);
    return {
      ok: false,
      stop: isContextOverflowError(text)
        ? { reason: 'max_context_len', error: null, finalMessage: '' }
        : { reason: 'llm_query_error', error: text, finalMessage: '' },
    };
  } finally {
    if (timer) clearTimeout(timer);
    signal?.removeEventListener('abort', onAbort);
  }
}

/** Context tokens := usage.total_tokens, else prompt + completion, else the estimate. */
function contextTokensAfter(response: ModelResponse, recorder: TrajectoryRecorder): number {
  const usage = response.usage;
  if (usage?.totalTokens !== undefined) return usage.totalTokens;
  if (usage?.promptTokens !== undefined && usage.completionTokens !== undefined) {
    return usage.promptTokens + usage.completionTokens;
  }
  return recorder.historyTokenEstimate();
}

function classifyLengthFinish(
  response: ModelResponse,
  contextTokens: number,
  limits: { maxContextTokens: number; maxTokensPerTurn: number },
): StopReason {
  const prompt = response.usage?.promptTokens;
  const completion = response.usage?.completionTokens;
  const used =
    prompt !== undefined && completion !== undefined ? prompt + completion : contextTokens;
  if (used >= limits.maxContextTokens) return 'max_context_len';
  if (completion !== undefined && completion >= limits.maxTokensPerTurn)
    return 'max_tokens_per_turn';
  return 'max_context_len';
}

class AbortedError extends Error {
  constructor() {
    super('aborted');
    this.name = 'AbortedError';
  }
}

function raceAbort<T>(promise: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return promise;
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => {
      // The abandoned work may still fail later; that is expected and must stay quiet.
      promise.catch(() => undefined);
      reject(new AbortedError());
    };
    if (signal.aborted) {
      onAbort();
      return;
    }
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error);
      },
    );
  });
}

/** The message plus its causes, e.g. `Connection error.: fetch failed: connect ECONNREFUSED ...`. */
function describeError(error: unknown): string {
  const parts: string[] = [];
  let current: unknown = error;
  for (let depth = 0; depth < 4 && current !== undefined && current !== null; depth++) {
    const text = current instanceof Error ? current.message : String(current);
    if (text && !parts.includes(text)) parts.push(text);
    current = current instanceof Error ? current.cause : undefined;
  }
  return parts.join(': ') || 'unknown error';
}

function firstLine(text: string): string {
  const newline = text.indexOf('\n');
  return newline === -1 ? text : text.slice(0, newline);
}

function shorten(text: string): string {
  return text.length > SUMMARY_TEXT_LIMIT ? `${text.slice(0, SUMMARY_TEXT_LIMIT)}…` : text;
}

function round3(value: number): number {
  return Math.round(value * 1000) / 1000;
}
