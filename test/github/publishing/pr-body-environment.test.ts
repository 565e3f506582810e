// The Environment section (issue 25): where setup came from and what the test command
// collected; when the tests cannot run, the problem first, a snippet to commit, and an
// inconclusive verdict (never a plain "fail"). The same facts in summary.md and the status line.
import { describe, expect, it } from 'vitest';
import { renderPrBody } from '../../../src/github/publishing/pr-body.js';
import { verificationLine } from '../../../src/github/status/index.js';
import { renderSummary } from '../../../src/github/publishing/render-summary.js';
import type { EnvironmentFacts, RunResult } from '../../../src/runner/run-types.js';
import { runResult } from '../helpers/run-result.js';

function withEnvironment(environment: Partial<EnvironmentFacts>, extra: Partial<RunResult> = {}) {
  const base = runResult();
  return {
    ...base,
    ...extra,
    environment: {
      source: 'auto',
      ecosystems: ['python'],
      commands: [],
      failed: [],
      notes: [],
      snapshot: 'miss',
      network: 'setup',
      importErrors: [],
      runnable: true,
      ...environment,
    },
  } as RunResult;
}

const body = (result: RunResult) => renderPrBody({ result, issueNumber: 7, triggeredBy: 'o' });

describe('the Environment section', () => {
  it('says where automatic setup came from, how long it took, and what was collected', () => {
    const result = withEnvironment({
      commands: [
        { command: 'python3 -m venv ~/.venv', from: 'automatic setup: one venv for the project' },
        { command: "pip install -e '.[test]'", from: 'pyproject.toml [test]' },
      ],
      seconds: 12.5,
      testsCollected: 14,
    });
    const text = body(result);
    expect(text).toContain('## Environment');
    expect(text).toContain(
      "- Setup: automatic (python): `pip install -e '.[test]'` (from `pyproject.toml [test]`) (12.5 s)",
    );
    expect(text).toContain('- Tests collected: 14');
    expect(text).not.toContain('could not run in this environment');
    expect(renderSummary(result)).toContain('## Environment');
  });

  it('shows a reused snapshot, a configured setup, and egress facts with the line that allows a host', () => {
    expect(body(withEnvironment({ snapshot: 'hit' }))).toContain('- Setup: reused (snapshot)');
    expect(body(withEnvironment({ source: 'config', seconds: 3 }))).toContain(
      '- Setup: `.github/frognano.yml` (3 s)',
    );
    const text = body(
      withEnvironment(
        {},
        {
          egress: {
            mode: 'registries',
            allowedHosts: ['files.pythonhosted.org', 'pypi.org'],
            blocked: [{ host: 'example.org', port: 443, count: 3, reason: 'not allowed' }],
          },
        },
      ),
    );
    expect(text).toContain('- Network: registries, allowed: `files.pythonhosted.org`, `pypi.org`');
    expect(text).toContain(
      '- Blocked: `example.org:443` ×3 (not allowed); to allow it: `network_allow: ["example.org"]`',
    );
  });

  it('says first that the tests could not run here, with a snippet, and the verdict is inconclusive', () => {
    const result = withEnvironment(
      {
        network: 'none',
        notes: ['automatic setup did not run: `network: none` gives it no way to download'],
        testsCollected: 0,
        importErrors: ["No module named 'dateutil'"],
        runnable: false,
        problem: "import errors at collection: No module named 'dateutil'",
      },
      {
        verifyAfter: { ...runResult().verifyAfter!, exitCode: 2 },
      },
    );
    const text = body(result);
    const problemAt = text.indexOf('**The tests could not run in this environment:');
    expect(problemAt).toBeGreaterThan(0);
    expect(problemAt).toBeLessThan(text.indexOf('Fixes #7'));
    expect(text).toContain('```yaml\n# .github/frognano.yml\nsetup:\n');
    expect(text).toContain('# the packages that provide: dateutil');
    expect(text).toContain('network: registries');
    expect(text).toContain('**Inconclusive: the tests could not run in this environment**');
    expect(text).not.toContain('The tests do not pass after the change');
    expect(text).toContain("import errors at collection: `No module named 'dateutil'`");
    expect(verificationLine(result)).toMatch(/^\*\*The tests could not run in this environment/);
    const summary = renderSummary(result);
    expect(summary).toContain('- Verdict: inconclusive');
    expect(summary.indexOf('could not run in this environment')).toBeLessThan(
      summary.indexOf('## Tests'),
    );
  });

  it('pins what worked in the snippet', () => {
    const result = withEnvironment({
      commands: [{ command: "pip install -r 'requirements.txt'", from: 'requirements.txt' }],
      runnable: false,
      problem: 'the test command collected no tests',
    });
    expect(body(result)).toContain(
      `setup:\n  - "pip install -r 'requirements.txt'"\nnetwork: setup`,
    );
  });
});
