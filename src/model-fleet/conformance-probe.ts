// `frognano doctor --probe`: one small request, exactly as the Leaf loop sends them (the five
// tools, §2's settings), that asks for a tool call; then how the server answered: the call as
// structured `tool_calls` (the tool-call parser works) or only as text, and the reasoning in
// its own field (the reasoning parser works) or left in the content.
import { createOpenAIModel, type ModelConfig } from '../leaf/openai-model.js';
import { applyToolCallFallback } from '../leaf/tool-call-fallback.js';
import { SYSTEM_PROMPT, TOOL_SCHEMAS } from '../leaf/protocol.js';

export const PROBE_TASK =
  'Run the command `echo frognano-probe` with the Bash tool. Do nothing else.';

export interface ProbeResult {
  /** structured: in `tool_calls`; text: only as a `<tool_call>` block in the text; none: no call. */
  toolCalls: 'structured' | 'text' | 'none';
  /** The tool it called, when it did. */
  tool?: string;
  /** separated: in `reasoning_content` / `reasoning`; in_content: `<think>` left in the content. */
  reasoning: 'separated' | 'in_content' | 'none';
  /** The field(s) the reasoning came in, when separated. */
  reasoningField?: string;
  finishReason: string | null;
  completionTokens?: number;
}

export async function probeEndpoint(config: ModelConfig): Promise<ProbeResult> {
  // One try, and no ten-minute wait: a doctor answers in a minute or says why not.
  const model = createOpenAIModel({
    ...config,
    maxRetries: 0,
    timeoutMs: Math.min(config.timeoutMs, 180_000),
  });
  const response = await model.complete(
    [
      { role: 'system', content: SYSTEM_PROMPT },
      { role: 'user', content: PROBE_TASK },
    ],
    TOOL_SCHEMAS,
  );
  const { message } = response;
  const structured = message.tool_calls?.[0];
  const recovered = structured ? undefined : applyToolCallFallback(message);
  const fields = (['reasoning_content', 'reasoning'] as const).filter((f) => message[f]);
  const thinkInContent = /<\/?think>/.test(message.content ?? '');
  return {
    toolCalls: structured ? 'structured' : recovered?.applied ? 'text' : 'none',
    ...(structured
      ? { tool: structured.function.name }
      : recovered?.applied
        ? { tool: recovered.message.tool_calls?.[0]?.function.name ?? '?' }
        : {}),
    reasoning: fields.length > 0 ? 'separated' : thinkInContent ? 'in_content' : 'none',
    ...(fields.length > 0 ? { reasoningField: fields.join(' and ') } : {}),
    finishReason: response.finishReason,
    ...(response.usage?.completionTokens !== undefined
      ? { completionTokens: response.usage.completionTokens }
      : {}),
  };
}
