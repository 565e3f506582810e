// leaf-protocol.md §7 (Ours): a server sometimes leaves Qwen's tool call as text in
// `content` or in the reasoning field instead of parsing it into `tool_calls` (wrong or
// missing --tool-call-parser, or a call written inside an unterminated <think>). We parse
// such blocks ourselves so the run does not end with `agent` on what was really a call.
//
// What goes into history: the REWRITTEN message (blocks removed from the field they were in,
// `tool_calls` set), not the raw one. Why: (1) every tool message must answer a tool_call_id
// of the assistant message before it, or servers reject or mis-render the next request;
// (2) the chat template renders `tool_calls` back into the very `<tool_call>` markup the model
// wrote, so keeping the raw text as well would show the model its call twice; (3) this is
// exactly what a correctly configured server would have returned, i.e. what the model saw in
// training. The raw message is kept in the trajectory step for audit.
import type { AssistantMessage, ToolCall } from './messages.js';
import { TOOL_SCHEMAS } from './protocol.js';

export type FallbackSource = 'content' | 'reasoning_content' | 'reasoning';

export interface FallbackResult {
  /** The message to append to history: the input itself when nothing was found. */
  message: AssistantMessage;
  /** True when tool calls were recovered from text. */
  applied: boolean;
  /** The field the blocks were taken from (when applied). */
  source?: FallbackSource;
}

// An unterminated block at the very end still counts: generation may stop right after
// `</function>` when `</tool_call>` is a stop string.
const BLOCK = /<tool_call>([\s\S]*?)(?:<\/tool_call>|$)/g;
const FUNCTION = /<function=([^>\n]*)>([\s\S]*?)(?:<\/function>|$)/;
const PARAMETER =
  /<parameter=([^>\n]*)>([\s\S]*?)(?:<\/parameter>|(?=<parameter=)|(?=<\/function>)|$)/g;

type ParamType = 'string' | 'integer' | 'number' | 'boolean';

/**
 * When `tool_calls` is empty and `content`, else `reasoning_content`, else `reasoning`
 * holds Qwen `<tool_call>` blocks (XML or JSON form), returns the message rewritten with
 * those calls in `tool_calls` (ids `call_fallback_<n>` counting from `firstIndex`).
 */
export function applyToolCallFallback(message: AssistantMessage, firstIndex = 0): FallbackResult {
  if (message.tool_calls && message.tool_calls.length > 0) return { message, applied: false };
  const fields: FallbackSource[] = ['content', 'reasoning_content', 'reasoning'];
  for (const field of fields) {
    const text = message[field];
    if (typeof text !== 'string' || !text.includes('<tool_call>')) continue;
    const extracted = extractToolCalls(text, firstIndex);
    if (extracted.calls.length === 0) continue;

    const rewritten: AssistantMessage = {
      role: 'assistant',
      content: field === 'content' ? nonEmpty(extracted.rest) : message.content,
      tool_calls: extracted.calls,
    };
    for (const reasoningField of ['reasoning_content', 'reasoning'] as const) {
      const value = message[reasoningField];
      if (value === undefined) continue;
      // Servers that send both reasoning fields send the same text: strip the blocks from both.
      const kept =
        field !== 'content' && (reasoningField === field || value === text)
          ? nonEmpty(extracted.rest)
          : value;
      if (kept) rewritten[reasoningField] = kept;
    }
    return { message: rewritten, applied: true, source: field };
  }
  return { message, applied: false };
}

/** Parses every well-formed block; malformed ones stay in the remaining text. */
export function extractToolCalls(
  text: string,
  firstIndex = 0,
): { calls: ToolCall[]; rest: string } {
  const calls: ToolCall[] = [];
  const rest = text.replace(BLOCK, (whole, body: string) => {
    const parsed = parseBlock(body);
    if (!parsed) return whole;
    calls.push({
      id: `call_fallback_${firstIndex + calls.length}`,
      type: 'function',
      function: parsed,
    });
    return '';
  });
  return { calls, rest };
}

function parseBlock(body: string): { name: string; arguments: string } | undefined {
  const trimmed = body.trim();
  if (trimmed.startsWith('{')) return parseJsonBlock(trimmed);
  const fn = FUNCTION.exec(body);
  if (!fn) return undefined;
  const name = fn[1]!.trim();
  if (name === '') return undefined;
  const types = parameterTypes(name);
  const args: Record<string, unknown> = {};
  for (const match of fn[2]!.matchAll(PARAMETER)) {
    const key = match[1]!.trim();
    if (key === '') continue;
    args[key] = convertValue(stripOneNewline(match[2]!), types[key]);
  }
  return { name, arguments: JSON.stringify(args) };
}

function parseJsonBlock(text: string): { name: string; arguments: string } | undefined {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined;
  const record = value as Record<string, unknown>;
  if (typeof record.name !== 'string' || record.name.trim() === '') return undefined;
  const args = record.arguments ?? record.parameters ?? {};
  // A string is already the raw JSON argument text (the API's own representation).
  return {
    name: record.name.trim(),
    arguments: typeof args === 'string' ? args : JSON.stringify(args),
  };
}

function parameterTypes(toolName: string): Record<string, ParamType> {
  const schema = TOOL_SCHEMAS.find((tool) => tool.function.name === toolName);
  const types: Record<string, ParamType> = {};
  if (!schema) return types;
  for (const [key, property] of Object.entries(schema.function.parameters.properties)) {
    types[key] = property.type;
  }
  return types;
}

/** Qwen writes `<parameter=k>\nvalue\n</parameter>`: the newlines are markup, not value. */
function stripOneNewline(value: string): string {
  let out = value;
  if (out.startsWith('\n')) out = out.slice(1);
  if (out.endsWith('\n')) out = out.slice(0, -1);
  return out;
}

/**
 * To the schema's type, as vLLM's qwen3_coder parser does. A value that does not fit its type
 * stays a string, so the tool reports its own error (e.g. Python's int() message), just as
 * when the server parsed the call. Unknown tools and parameters keep strings.
 */
function convertValue(raw: string, type: ParamType | undefined): unknown {
  if (type === undefined || type === 'string') return raw;
  const trimmed = raw.trim();
  if (trimmed.toLowerCase() === 'null') return null;
  if (type === 'integer') return /^[+-]?\d+$/.test(trimmed) ? Number(trimmed) : raw;
  if (type === 'number') {
    const number = Number(trimmed);
    return trimmed !== '' && Number.isFinite(number) ? number : raw;
  }
  const lower = trimmed.toLowerCase();
  if (lower === 'true') return true;
  if (lower === 'false') return false;
  return raw;
}

/** The remaining text, or null when only whitespace is left. Trailing whitespace before a removed block is markup spacing. */
function nonEmpty(text: string): string | null {
  const trimmed = text.trimEnd();
  return trimmed.trim() === '' ? null : trimmed;
}
