// The run page's building blocks without a browser: escaping for script blocks, highlighting
// that cannot leak markup or split a secret, patch splitting, page data, sealed sessions.
import { describe, expect, it } from 'vitest';
import { registerSecret } from '../../src/redact.js';
import { highlightLine, languageOf } from '../../src/web/highlight.js';
import { escapeHtml, jsonForScript, safeHref } from '../../src/web/html.js';
import { liveUpdate, renderRunPage, runPageData } from '../../src/web/index.js';
import { splitPatch } from '../../src/web/render-run-page.js';
import { SessionSealer, parseCookies } from '../../src/web/session.js';
import { runResult } from '../github/helpers/run-result.js';
import { generateTrajectory } from './helpers/generated-trajectory.js';

describe('escaping', () => {
  it('keeps JSON inside a script element from closing it or opening a comment', () => {
    const json = jsonForScript({
      a: '</script><script>alert(1)</script>',
      b: '<!--',
      c: '\u2028&',
    });
    expect(json).not.toMatch(/[<>&\u2028]/);
    expect(JSON.parse(json)).toEqual({
      a: '</script><script>alert(1)</script>',
      b: '<!--',
      c: '\u2028&',
    });
  });

  it('turns non-web links inert', () => {
    expect(safeHref('javascript:alert(1)')).toBe('#');
    expect(safeHref(' javascript:alert(1)')).toBe('#');
    expect(safeHref('data:text/html,<x>')).toBe('#');
    expect(safeHref('https://github.com/o/r/issues/1?a=1&b="')).toBe(
      'https://github.com/o/r/issues/1?a=1&amp;b=&quot;',
    );
    expect(escapeHtml(`<a href='x'>&`)).toBe('&lt;a href=&#39;x&#39;&gt;&amp;');
  });

  it('highlights only text it escaped, and redacts before splitting into tokens', () => {
    expect(languageOf('src/a.py')).toBe('hash');
    expect(languageOf('web/x.tsx')).toBe('slash');
    expect(languageOf('README')).toBeUndefined();
    const html = highlightLine(`x = "<img src=x onerror=alert(1)>"  # </span><b>`, 'hash');
    expect(html).toBe(
      'x = <span class="tk-s">&quot;&lt;img src=x onerror=alert(1)&gt;&quot;</span>  <span class="tk-c"># &lt;/span&gt;&lt;b&gt;</span>',
    );
    registerSecret('s3cr3t-value.with-dots');
    const secret = highlightLine('key = s3cr3t-value.with-dots + 1', 'hash');
    expect(secret).not.toContain('s3cr3t');
    expect(secret.replace(/<[^>]+>/g, '')).toBe('key = [REDACTED] + 1');
  });
});

describe('splitPatch', () => {
  it('names each file, counts its lines, and keeps deleted and added files apart', () => {
    const patch = [
      'diff --git a/a.py b/a.py',
      '--- a/a.py',
      '+++ b/a.py',
      '@@ -1 +1 @@',
      '-x',
      '+y',
      'diff --git a/gone.txt b/gone.txt',
      'deleted file mode 100644',
      '--- a/gone.txt',
      '+++ /dev/null',
      '@@ -1 +0,0 @@',
      '-bye',
      'diff --git a/new dir/n.md b/new dir/n.md',
      'new file mode 100644',
      '--- /dev/null',
      '+++ b/new dir/n.md',
      '@@ -0,0 +1,2 @@',
      '+a',
      '+b',
      '',
    ].join('\n');
    expect(splitPatch(patch).map((f) => [f.name, f.added, f.removed])).toEqual([
      ['a.py', 1, 1],
      ['gone.txt', 0, 1],
      ['new dir/n.md', 2, 0],
    ]);
    expect(splitPatch('')).toEqual([]);
  });
});

describe('runPageData and liveUpdate', () => {
  it('builds one attempt from a trajectory and a result', () => {
    const trajectory = generateTrajectory({ steps: 4, tokens: 2000 });
    const data = runPageData({
      runId: 'r1',
      repo: 'o/r',
      issue: { number: 3, title: 't' },
      trajectory,
      result: runResult(),
    });
    expect(data.state).toBe('finished');
    expect(data.liveUrl).toBeUndefined();
    expect(data.attempts).toHaveLength(1);
    expect(data.attempts[0]).toMatchObject({
      selected: true,
      verdict: 'stopped: agent · tests after: exit 0',
    });
    expect(data.steps).toBe(3);
  });

  it('shows the task as the model saw it, collapsed and escaped', () => {
    const task = 'add() subtracts\n\n<img src=x onerror=alert(1)> & more\n\nGuidance: run `make`.';
    const page = renderRunPage(
      runPageData({
        runId: 'r1',
        repo: 'o/r',
        issue: { number: 3, title: 't' },
        trajectory: generateTrajectory({ steps: 2, tokens: 500 }),
        result: runResult({ task }),
      }),
    );
    expect(page).toContain(
      '<details class="task"><summary>The task as the model saw it (issue text, instructions, instruction files, guidance, feedback)</summary><pre>add() subtracts\n\n&lt;img src=x onerror=alert(1)&gt; &amp; more\n\nGuidance: run `make`.</pre></details>',
    );
    expect(page).not.toContain('<img src=x');
  });

  it("shows an exit 0 without pytest's report as a fail", () => {
    const page = renderRunPage(
      runPageData({
        runId: 'r1',
        repo: 'o/r',
        issue: { number: 3, title: 't' },
        trajectory: generateTrajectory({ steps: 2, tokens: 500 }),
        result: runResult({
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
      }),
    );
    expect(page).toMatch(
      /<th>after<\/th><td><span class="badge bad">fail<\/span><\/td><td>exit 0<\/td>/,
    );
  });

  it('builds one tab per attempt of a run with several, the winner marked, each with its reason', () => {
    const one = generateTrajectory({ steps: 4, tokens: 2000 });
    const two = generateTrajectory({ steps: 2, tokens: 1000 });
    const base = runResult();
    const summary = (attempt: number, selected: boolean, reason: string) => ({
      attempt,
      outcome: 'completed' as const,
      exitReason: 'agent' as const,
      patch: attempt === 1 ? base.patch : '',
      partial: false,
      filesChanged: [],
      finalMessage: '',
      steps: 3,
      promptTokens: 1,
      completionTokens: 1,
      contextTokens: 2,
      violations: [],
      tests: 'pass' as const,
      testsText: 'pass',
      ownTests: 'none' as const,
      votes: 1,
      diffLines: 2,
      selected,
      reason,
    });
    const data = runPageData({
      runId: 'r1',
      repo: 'o/r',
      issue: { number: 3, title: 't' },
      trajectory: one,
      attemptTrajectories: { 2: two },
      result: runResult({
        attempts: [
          summary(1, true, 'won: tests after pass'),
          summary(2, false, 'lost: the patch is empty'),
        ],
        selectedAttempt: 1,
      }),
    });
    expect(data.attempts.map((a) => [a.label, a.selected, a.trajectory])).toEqual([
      ['attempt 1', true, one],
      ['attempt 2', false, two],
    ]);
    expect(data.attempts[1]!.verdict).toBe('stopped: agent · lost: the patch is empty');
    const html = renderRunPage(data);
    expect(html).toContain('data-attempt=');
    expect(html).toContain('lost: the patch is empty');
  });

  it('sends only the steps after the ones the page has, and the body once finished', () => {
    const running = runPageData({
      runId: 'r1',
      repo: 'o/r',
      issue: { title: 't' },
      state: 'running',
      trajectory: generateTrajectory({ steps: 6, tokens: 3000, status: 'running' }),
      liveUrl: '/live',
    });
    const update = liveUpdate(running, 4);
    expect(update.after).toBe(6);
    expect(update.steps.match(/<article class="step"/g)).toHaveLength(2);
    expect(update.steps).toContain('id="step-5"');
    expect(update.final).toBeUndefined();
    expect(renderRunPage(running)).toContain('id="frognano-live"');
    const done = liveUpdate({ ...running, state: 'finished', liveUrl: undefined }, 6);
    expect(done.steps).toBe('');
    expect(done.final).toContain('id="step-1"');
  });
});

describe('SessionSealer', () => {
  it('opens only what it sealed, unexpired and untouched', () => {
    const sealer = new SessionSealer('client-secret-0123456789');
    const token = sealer.seal({ login: 'alice', token: 'gho_x' }, 60);
    expect(sealer.unseal(token)).toEqual({ login: 'alice', token: 'gho_x' });
    expect(Buffer.from(token, 'base64url').toString('latin1')).not.toContain('alice');
    const flipped = Buffer.from(token, 'base64url');
    flipped[flipped.length - 1]! ^= 1;
    expect(sealer.unseal(flipped.toString('base64url'))).toBeUndefined();
    expect(new SessionSealer('another-secret-0123456789').unseal(token)).toBeUndefined();
    expect(sealer.unseal(sealer.seal({ a: 1 }, -1))).toBeUndefined();
    expect(sealer.unseal('garbage')).toBeUndefined();
    expect(sealer.checkCsrf(token, sealer.csrfToken(token))).toBe(true);
    expect(sealer.checkCsrf(token, sealer.csrfToken(`${token}x`))).toBe(false);
    expect(parseCookies('a=1; b=2; a=3')).toEqual({ a: '1', b: '2' });
  });
});
