// Protocol constants of the Leaf harness that FrogNano-4B was trained in.
// Every string here is reproduced byte for byte from the protocol the model was trained on
// (docs/leaf-protocol.md); changing one changes what the model sees.

export const SYSTEM_PROMPT = [
  'You are a software-engineering agent working in a checked-out repository.',
  'Use the available tools to inspect files, make focused edits, and run commands.',
  'Solve the task, validate when practical, then give a brief final answer.',
].join('\n');

export const TOOL_NAMES = ['Read', 'Write', 'Edit', 'Glob', 'Bash'] as const;
export type ToolName = (typeof TOOL_NAMES)[number];

export interface ToolSchema {
  type: 'function';
  function: {
    name: ToolName;
    description: string;
    parameters: {
      type: 'object';
      properties: Record<
        string,
        { type: 'string' | 'integer' | 'number' | 'boolean'; description: string }
      >;
      required: string[];
    };
  };
}

// Property order inside each schema is part of the protocol: keep it.
export const TOOL_SCHEMAS: readonly ToolSchema[] = deepFreeze<ToolSchema[]>([
  {
    type: 'function',
    function: {
      name: 'Read',
      description: 'Read a text file. Returns numbered lines.',
      parameters: {
        type: 'object',
        properties: {
          file_path: { type: 'string', description: 'Path to the file to read.' },
          offset: { type: 'integer', description: 'Optional 1-based starting line.' },
          limit: { type: 'integer', description: 'Optional maximum number of lines.' },
        },
        required: ['file_path'],
      },
    },
  },
  {
    type: 'function',
    function: {
      name: 'Write',
      description: 'Write a complete file, creating parent directories when needed.',
      parameters: {
        type: 'object',
        properties: {
          file_path: { type: 'string', description: 'Path to write.' },
          content: { type: 'string', description: 'Full file contents.' },
        },
        required: ['file_path', 'content'],
      },
    },
  },
  {
    type: 'function',
    function: {
      name: 'Edit',
      description: 'Replace an exact string in a text file.',
      parameters: {
        type: 'object',
        properties: {
          file_path: { type: 'string', description: 'Path to edit.' },
          old_string: { type: 'string', description: 'Exact text to replace.' },
          new_string: { type: 'string', description: 'Replacement text.' },
          replace_all: {
            type: 'boolean',
            description: 'Replace every occurrence instead of requiring one match.',
          },
        },
        required: ['file_path', 'old_string', 'new_string'],
      },
    },
  },
  {
    type: 'function',
    function: {
      name: 'Glob',
      description: 'Find files by glob pattern.',
      parameters: {
        type: 'object',
        properties: {
          pattern: { type: 'string', description: 'Glob pattern, e.g. **/*.py.' },
          path: { type: 'string', description: 'Optional directory to search from.' },
        },
        required: ['pattern'],
      },
    },
  },
  {
    type: 'function',
    function: {
      name: 'Bash',
      description: 'Run a shell command in the repository workdir.',
      parameters: {
        type: 'object',
        properties: {
          command: { type: 'string', description: 'Command to run.' },
          description: { type: 'string', description: 'Short description of the command.' },
          timeout: { type: 'number', description: 'Optional timeout in seconds.' },
        },
        required: ['command'],
      },
    },
  },
]);

/** FrogNano's evaluated request configuration (leaf-protocol.md §2). */
export const DEFAULT_REQUEST = Object.freeze({
  model: 'microsoft/FrogNano-4B-2609',
  temperature: 0.6,
  maxCompletionTokens: 8192,
  parallelToolCalls: true,
  extraBody: Object.freeze({
    top_p: 0.95,
    top_k: 20,
    min_p: 0,
    presence_penalty: 0,
    repetition_penalty: 1.0,
    chat_template_kwargs: Object.freeze({ enable_thinking: true }),
  }),
});

export const DEFAULT_MAX_STEPS = 150;
export const DEFAULT_MAX_CONTEXT_TOKENS = 131072;
export const READ_OUTPUT_LIMIT = 20000;
export const BASH_OUTPUT_LIMIT = 30000;
export const GLOB_RESULT_LIMIT = 1000;
export const DEFAULT_BASH_TIMEOUT_SEC = 120;
export const DEFAULT_WORKDIR = '/testbed';

/** Exit reasons of one Leaf run (leaf-protocol.md §5). */
export const STOP_REASONS = [
  'agent',
  'max_turns',
  'max_time',
  'max_context_len',
  'max_tokens_per_turn',
  'llm_query_error',
  'tool_error',
  'cancelled',
] as const;
export type StopReason = (typeof STOP_REASONS)[number];

function deepFreeze<T>(value: T): T {
  if (value && typeof value === 'object') {
    for (const inner of Object.values(value)) deepFreeze(inner);
    Object.freeze(value);
  }
  return value;
}
