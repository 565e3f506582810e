import { describe, expect, it } from 'vitest';
import type { AssistantMessage } from '../../src/leaf/messages.js';
import { applyToolCallFallback, extractToolCalls } from '../../src/leaf/tool-call-fallback.js';
import { qwenJsonToolCall, qwenXmlToolCall } from '../support/scripted-model-server.js';

function assistant(fields: Partial<AssistantMessage>): AssistantMessage {
  return { role: 'assistant', content: null, ...fields };
}

describe('applyToolCallFallback', () => {
  it('parses an XML block in content, removes it, and converts types by the schema', () => {
    const content =
      'I will read the file.\n\n' +
      '<tool_call>\n<function=Read>\n<parameter=file_path>\nsrc/app.py\n</parameter>\n' +
      '<parameter=offset>\n10\n</parameter>\n<parameter=limit>\n5\n</parameter>\n</function>\n</tool_call>';
    const result = applyToolCallFallback(assistant({ content }));
    expect(result.applied).toBe(true);
    expect(result.source).toBe('content');
    expect(result.message).toStrictEqual({
      role: 'assistant',
      content: 'I will read the file.',
      tool_calls: [
        {
          id: 'call_fallback_0',
          type: 'function',
          function: {
            name: 'Read',
            arguments: '{"file_path":"src/app.py","offset":10,"limit":5}',
          },
        },
      ],
    });
  });

  it('converts boolean and number parameters, keeps strings (even numeric ones) as strings', () => {
    const text =
      qwenXmlToolCall('Edit', {
        file_path: 'a.py',
        old_string: '42',
        new_string: 'true',
        replace_all: 'True',
      }) + qwenXmlToolCall('Bash', { command: 'sleep 1', timeout: '2.5' });
    const result = applyToolCallFallback(assistant({ content: text }), 3);
    const calls = result.message.tool_calls!;
    expect(calls.map((call) => call.id)).toEqual(['call_fallback_3', 'call_fallback_4']);
    expect(JSON.parse(calls[0]!.function.arguments)).toStrictEqual({
      file_path: 'a.py',
      old_string: '42',
      new_string: 'true',
      replace_all: true,
    });
    expect(JSON.parse(calls[1]!.function.arguments)).toStrictEqual({
      command: 'sleep 1',
      timeout: 2.5,
    });
    expect(result.message.content).toBeNull();
  });

  it('leaves values that do not fit their type as strings, so the tool reports the error', () => {
    const text = qwenXmlToolCall('Read', { file_path: 'a.py', offset: 'abc', limit: '2.7' });
    const args = JSON.parse(
      applyToolCallFallback(assistant({ content: text })).message.tool_calls![0]!.function
        .arguments,
    ) as Record<string, unknown>;
    expect(args).toStrictEqual({ file_path: 'a.py', offset: 'abc', limit: '2.7' });
  });

  it('trims only the single newline Qwen puts around a value', () => {
    const text =
      '<tool_call>\n<function=Write>\n<parameter=file_path>\nx.py\n</parameter>\n' +
      '<parameter=content>\n\n  def f():\n    return 1\n\n</parameter>\n</function>\n</tool_call>';
    const args = JSON.parse(
      applyToolCallFallback(assistant({ content: text })).message.tool_calls![0]!.function
        .arguments,
    ) as Record<string, unknown>;
    expect(args.content).toBe('\n  def f():\n    return 1\n');
  });

  it('parses the JSON form, with object or string arguments', () => {
    const text =
      qwenJsonToolCall('Bash', { command: 'pytest -q' }) +
      '\n<tool_call>{"name": "Glob", "arguments": "{\\"pattern\\": \\"**/*.py\\"}"}</tool_call>';
    const calls = applyToolCallFallback(assistant({ content: text })).message.tool_calls!;
    expect(calls.map((call) => call.function)).toStrictEqual([
      { name: 'Bash', arguments: '{"command":"pytest -q"}' },
      { name: 'Glob', arguments: '{"pattern": "**/*.py"}' },
    ]);
  });

  it('takes blocks from reasoning_content (SGLang) and removes them there, keeping content', () => {
    const message = assistant({
      content: null,
      reasoning_content: 'Let me run the tests.\n' + qwenXmlToolCall('Bash', { command: 'pytest' }),
    });
    const result = applyToolCallFallback(message);
    expect(result.source).toBe('reasoning_content');
    expect(result.message).toStrictEqual({
      role: 'assistant',
      content: null,
      tool_calls: [
        {
          id: 'call_fallback_0',
          type: 'function',
          function: { name: 'Bash', arguments: '{"command":"pytest"}' },
        },
      ],
      reasoning_content: 'Let me run the tests.',
    });
  });

  it('takes blocks from reasoning (vLLM); drops the field when nothing else remains', () => {
    const result = applyToolCallFallback(
      assistant({ content: '', reasoning: qwenXmlToolCall('Glob', { pattern: '*.py' }) }),
    );
    expect(result.source).toBe('reasoning');
    expect(result.message).toStrictEqual({
      role: 'assistant',
      content: '',
      tool_calls: [
        {
          id: 'call_fallback_0',
          type: 'function',
          function: { name: 'Glob', arguments: '{"pattern":"*.py"}' },
        },
      ],
    });
  });

  it('strips the blocks from both reasoning fields when the server sent the same text in both', () => {
    const text = 'hmm ' + qwenXmlToolCall('Bash', { command: 'ls' });
    const result = applyToolCallFallback(assistant({ reasoning_content: text, reasoning: text }));
    expect(result.message.reasoning_content).toBe('hmm');
    expect(result.message.reasoning).toBe('hmm');
    expect(result.message.tool_calls).toHaveLength(1);
  });

  it('prefers content over reasoning and keeps reasoning untouched then', () => {
    const result = applyToolCallFallback(
      assistant({
        content: qwenXmlToolCall('Bash', { command: 'ls' }),
        reasoning: 'I might call <tool_call>{"name": "Read"',
      }),
    );
    expect(result.source).toBe('content');
    expect(result.message.reasoning).toBe('I might call <tool_call>{"name": "Read"');
  });

  it('accepts a block cut off before </tool_call> at the end of the text', () => {
    const text =
      '<tool_call>\n<function=Bash>\n<parameter=command>\nmake test\n</parameter>\n</function>';
    const { calls, rest } = extractToolCalls(text);
    expect(calls[0]!.function).toStrictEqual({
      name: 'Bash',
      arguments: '{"command":"make test"}',
    });
    expect(rest).toBe('');
  });

  it('does nothing when tool_calls is already set or no block parses', () => {
    const withCalls = assistant({
      content: qwenXmlToolCall('Bash', { command: 'ls' }),
      tool_calls: [{ id: 'x', type: 'function', function: { name: 'Read', arguments: '{}' } }],
    });
    expect(applyToolCallFallback(withCalls)).toStrictEqual({ message: withCalls, applied: false });

    const junk = assistant({ content: 'Use <tool_call>not a call</tool_call> wisely.' });
    expect(applyToolCallFallback(junk)).toStrictEqual({ message: junk, applied: false });

    const plain = assistant({ content: 'All done.' });
    expect(applyToolCallFallback(plain).applied).toBe(false);
  });

  it('keeps unknown tools and parameters as strings (the tool layer reports them)', () => {
    const text =
      qwenXmlToolCall('Deploy', { target: '1' }) +
      qwenXmlToolCall('Bash', { command: 'x', extra: '5' });
    const calls = applyToolCallFallback(assistant({ content: text })).message.tool_calls!;
    expect(calls.map((call) => call.function)).toStrictEqual([
      { name: 'Deploy', arguments: '{"target":"1"}' },
      { name: 'Bash', arguments: '{"command":"x","extra":"5"}' },
    ]);
  });
});
