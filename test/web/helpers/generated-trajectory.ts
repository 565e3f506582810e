// A synthetic but schema-valid Leaf trajectory of any length and size, for the run page's bench
// (150 steps, 128K tokens) and for tests that need a trajectory without running a model.
import { Trajectory, TRAJECTORY_FORMAT } from '../../../src/leaf/trajectory.js';
import { TOOL_SCHEMAS } from '../../../src/leaf/protocol.js';

type Step = Trajectory['steps'][number];
type Message = Trajectory['messages'][number];

const CODE_LINE = (i: number) =>
  `${i}. def handler_${i}(request, *, retries=3):  # parses the payload and retries on 5xx`;
const LOG_LINE = (i: number) =>
  `tests/test_module_${i % 17}.py::test_case_${i} PASSED                                    [${i % 100}%]`;

/** Observation text of about `chars` characters. */
function blob(kind: 'code' | 'log', chars: number, seed: number): string {
  const lines: string[] = [];
  let size = 0;
  for (let i = 1; size < chars; i++) {
    const line = kind === 'code' ? CODE_LINE(seed + i) : LOG_LINE(seed + i);
    lines.push(line);
    size += line.length + 1;
  }
  return lines.join('\n');
}

export function generateTrajectory(options: {
  steps: number;
  /** Approximate context size at the end (token = 4 bytes of message JSON, as Leaf counts). */
  tokens: number;
  status?: 'running' | 'finished';
}): Trajectory {
  // Four steps in five carry a long observation; each step adds ~300 bytes besides it.
  const perStepChars = Math.max(
    200,
    Math.floor((options.tokens * 4 - options.steps * 300) / (options.steps * 0.8)),
  );
  const messages: Message[] = [
    { role: 'system', content: 'You are a coding agent.' },
    { role: 'user', content: 'Fix the flaky retry logic in the HTTP handler.' },
  ];
  const steps: Step[] = [];
  let elapsed = 0;
  let context = 400;
  for (let i = 0; i < options.steps; i++) {
    const last = i === options.steps - 1;
    const kind = i % 5;
    const id = `call_${i}`;
    const call =
      kind === 0
        ? { name: 'Bash', args: { command: `python3 -m pytest -q tests/ -k case_${i}` } }
        : kind === 1
          ? { name: 'Read', args: { file_path: `src/module_${i % 23}.py` } }
          : kind === 2
            ? {
                name: 'Edit',
                args: {
                  file_path: `src/module_${i % 23}.py`,
                  old_string: `retries=3`,
                  new_string: `retries=${i}`,
                },
              }
            : kind === 3
              ? { name: 'Glob', args: { pattern: `src/**/*_${i % 7}.py` } }
              : { name: 'Bash', args: { command: `grep -rn "handler_${i}" src | head -50` } };
    const observation = last
      ? ''
      : kind === 2
        ? `Edited src/module_${i % 23}.py (1 replacement).`
        : blob(kind === 1 ? 'code' : 'log', perStepChars, i * 1000);
    const assistant: Step['assistant'] = last
      ? { role: 'assistant', content: 'The retry logic is fixed and the tests pass.' }
      : {
          role: 'assistant',
          content: null,
          reasoning_content: `Step ${i}: look at handler_${i} next, the retries look off by one.`,
          tool_calls: [
            {
              id,
              type: 'function',
              function: { name: call.name, arguments: JSON.stringify(call.args) },
            },
          ],
        };
    messages.push(assistant);
    if (!last) messages.push({ role: 'tool', tool_call_id: id, content: observation });
    context += Math.ceil((observation.length + 300) / 4);
    elapsed += 2.5;
    steps.push({
      step: i,
      assistant,
      observations: last ? [] : [{ tool: call.name, observation }],
      finish_reason: last ? 'stop' : 'tool_calls',
      usage: { prompt_tokens: context, completion_tokens: 60, total_tokens: context + 60 },
      model_latency_ms: 2100,
      tool_latency_ms: last ? [] : [400],
      tool_call_fallback: false,
      context_tokens: context,
      elapsed_sec: elapsed,
    });
  }
  const finished = (options.status ?? 'finished') === 'finished';
  return Trajectory.parse({
    trajectory_format: TRAJECTORY_FORMAT,
    trajectory_id: 'generated',
    instance_id: 'octo/service#42',
    seed: null,
    messages,
    tools: [...TOOL_SCHEMAS],
    steps,
    n_steps: steps.length,
    exit_reason: finished ? 'agent' : null,
    error: null,
    final_message: finished ? 'The retry logic is fixed and the tests pass.' : '',
    context_tokens: context,
    elapsed_sec: elapsed,
    output_patch: null,
    partial: false,
    status: finished ? 'finished' : 'running',
    budget: {
      max_steps: 150,
      max_context_tokens: 131072,
      max_tokens_per_turn: 8192,
      time_budget_sec: 1800,
    },
    usage: {
      requests: steps.length,
      requests_without_usage: 0,
      prompt_tokens: steps.reduce((n, s) => n + (s.usage?.prompt_tokens ?? 0), 0),
      completion_tokens: steps.length * 60,
    },
    tool_call_fallbacks: 0,
    patch_error: null,
  });
}
