// The Model seam: one chat-completions request in, one assistant turn out.
import type { ChatMessage, AssistantMessage } from './messages.js';
import type { ToolSchema } from './protocol.js';
import type { ModelEndpointRecord } from './trajectory.js';

export interface TokenUsage {
  promptTokens?: number;
  completionTokens?: number;
  totalTokens?: number;
}

export interface ModelResponse {
  /** Already reduced to the §1 whitelist; safe to append to history as is. */
  message: AssistantMessage;
  finishReason: string | null;
  usage?: TokenUsage;
  /** Wall time of the request, retries included. */
  latencyMs: number;
}

export interface Model {
  complete(
    messages: readonly ChatMessage[],
    tools: readonly ToolSchema[],
    signal?: AbortSignal,
  ): Promise<ModelResponse>;
  /**
   * Time spent so far waiting for capacity (a model slot), in ms: the loop does not count it
   * against its time budget.
   */
  waitedMs?(): number;
  /** Which servers answered so far, in order (recorded in the trajectory). */
  servedBy?(): ModelEndpointRecord[];
  /**
   * The loop has stopped and sends no more requests: capacity it holds (a model slot) may go
   * to another loop. Safe to call more than once; never throws.
   */
  release?(): Promise<void>;
}
