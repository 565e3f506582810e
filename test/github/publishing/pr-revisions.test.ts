// The "Revisions" part of the PR body: newest open, earlier folded, always within the limit.
import { describe, expect, it } from 'vitest';
import { PR_BODY_LIMIT } from '../../../src/github/publishing/pr-body.js';
import {
  REVISIONS_MARKER,
  renderRevision,
  withRevision,
} from '../../../src/github/publishing/pr-revisions.js';
import { runResult } from '../helpers/run-result.js';

describe('withRevision', () => {
  it('appends the newest revision open and folds the earlier ones, keeping the first description', () => {
    const top = '> [!WARNING]\n> machine-generated\n\nFixes #1.';
    const two = withRevision(top, { n: 2, text: 'second' });
    expect(two).toBe(
      `${top}\n\n${REVISIONS_MARKER}\n\n## Revisions\n\n### Revision 2 (latest)\n\n<!-- frognano:revision 2 -->\nsecond\n<!-- frognano:revision-end 2 -->\n`,
    );
    const three = withRevision(two, { n: 3, text: 'third' });
    expect(three.startsWith(`${top}\n\n${REVISIONS_MARKER}`)).toBe(true);
    expect(three).toContain('### Revision 3 (latest)\n\n<!-- frognano:revision 3 -->\nthird');
    expect(three).toContain(
      '<details><summary>Revision 2</summary>\n\n<!-- frognano:revision 2 -->\nsecond\n<!-- frognano:revision-end 2 -->\n\n</details>',
    );
    expect(three.match(/## Revisions/g)).toHaveLength(1);
  });

  it("stays within GitHub's size limit: the oldest revisions go first, then the top is cut", () => {
    let body = 'top';
    for (let n = 2; n <= 12; n++)
      body = withRevision(body, { n, text: `r${n} ${'x'.repeat(9_000)}` });
    expect(body.length).toBeLessThanOrEqual(PR_BODY_LIMIT);
    expect(body.startsWith('top')).toBe(true);
    expect(body).toContain('### Revision 12 (latest)');
    expect(body).not.toContain('<!-- frognano:revision 2 -->');
    expect(body).toMatch(/_\(\d+ earlier revisions left out to fit GitHub’s size limit/);

    const huge = withRevision('y'.repeat(70_000), { n: 2, text: 'new' });
    expect(huge.length).toBeLessThanOrEqual(PR_BODY_LIMIT);
    expect(huge).toContain('### Revision 2 (latest)');
  });
});

describe('renderRevision', () => {
  it('says what was asked and shows evidence, diffstat and budgets; model and reviewer text stay inert', () => {
    const text = renderRevision({
      revision: 2,
      result: runResult({ finalMessage: '## Done @someone' }),
      commit: 'c'.repeat(40),
      parent: 'p'.repeat(40),
      requestedBy: 'Codertocat',
      trigger: 'review',
      feedback: '# please @team fix #12',
      threads: [{ path: 'calc.py', line: 2, comments: [{ body: 'Add a **docstring**' }] }],
      trajectoryUrl: 'https://example.com/frognano/runs/x/trajectory',
    });
    expect(text).toContain(
      `Commit \`${'c'.repeat(12)}\` on top of \`${'p'.repeat(12)}\`, asked for by @Codertocat in a review.`,
    );
    expect(text).toContain('- `calc.py:2`: Add a \\*\\*docstring\\*\\*');
    expect(text).not.toMatch(/^#/m);
    expect(text).not.toMatch(/@team|@someone/);
    expect(text).toContain('| before |');
    expect(text).toContain('| after |');
    expect(text).toContain('**Budgets**');
    expect(text).toContain('The run page: https://example.com/frognano/runs/x/trajectory');
    expect(text).not.toContain('Not trusted');
  });

  it('says which harness files the revisions changed, and that the base revision judged them', () => {
    const input = {
      revision: 3,
      commit: 'c'.repeat(40),
      parent: 'p'.repeat(40),
      requestedBy: 'Codertocat',
      trigger: 'comment' as const,
      feedback: 'more',
      threads: [],
    };
    const text = renderRevision({
      ...input,
      result: runResult({
        followUpBase: { commit: 'b'.repeat(40), harnessFiles: ['conftest.py', 'pkg/`x`.pth'] },
      }),
    });
    const evidenceAt = text.indexOf('| after |');
    const noteAt = text.indexOf(
      `**Not trusted: the test harness.** The revisions of this pull request change \`conftest.py\`, \`\`pkg/\`x\`.pth\`\`. Before and after ran the harness as it was at the base revision \`${'b'.repeat(12)}\`; these files are reported, not trusted.`,
    );
    expect(noteAt).toBeGreaterThan(evidenceAt);
    expect(evidenceAt).toBeGreaterThan(0);
    const none = renderRevision({
      ...input,
      result: runResult({ followUpBase: { commit: 'b'.repeat(40), harnessFiles: [] } }),
    });
    expect(none).not.toContain('Not trusted');
  });
});
