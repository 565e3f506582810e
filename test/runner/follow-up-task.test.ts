// The follow-up's task text: its order, its caps, and blocks the content cannot break out of.
import { describe, expect, it } from 'vitest';
import { followUpTask, MAX_THREADS, PREVIOUS_DIFF_CHARS } from '../../src/runner/follow-up-task.js';

const base = {
  issueText: 'Title\n\nBody',
  previousDiff: 'diff --git a/x b/x\n-old\n+new\n',
  request: 'make it faster',
  threads: [],
};

describe('followUpTask', () => {
  it('puts the issue first, then the previous attempt and its evidence, then the feedback', () => {
    const task = followUpTask({
      ...base,
      branch: 'frognano/issue-3',
      evidence: { command: 'pytest', before: 'failed (exit 1)', after: 'passed (exit 0)' },
      threads: [
        {
          path: 'x.py',
          line: 4,
          diffHunk: '@@ -1 +1 @@\n-a\n+b',
          comments: [
            { author: '@alice', body: 'why?' },
            { author: '@bob', body: 'agreed' },
          ],
        },
        { path: 'y.py', diffHunk: '@@ -1 +1 @@', comments: [{ author: '@alice', body: 'file' }] },
      ],
    });
    expect(task).toBe(
      [
        'Title\n\nBody',
        'The repository is already at a previous attempt at this issue (branch frognano/issue-3). A reviewer asked for changes to it. Build on that attempt: change what the feedback asks for and keep the rest.',
        "The previous attempt's diff against the base:\n\n```diff\ndiff --git a/x b/x\n-old\n+new\n```",
        "The previous attempt's tests, `pytest`: before the change failed (exit 1) → after the change passed (exit 0).",
        "The reviewer's feedback:\n\nmake it faster",
        'The open review comments:',
        'x.py:4\n```diff\n@@ -1 +1 @@\n-a\n+b\n```\n@alice: why?\n@bob: agreed',
        'y.py\n```diff\n@@ -1 +1 @@\n```\n@alice: file',
      ].join('\n\n'),
    );
  });

  it('caps the diff and the threads, and says so', () => {
    const big = `${'+x\n'.repeat(PREVIOUS_DIFF_CHARS)}`;
    const threads = Array.from({ length: MAX_THREADS + 3 }, (_, i) => ({
      path: `f${i}.py`,
      line: 1,
      diffHunk: '@@',
      comments: [{ author: '@a', body: 'c' }],
    }));
    const task = followUpTask({ ...base, previousDiff: big, threads });
    expect(task).toContain(
      `[diff cut: ${big.trim().length - PREVIOUS_DIFF_CHARS} more characters]`,
    );
    expect(task).toContain(`f${MAX_THREADS - 1}.py:1`);
    expect(task).not.toContain(`f${MAX_THREADS}.py:1`);
    expect(task).toContain('(3 more review comments were left out.)');
  });

  it('fences code with more backticks than it holds, and says when there is no diff or request', () => {
    const task = followUpTask({ ...base, previousDiff: '+```\n+````', request: '' });
    expect(task).toContain('`````diff\n+```\n+````\n`````');
    expect(task).toContain("The reviewer's feedback is in the review comments below.");
    expect(followUpTask({ ...base, previousDiff: '' })).toContain(
      'The previous attempt changed no file.',
    );
  });
});
