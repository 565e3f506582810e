// Which model servers answered, in the PR body and summary.md: one line per endpoint a loop
// used (per attempt with several), with what the server said of itself; server-reported text is
// inert there, whatever it holds.
import { describe, expect, it } from 'vitest';
import { renderPrBody } from '../../../src/github/publishing/pr-body.js';
import { renderSummary } from '../../../src/github/publishing/render-summary.js';
import type { ModelEndpointRecord } from '../../../src/leaf/trajectory.js';
import { attemptSummary, runResult } from '../helpers/run-result.js';
import { headings, markdownTree, nodeTypes, section } from '../helpers/markdown-tree.js';

function served(overrides: Partial<ModelEndpointRecord> = {}): ModelEndpointRecord {
  return {
    endpoint: 'gpu-a.lan:8000',
    first_step: 0,
    last_step: 11,
    requests: 12,
    error: null,
    model_id: 'microsoft/FrogNano-4B-2609',
    root: '/models/FrogNano-4B-2609',
    max_model_len: 131072,
    owned_by: 'vllm',
    server_version: '0.11.0',
    ...overrides,
  };
}

describe('model servers in the PR body and summary.md', () => {
  it('names each endpoint a run used, its steps, the served model and server, and why it left one', () => {
    const result = runResult({
      servedBy: [
        served({
          last_step: 3,
          requests: 4,
          error: 'Connection error.: fetch failed: ECONNREFUSED',
        }),
        served({ endpoint: 'gpu-b.lan:8000', first_step: 4, last_step: 11, requests: 8 }),
      ],
    });
    const expected = [
      '- `gpu-a.lan:8000`: steps 1–4, `microsoft/FrogNano-4B-2609` (root `/models/FrogNano-4B-2609`, max_model_len 131072, server `vllm 0.11.0`); the run left it: `Connection error.: fetch failed: ECONNREFUSED`',
      '- `gpu-b.lan:8000`: steps 5–12, `microsoft/FrogNano-4B-2609` (root `/models/FrogNano-4B-2609`, max_model_len 131072, server `vllm 0.11.0`)',
    ].join('\n');
    const body = renderPrBody({ result, issueNumber: 1, triggeredBy: 'octocat' });
    expect(body).toContain(`## Model servers\n\n${expected}\n`);
    expect(headings(markdownTree(body))).toContain('Model servers');
    expect(renderSummary(result)).toContain(`## Model servers\n\n${expected}\n`);
  });

  it('lists them per attempt with several', () => {
    const result = runResult({
      attempts: [
        attemptSummary({ attempt: 1, selected: true, servedBy: [served()] }),
        attemptSummary({
          attempt: 2,
          selected: false,
          servedBy: [
            served({ endpoint: 'gpu-b.lan:8000', first_step: 0, last_step: 0, requests: 1 }),
          ],
        }),
        attemptSummary({ attempt: 3, selected: false }),
      ],
      servedBy: [served()],
    });
    const summary = renderSummary(result);
    expect(summary).toContain(
      [
        '## Model servers',
        '',
        '- Attempt 1 (selected):',
        '  - `gpu-a.lan:8000`: steps 1–12, `microsoft/FrogNano-4B-2609` (root `/models/FrogNano-4B-2609`, max_model_len 131072, server `vllm 0.11.0`)',
        '- Attempt 2:',
        '  - `gpu-b.lan:8000`: step 1, `microsoft/FrogNano-4B-2609` (root `/models/FrogNano-4B-2609`, max_model_len 131072, server `vllm 0.11.0`)',
        '- Attempt 3: no model request',
      ].join('\n'),
    );
    expect(renderPrBody({ result, issueNumber: 1, triggeredBy: 'o' })).toContain(
      '- Attempt 1 (published):',
    );
  });

  it('keeps what a server says of itself inert', () => {
    const hostile = '`x` @octocat #1 <img src=x> ![i](http://e/x.png)\n## Heading\n[l](http://e)';
    const result = runResult({
      servedBy: [served({ model_id: hostile, root: hostile, owned_by: hostile, error: hostile })],
    });
    const tree = markdownTree(renderPrBody({ result, issueNumber: 1, triggeredBy: 'o' }));
    const types = nodeTypes({ type: 'root', children: section(tree, 'Model servers') });
    expect(
      types.filter((t) => !['list', 'listItem', 'paragraph', 'text', 'inlineCode'].includes(t)),
    ).toEqual([]);
    expect(headings(tree)).not.toContain('Heading');
  });

  it('says nothing when no server record exists (a ready Model in tests, an older run)', () => {
    expect(renderPrBody({ result: runResult(), issueNumber: 1, triggeredBy: 'o' })).not.toContain(
      'Model servers',
    );
  });
});
