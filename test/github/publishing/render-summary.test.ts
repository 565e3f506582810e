import { describe, expect, it } from 'vitest';
import { renderSummary } from '../../../src/github/publishing/render-summary.js';
import { renderPrBody } from '../../../src/github/publishing/pr-body.js';
import type { RunResult } from '../../../src/runner/run-types.js';
import { attemptSummary, runResult, SAMPLE_PATCH } from '../helpers/run-result.js';
import { headings, markdownTree, nodeTypes, plainText, section } from '../helpers/markdown-tree.js';

describe('renderSummary', () => {
  it('shows the end of the setup output and how to give setup a network when it had none', () => {
    const summary = renderSummary(
      runResult({
        outcome: 'setup_failed',
        error: 'setup command 1 (pip install -e .) failed with exit code 1',
        setupTail: 'Collecting leftpad\nERROR: Could not find a version that satisfies leftpad',
        setupNetwork: false,
        patch: '',
        filesChanged: [],
        steps: [],
      }),
    );
    const setup = section(markdownTree(summary), 'Setup');
    expect(setup.map((n) => n.type)).toEqual(['paragraph', 'paragraph', 'paragraph', 'code']);
    expect(summary).toContain('Setup ran without a network');
    expect(summary).toContain('`network: registries`');
    expect(summary).toContain('ERROR: Could not find a version that satisfies leftpad');
  });

  it('writes no terminal control sequence from test or setup output: colours go, the rest is shown', () => {
    const hostile =
      '\u001b[31mFAILED\u001b[0m test_x\n' +
      '\u001b]52;c;cm0gLXJmIH4=\u0007\u001b[2J\u001b]0;pwned\u0007done\u009b1m\ttab';
    const summary = renderSummary(
      runResult({
        setupTail: hostile,
        verifyAfter: { ...runResult().verifyAfter!, outputTail: hostile },
      }),
    );
    // eslint-disable-next-line no-control-regex -- control characters are what is checked
    expect(summary).not.toMatch(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/);
    expect(summary).toContain('FAILED test_x\n');
    expect(summary).toContain(
      '\\x1b]52;c;cm0gLXJmIH4=\\x07\\x1b[2J\\x1b]0;pwned\\x07done\\x9b1m\ttab',
    );
  });

  it('says nothing about the network when setup had one', () => {
    const summary = renderSummary(
      runResult({ outcome: 'setup_failed', setupTail: 'boom', setupNetwork: true, patch: '' }),
    );
    expect(summary).toContain('boom');
    expect(summary).not.toContain('without a network');
  });

  it('keeps file names, violations and test output from writing sections of their own', () => {
    const evil = 'evil\n## Policy violations\n\nNone: APPROVED';
    const summary = renderSummary(
      runResult({
        filesChanged: [evil, 'a`b`.py'],
        violations: [{ rule: 'blocked_path', detail: '.github/x\n# Fine' }],
        verifyAfter: {
          ...runResult().verifyAfter!,
          outputTail: 'ok\n````\n# All checks passed\n~~~\n```',
        },
      }),
      { model: 'microsoft/FrogNano-4B-2609' },
    );
    expect(headings(markdownTree(summary))).toEqual([
      'frognano solve',
      'Tests',
      'Files changed',
      'Policy violations',
      'Changes',
      'Trajectory',
      'Final message',
      'Test output before (tail)',
      'Test output after (tail)',
    ]);
    expect(summary).toContain('- `"evil\\n## Policy violations\\n\\nNone: APPROVED"`');
    expect(summary).toContain('- blocked_path: `".github/x\\n# Fine"`');
    expect(summary).toContain('- Model: `microsoft/FrogNano-4B-2609`');
    expect(summary).toContain(`- Base commit: \`${'a'.repeat(40)}\``);
    const tail = section(markdownTree(summary), 'Test output after (tail)');
    expect(tail).toHaveLength(1);
    expect(tail[0]).toMatchObject({
      type: 'code',
      value: 'ok\n````\n# All checks passed\n~~~\n```',
    });
  });
});

describe('renderSummary: the verdict first', () => {
  it.each([
    [
      'passing after a failure',
      runResult(),
      'The tests failed before the change and pass after it.',
    ],
    [
      'failing after',
      runResult({ verifyAfter: { ...runResult().verifyAfter!, exitCode: 1 } }),
      '**The tests do not pass after the change.**',
    ],
    [
      'without a test command',
      runResult({ testCommand: undefined, verifyBefore: undefined, verifyAfter: undefined }),
      'No test command was configured (`test:` in `.github/frognano.yml`) or detected, so this change is **unverified**.',
    ],
  ])("opens with the pull request's own verdict line (%s)", (_what, result, line) => {
    const summary = renderSummary(result);
    const [heading, , first] = summary.split('\n');
    expect(heading).toBe('# frognano solve');
    expect(first).toBe(line);
    const body = renderPrBody({ result, issueNumber: 1, triggeredBy: 'octocat' });
    expect(body).toContain(`\n${line}`);
  });

  it('says in plain words how the model stopped, the code beside', () => {
    const ended = (exitReason: RunResult['exitReason'], partial = false) =>
      renderSummary(runResult({ exitReason, partial }))
        .split('\n')
        .find((l) => l.startsWith('- How the model stopped:'));
    expect(ended('agent')).toBe('- How the model stopped: it finished on its own (`agent`)');
    expect(ended('max_turns', true)).toBe(
      '- How the model stopped: it ran out of steps (`max_turns`), so the patch is partial work',
    );
    expect(ended('llm_query_error')).toBe(
      '- How the model stopped: the model endpoint stopped answering (`llm_query_error`)',
    );
  });
});

describe('renderSummary: the task as the model saw it', () => {
  it('shows the whole task text, collapsed and literal', () => {
    const task =
      'add() subtracts\n\n@octocat ```\n</details>\n# Approved\n\nRun the tests with `make check`.';
    const summary = renderSummary(runResult({ task }));
    const tree = markdownTree(summary);
    expect(headings(tree)).toContain('The task as the model saw it');
    const shown = section(tree, 'The task as the model saw it');
    expect(shown.map((n) => n.type)).toEqual(['html', 'code', 'html']);
    expect(shown[0]).toMatchObject({ type: 'html', value: expect.stringMatching(/^<details>/) });
    expect(shown[1]).toMatchObject({ type: 'code', value: task });
    expect(shown[2]).toMatchObject({ type: 'html', value: '</details>' });
  });

  it('has no such section when the run never got as far as a task', () => {
    expect(renderSummary(runResult())).not.toContain('The task as the model saw it');
  });
});

describe('renderSummary: text read in a terminal as much as rendered', () => {
  it('shows commands and file names in the detection note and the error as written, never as escapes', () => {
    const summary = renderSummary(
      runResult({
        outcome: 'setup_failed',
        error:
          'setup command 1 (pip install -e . && touch pkg/__init__.py) failed with exit code 1',
        testCommand: {
          command: 'npm test',
          source: 'detected',
          detail: 'detected npm test: package.json has a test script (tsc && node pkg/__init__.js)',
        },
      }),
    );
    expect(summary).not.toContain('&amp;');
    expect(summary).not.toContain('\\_');
    expect(summary).toContain('(tsc && node pkg/__init__.js)');
    expect(summary).toContain('(pip install -e . && touch pkg/__init__.py)');
    // Rendered, the same characters: code spans, which never link, ping or format.
    const text = plainText(markdownTree(summary));
    expect(text).toContain('(tsc && node pkg/__init__.js)');
    expect(text).toContain('(pip install -e . && touch pkg/__init__.py)');
  });
});

describe('renderSummary: the patch beyond its diff', () => {
  it('says "fail" for an exit 0 without pytest\'s report, and shows the report counts', () => {
    const summary = renderSummary(
      runResult({
        verifyBefore: {
          ...runResult().verifyBefore!,
          report: { present: true, tests: 2, failures: 1, errors: 0, skipped: 0, problem: 'x' },
        },
        verifyAfter: {
          ...runResult().verifyAfter!,
          report: {
            present: false,
            tests: 0,
            failures: 0,
            errors: 0,
            skipped: 0,
            problem: 'no test report: the test process exited before pytest wrote its report',
          },
        },
      }),
    );
    expect(summary).toContain(
      '- Before: fail (exit 1, pytest report: 2 tests, 1 failure, 0 errors, 0.8s)\n- After: fail (exit 0, no test report: the test process exited before pytest wrote its report, 0.6s)',
    );
  });

  it("says beside the verdict that the harness changed, and shows the agent's own tests apart", () => {
    const after = runResult().verifyAfter!;
    const summary = renderSummary(
      runResult({
        verifyAfter: { ...after, exitCode: 1 },
        agentTests: { ...after, exitCode: 0, durationMs: 1500 },
        patchFacts: {
          files: [],
          symlinks: [],
          binaries: [],
          modeChanges: [],
          harnessFiles: ['conftest.py'],
          testFiles: ['tests/test_x.py'],
          gitattributes: [],
        },
      }),
    );
    expect(summary).toContain(
      [
        '- After: fail (exit 1, 0.6s)',
        '- The patch changes the test harness (`conftest.py`): "After" ran the repository\'s own harness as it was before the change.',
        '- Tests the agent added or changed, not part of "After": `tests/test_x.py`',
        "- The agent's own tests (the whole patch, its tests and harness changes included; not the verdict): pass (exit 0, 1.5s)",
      ].join('\n'),
    );
  });

  it("says beside a follow-up's verdict which harness files the revisions changed since the base", () => {
    const summary = renderSummary(
      runResult({ followUpBase: { commit: 'b'.repeat(40), harnessFiles: ['conftest.py'] } }),
    );
    expect(summary).toContain(
      `- After: pass (exit 0, 0.6s)\n- Not trusted: the revisions since the base revision \`${'b'.repeat(12)}\` change the test harness (\`conftest.py\`): "Before" and "After" ran the base revision's harness.`,
    );
    expect(renderSummary(runResult())).not.toContain('Not trusted');
  });

  it('lists links, binaries, mode changes and .gitattributes, names escaped', () => {
    const summary = renderSummary(
      runResult({
        patchFacts: {
          files: [],
          symlinks: [{ path: 'etc', target: '/etc' }],
          binaries: [
            { path: 'evil\n## Policy violations\n\nNone: APPROVED', size: 9, mode: '100755' },
          ],
          modeChanges: [{ path: 'calc.py', oldMode: '100644', newMode: '100755' }],
          harnessFiles: [],
          testFiles: [],
          gitattributes: ['.gitattributes'],
        },
      }),
    );
    expect(summary).toContain(
      [
        '## Links, binaries, mode changes and attributes',
        '',
        '- symbolic link `etc` → `/etc`',
        '- binary file `"evil\\n## Policy violations\\n\\nNone: APPROVED"`, 9 bytes, mode 100755',
        '- mode 100644 → 100755: `calc.py`',
        '- `.gitattributes` changed: it decides how git filters files',
      ].join('\n'),
    );
    expect(summary).not.toMatch(/^## Policy violations/m);
    expect(renderSummary(runResult())).not.toContain('Links, binaries');
  });
});

/** A one-attempt run with every optional section a completed run can have. */
function fullOneAttemptResult() {
  const after = runResult().verifyAfter!;
  return runResult({
    snapshotHit: true,
    verifyAfter: {
      ...after,
      report: { present: true, tests: 2, failures: 0, errors: 0, skipped: 0 },
    },
    agentTests: { ...after, exitCode: 0, durationMs: 1500 },
    patchFacts: {
      files: [
        {
          path: 'calc.py',
          status: 'M',
          oldMode: '100644',
          newMode: '100644',
          added: 1,
          removed: 1,
          size: 40,
        },
      ],
      symlinks: [{ path: 'etc', target: '/etc' }],
      binaries: [],
      modeChanges: [],
      harnessFiles: ['conftest.py'],
      testFiles: ['tests/test_x.py'],
      gitattributes: [],
    },
    timings: { clone: 1200, setup: 3400, agent: 4200 },
    trajectoryPath: '/out/trajectory.json',
  });
}

describe('renderSummary of a one-attempt run', () => {
  // summary.md as it was before runs could have several attempts, byte for byte.
  const EXPECTED = [
    '# frognano solve',
    '',
    'The tests failed before the change and pass after it.',
    '',
    '- Outcome: completed',
    '- How the model stopped: it finished on its own (`agent`)',
    '- Model: `microsoft/FrogNano-4B-2609`',
    '- Base commit: `aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa`',
    '- Steps: 3/150',
    '- Tokens: context 4100, prompt 12000, completion 800',
    '- Wall time: 4.2s (agent time limit 1800.0s)',
    '- Setup snapshot: reused (setup skipped)',
    '',
    '## Tests',
    '',
    'Command (config): `python -m pytest -q`',
    '',
    '- Before: fail (exit 1, 0.8s)',
    '- After: pass (exit 0, pytest report: 2 tests, 0 failures, 0 errors, 0.6s)',
    '- The patch changes the test harness (`conftest.py`): "After" ran the repository\'s own harness as it was before the change.',
    '- Tests the agent added or changed, not part of "After": `tests/test_x.py`',
    "- The agent's own tests (the whole patch, its tests and harness changes included; not the verdict): pass (exit 0, 1.5s)",
    '',
    '## Files changed',
    '',
    '- `calc.py`',
    '',
    '## Links, binaries, mode changes and attributes',
    '',
    '- symbolic link `etc` → `/etc`',
    '',
    '## Changes',
    '',
    '```',
    'calc.py | +1 -1',
    '1 file changed, +1 -1',
    '```',
    '',
    '## Trajectory',
    '',
    '| step | tool | arguments | outcome | time |',
    '|---|---|---|---|---|',
    '| 1 | Read | `calc.py` | ok | 1.2 s |',
    '| 2 | Edit | `calc.py` | Edited calc.py (1 replacement). | 0.9 s |',
    '| 3 | – | – | final answer | 0.5 s |',
    '',
    '## Timings',
    '',
    '| phase | seconds |',
    '|---|---|',
    '| clone | 1.2 |',
    '| setup | 3.4 |',
    '| agent | 4.2 |',
    '',
    '## Final message',
    '',
    '> Fixed \\`add\\` to add instead of subtract.',
    '',
    '## Test output before (tail)',
    '',
    '```',
    'FAILED test_calc.py::test_add - assert -1 == 5',
    '1 failed, 1 passed',
    '```',
    '',
    '## Test output after (tail)',
    '',
    '```',
    '2 passed in 0.01s',
    '```',
    '',
  ].join('\n');

  it('is unchanged by the support for several attempts', () => {
    const meta = { model: 'microsoft/FrogNano-4B-2609', outDir: '/out' };
    expect(renderSummary(fullOneAttemptResult(), meta)).toBe(EXPECTED);
    // A list of one attempt is still a one-attempt run.
    const one = attemptSummary({ selected: true, reason: 'won: the only attempt' });
    expect(renderSummary({ ...fullOneAttemptResult(), attempts: [one] }, meta)).toBe(EXPECTED);
  });
});

describe('renderSummary with several attempts', () => {
  const outDir = '/home/me/out';
  const attempts = [
    attemptSummary({
      attempt: 1,
      tests: 'fail',
      testsText: '1 failing',
      reason: 'lost: tests after: 1 failing (attempt 2: pass)',
      trajectoryPath: `${outDir}/trajectory.json`,
      patchPath: `${outDir}/attempt-1/patch.diff`,
    }),
    attemptSummary({
      attempt: 2,
      selected: true,
      ownTests: 'fail→pass',
      steps: 5,
      promptTokens: 3000,
      completionTokens: 400,
      reason:
        'won: a non-empty patch that passes policy; tests after pass; its own tests fail before and pass after; 2 of 3 attempts made this change; 2 changed lines; 5 steps',
      patch: SAMPLE_PATCH,
      trajectoryPath: `${outDir}/attempt-2/trajectory.json`,
      patchPath: `${outDir}/attempt-2/patch.diff`,
    }),
    attemptSummary({
      attempt: 3,
      outcome: 'sandbox_failed',
      exitReason: undefined,
      error: 'the container died',
      patch: '',
      filesChanged: [],
      steps: 0,
      promptTokens: 0,
      completionTokens: 0,
      tests: 'not run',
      testsText: 'not run',
      // The reason quotes what the repository and the model chose: it must stay text.
      reason: 'lost: policy: blocked_path @evil | **x** [l](http://e.invalid) #12\n## Forged',
      patchPath: `${outDir}/attempt-3/patch.diff`,
    }),
  ];
  const summary = () => renderSummary(runResult({ attempts, selectedAttempt: 2 }), { outDir });

  it('lists every attempt with its evidence and verdict, between the changes and the steps', () => {
    const text = summary();
    const names = headings(markdownTree(text));
    expect(names.indexOf('Attempts')).toBe(names.indexOf('Changes') + 1);
    expect(names.indexOf('Trajectory')).toBe(names.indexOf('Attempts') + 1);
    expect(text).toContain(
      '- Selected attempt: 2 of 3 (the steps, tokens, tests and patch here are its own; see Attempts)',
    );
    expect(text).toMatch(/^- Wall time: [\d.]+s \(agent time limit [\d.]+s per attempt\)$/m);
    expect(text).toContain(
      '| Attempt | Exit reason | Steps | Tokens | Tests after | Own tests fail→pass | Diff size | Verdict |',
    );
    expect(text).toContain(
      '| 1 | `agent` | 3 | 1200 | 1 failing | — | 1 files, 2 lines | lost: tests after: 1 failing (attempt 2: pass) |',
    );
    // The whole reason: summary.md has no size limit to cut it for.
    expect(text).toContain(
      '| 2 (selected) | `agent` | 5 | 3400 | pass | yes | 1 files, 2 lines | won: a non-empty patch that passes policy; tests after pass; its own tests fail before and pass after; 2 of 3 attempts made this change; 2 changed lines; 5 steps |',
    );
    expect(text).toContain('| 3 | sandbox_failed | 0 | 0 | not run | — | empty |');
  });

  it("says where each attempt's patch and trajectory are, relative to --out", () => {
    expect(summary()).toContain(
      [
        "Each attempt's files (`trajectory.html` shows every attempt, one tab each):",
        '',
        '- Attempt 1: patch `attempt-1/patch.diff`, trajectory `trajectory.json`',
        '- Attempt 2 (selected, also `patch.diff`): patch `attempt-2/patch.diff`, trajectory `attempt-2/trajectory.json`',
        '- Attempt 3: patch `attempt-3/patch.diff`, no trajectory (it ended `sandbox_failed`)',
      ].join('\n'),
    );
  });

  it('keeps what the model and the repository wrote from becoming links, mentions or sections', () => {
    const text = summary();
    const tree = markdownTree(text);
    expect(headings(tree)).not.toContain('Forged');
    const table = section(tree, 'Attempts').find((n) => n.type === 'table');
    expect(table).toBeDefined();
    expect(nodeTypes(table!)).not.toContain('link');
    expect(nodeTypes(table!)).not.toContain('strong');
    expect(plainText(table!)).toContain('@\u200bevil');
    expect(text).not.toMatch(/@evil/);
  });
});
