// The Model seam: one chat-completions request in, one assistant turn out.
import type { ChatMessage, AssistantMessage } from './messages.js';
import type { ToolSchema } from './protocol.js';

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
}
