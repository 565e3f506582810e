// The run record of leaf-protocol.md §6, Leaf-compatible so results compare with FrogNano's own
// evaluations, plus our extras (timings, usage per request, fallback flag, budgets).
// Written atomically after every step and at the end.
import { randomBytes } from 'node:crypto';
import { mkdir, rename, unlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { z } from 'zod';
import type { ChatMessage } from './messages.js';
import { STOP_REASONS, type ToolSchema } from './protocol.js';
import { arrayJsonBytes, tokensFromBytes } from './token-estimate.js';

export const TRAJECTORY_FORMAT = 'leaf-function-calling';
/** Upstream's exit_reason of a checkpoint written while the run goes on. */
export const RUNNING_EXIT_REASON = 'running';

const ToolCallRecord = z.object({
  id: z.string(),
  type: z.literal('function'),
  function: z.object({ name: z.string(), arguments: z.string() }),
});

export const AssistantRecord = z.object({
  role: z.literal('assistant'),
  content: z.string().nullable(),
  tool_calls: z.array(ToolCallRecord).optional(),
  reasoning_content: z.string().optional(),
  reasoning: z.string().optional(),
});

export const MessageRecord = z.discriminatedUnion('role', [
  z.object({ role: z.literal('system'), content: z.string() }),
  z.object({ role: z.literal('user'), content: z.string() }),
  AssistantRecord,
  z.object({ role: z.literal('tool'), tool_call_id: z.string(), content: z.string() }),
]);

export const StepUsage = z.object({
  prompt_tokens: z.number().nullable(),
  completion_tokens: z.number().nullable(),
  total_tokens: z.number().nullable(),
});
export type StepUsage = z.infer<typeof StepUsage>;

export const TrajectoryStep = z.object({
  /** 0-based, as in Leaf. */
  step: z.number().int().min(0),
  assistant: AssistantRecord,
  observations: z.array(z.object({ tool: z.string(), observation: z.string() })),
  // Ours
  finish_reason: z.string().nullable(),
  usage: StepUsage.nullable(),
  model_latency_ms: z.number(),
  /** One per observation, in order. */
  tool_latency_ms: z.array(z.number()),
  tool_call_fallback: z.boolean(),
  /** The message as the server sent it, when the fallback rewrote it. */
  raw_assistant: AssistantRecord.optional(),
  /** The context count after this step (usage or estimate, plus the tool messages). */
  context_tokens: z.number(),
  elapsed_sec: z.number(),
});
export type TrajectoryStep = z.infer<typeof TrajectoryStep>;

export const TrajectoryBudget = z.object({
  max_steps: z.number().int(),
  max_context_tokens: z.number().int(),
  max_tokens_per_turn: z.number().int(),
  /** null: no wall-clock budget. */
  time_budget_sec: z.number().nullable(),
});
export type TrajectoryBudget = z.infer<typeof TrajectoryBudget>;

export const TrajectoryUsage = z.object({
  requests: z.number().int(),
  requests_without_usage: z.number().int(),
  prompt_tokens: z.number(),
  completion_tokens: z.number(),
});
export type TrajectoryUsage = z.infer<typeof TrajectoryUsage>;

/**
 * Ours: one server that answered (or failed) an agent loop, in the order the loop used them;
 * what it said of itself, so a run can be traced to the weights and server that produced it.
 */
export const ModelEndpointRecord = z.object({
  /** Derived from its URL, without credentials. */
  endpoint: z.string(),
  /** The steps it answered (0-based, as `steps`); null when it answered none. */
  first_step: z.number().int().nullable(),
  last_step: z.number().int().nullable(),
  requests: z.number().int(),
  /** Why the loop left it (a request that failed after the client's retries); null otherwise. */
  error: z.string().nullable(),
  /** From `GET /models`: the served id, `root` (the weights), `max_model_len`, `owned_by`. */
  model_id: z.string().nullable(),
  root: z.string().nullable(),
  max_model_len: z.number().nullable(),
  owned_by: z.string().nullable(),
  /** `GET /version` (vLLM) or `/get_server_info` (SGLang), where the server has one. */
  server_version: z.string().nullable(),
});
export type ModelEndpointRecord = z.infer<typeof ModelEndpointRecord>;

/** Ours: one loss of the sandbox, in the trajectory's `sandbox_recoveries`. */
export const SandboxRecovery = z.object({
  /** The step whose tool call found the sandbox gone; null when the patch capture did. */
  step: z.number().int().nullable(),
  /** That call's tool, or `patch capture`. */
  tool: z.string(),
  /** Seconds into the run when the loss was found. */
  at_sec: z.number(),
  /** Why the sandbox counted as lost (the container's state). */
  reason: z.string(),
  /** Earlier calls replayed on the rebuilt sandbox (as far as it got). */
  replayed_calls: z.number().int(),
  duration_sec: z.number(),
  /** True when the sandbox was rebuilt and every replay matched: the loop went on. */
  rebuilt: z.boolean(),
});
export type SandboxRecovery = z.infer<typeof SandboxRecovery>;

export const Trajectory = z.object({
  trajectory_format: z.literal(TRAJECTORY_FORMAT),
  trajectory_id: z.string(),
  instance_id: z.string(),
  seed: z.number().nullable(),
  messages: z.array(MessageRecord),
  tools: z.array(z.unknown()),
  steps: z.array(TrajectoryStep),
  n_steps: z.number().int(),
  /**
   * `running` in checkpoints while the run is in progress, as upstream writes them (null in
   * records written before issue 26).
   */
  exit_reason: z.enum([...STOP_REASONS, RUNNING_EXIT_REASON]).nullable(),
  error: z.string().nullable(),
  final_message: z.string(),
  context_tokens: z.number(),
  elapsed_sec: z.number(),
  /** null while running, after `cancelled`, or when the capture failed. */
  output_patch: z.string().nullable(),
  /** As upstream: true in checkpoints, false in the final record. */
  partial: z.boolean(),
  // Ours
  /**
   * The run ended on anything but `agent` (a limit, an error, a cancel): its patch is partial
   * work. Absent in records written before issue 26 (they said so in `partial`).
   */
  ended_on_limit: z.boolean().optional(),
  status: z.enum(['running', 'finished']),
  budget: TrajectoryBudget,
  usage: TrajectoryUsage,
  tool_call_fallbacks: z.number().int(),
  patch_error: z.string().nullable(),
  /** Set when the model tells who answered (a fleet of endpoints). */
  model_endpoints: z.array(ModelEndpointRecord).optional(),
  /** Time spent waiting for a model slot: not counted against the time budget. */
  model_wait_sec: z.number().optional(),
  /** Each time the sandbox was lost: rebuilt and replayed, or not (absent before issue 26). */
  sandbox_recoveries: z.array(SandboxRecovery).optional(),
});
export type Trajectory = z.infer<typeof Trajectory>;

export interface TrajectoryHeader {
  trajectoryId: string;
  instanceId: string;
  seed: number | null;
  tools: readonly ToolSchema[];
}

/** The fields after `steps`, in document order. */
export type TrajectoryTail = Omit<
  Trajectory,
  'trajectory_format' | 'trajectory_id' | 'instance_id' | 'seed' | 'messages' | 'tools' | 'steps'
>;

/**
 * Holds the history and the steps, each serialized once when added, so a checkpoint is a
 * string join plus one write instead of re-encoding the whole (up to ~128K-token) history on
 * every step. The same cached encodings give the running byte count for the token estimate.
 */
export class TrajectoryRecorder {
  readonly messages: ChatMessage[] = [];
  readonly steps: TrajectoryStep[] = [];
  private readonly messageJson: string[] = [];
  private readonly stepJson: string[] = [];
  private messageBytes = 0;
  private readonly head: string;
  private readonly toolsJson: string;
  private dirReady = false;

  constructor(
    private readonly header: TrajectoryHeader,
    private readonly filePath?: string,
  ) {
    this.head =
      `{"trajectory_format":${JSON.stringify(TRAJECTORY_FORMAT)}` +
      `,"trajectory_id":${JSON.stringify(header.trajectoryId)}` +
      `,"instance_id":${JSON.stringify(header.instanceId)}` +
      `,"seed":${JSON.stringify(header.seed)}`;
    this.toolsJson = JSON.stringify(header.tools);
  }

  /** Appends to history; returns the UTF-8 size of the message's compact JSON. */
  appendMessage(message: ChatMessage): number {
    const json = JSON.stringify(message);
    const bytes = Buffer.byteLength(json, 'utf8');
    this.messages.push(message);
    this.messageJson.push(json);
    this.messageBytes += bytes;
    return bytes;
  }

  /** ceil(UTF-8 bytes of the compact JSON of the whole history / 4), without re-encoding it. */
  historyTokenEstimate(): number {
    return tokensFromBytes(arrayJsonBytes(this.messageBytes, this.messages.length));
  }

  /** Adds a finished step (it must not change afterwards). */
  commitStep(step: TrajectoryStep): void {
    this.steps.push(step);
    this.stepJson.push(JSON.stringify(step));
  }

  toJson(tail: TrajectoryTail): string {
    return (
      `${this.head},"messages":[${this.messageJson.join(',')}]` +
      `,"tools":${this.toolsJson},"steps":[${this.stepJson.join(',')}],` +
      JSON.stringify(tail).slice(1)
    );
  }

  toRecord(tail: TrajectoryTail): Trajectory {
    return {
      trajectory_format: TRAJECTORY_FORMAT,
      trajectory_id: this.header.trajectoryId,
      instance_id: this.header.instanceId,
      seed: this.header.seed,
      messages: [...this.messages],
      tools: [...this.header.tools],
      steps: [...this.steps],
      ...tail,
    };
  }

  /** Writes the record atomically (temp file, then rename); a no-op without a path. */
  async write(tail: TrajectoryTail): Promise<void> {
    if (!this.filePath) return;
    if (!this.dirReady) {
      await mkdir(path.dirname(this.filePath), { recursive: true });
      this.dirReady = true;
    }
    await writeFileAtomic(this.filePath, this.toJson(tail));
  }
}

export async function writeFileAtomic(filePath: string, data: string): Promise<void> {
  // Same directory, so the rename never crosses file systems; a reader sees old or new, whole.
  const temp = `${filePath}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  try {
    await writeFile(temp, data);
    await rename(temp, filePath);
  } catch (error) {
    await unlink(temp).catch(() => undefined);
    throw error;
  }
}

export function stepUsage(
  usage: { promptTokens?: number; completionTokens?: number; totalTokens?: number } | undefined,
): StepUsage | null {
  if (!usage) return null;
  return {
    prompt_tokens: usage.promptTokens ?? null,
    completion_tokens: usage.completionTokens ?? null,
    total_tokens: usage.totalTokens ?? null,
  };
}

/** Milliseconds and seconds in the trajectory keep three decimals. */
export function round3(value: number): number {
  return Math.round(value * 1000) / 1000;
}
