// summary.md for `frognano solve`: what a person reads first after a run.
import { inlineCode } from '../github/markdown.js';
import type { RunResult, TestResult } from '../runner/run-types.js';

export function renderSummary(result: RunResult): string {
  const lines: string[] = ['# frognano solve', ''];
  lines.push(`- Outcome: ${result.outcome}${result.error ? ` (${result.error})` : ''}`);
  if (result.exitReason) {
    lines.push(`- Exit reason: ${result.exitReason}${result.partial ? ' (partial work)' : ''}`);
  }
  const b = result.budgets;
  lines.push(`- Steps: ${b.steps}/${b.maxSteps}`);
  lines.push(
    `- Tokens: context ${b.contextTokens}, prompt ${b.promptTokens}, completion ${b.completionTokens}`,
  );
  lines.push(`- Wall time: ${seconds(b.wallMs)} of ${seconds(b.timeoutMs)}`);
  if (result.snapshotHit !== undefined) {
    lines.push(`- Setup snapshot: ${result.snapshotHit ? 'reused (setup skipped)' : 'none'}`);
  }
  lines.push('');

  lines.push('## Tests', '');
  if (result.testCommand) {
    const detail = result.testCommand.detail ? ` — ${result.testCommand.detail}` : '';
    lines.push(
      `Command (${result.testCommand.source}): \`${result.testCommand.command}\`${detail}`,
      '',
    );
    lines.push(`- Before: ${describeTest(result.verifyBefore)}`);
    lines.push(`- After: ${describeTest(result.verifyAfter)}`);
    lines.push(...harnessLines(result));
  } else {
    lines.push('No test command: none configured in .github/frognano.yml and none detected.');
  }
  lines.push('');

  lines.push('## Files changed', '');
  if (result.filesChanged.length === 0) lines.push('None: the patch is empty.');
  for (const file of result.filesChanged) lines.push(`- ${file}`);
  lines.push('');

  lines.push(...patchFactLines(result));

  if (result.violations.length > 0) {
    lines.push('## Policy violations', '');
    for (const v of result.violations) lines.push(`- ${v.rule}: ${v.detail}`);
    lines.push('');
  }

  const timings = Object.entries(result.timings);
  if (timings.length > 0) {
    lines.push('## Timings', '', '| phase | seconds |', '|---|---|');
    for (const [phase, ms] of timings) lines.push(`| ${phase} | ${(ms / 1000).toFixed(1)} |`);
    lines.push('');
  }

  lines.push('## Final message', '', result.finalMessage.trim() || '(empty)', '');
  for (const [label, test] of [
    ['before', result.verifyBefore],
    ['after', result.verifyAfter],
  ] as const) {
    if (test?.outputTail) {
      lines.push(`## Test output ${label} (tail)`, '', '```', test.outputTail.trimEnd(), '```', '');
    }
  }
  return `${lines.join('\n').trimEnd()}\n`;
}

/** Beside the verdict: harness files the patch changes, and the agent's own run. */
function harnessLines(result: RunResult): string[] {
  const facts = result.patchFacts;
  const lines: string[] = [];
  if (facts && facts.harnessFiles.length > 0) {
    lines.push(
      `- The patch changes the test harness (${names(facts.harnessFiles)}): "After" ran the repository's own harness as it was before the change.`,
    );
  }
  if (facts && facts.testFiles.length > 0) {
    lines.push(
      `- Tests the agent added or changed, not part of "After": ${names(facts.testFiles)}`,
    );
  }
  if (result.agentTests) {
    lines.push(
      `- The agent's own tests (the whole patch, its tests and harness changes included; not the verdict): ${describeTest(result.agentTests)}`,
    );
  }
  return lines;
}

/** Links, binaries, mode changes and .gitattributes, from git's reading of the patch. */
function patchFactLines(result: RunResult): string[] {
  const facts = result.patchFacts;
  if (!facts) return [];
  const items = [
    ...facts.symlinks.map((l) => `- symbolic link ${name(l.path)} → ${name(l.target)}`),
    ...facts.binaries.map((b) => `- binary file ${name(b.path)}, ${b.size} bytes, mode ${b.mode}`),
    ...facts.modeChanges.map(
      (m) => `- mode ${m.oldMode === '000000' ? 'new' : m.oldMode} → ${m.newMode}: ${name(m.path)}`,
    ),
    ...facts.gitattributes.map((g) => `- ${name(g)} changed: it decides how git filters files`),
  ];
  return items.length > 0
    ? ['## Links, binaries, mode changes and attributes', '', ...items, '']
    : [];
}

function names(paths: readonly string[]): string {
  return paths.map(name).join(', ');
}

/** A file name as inline code, control characters (a newline in a name) shown as escapes. */
function name(text: string): string {
  return inlineCode(
    text.replace(
      // eslint-disable-next-line no-control-regex
      /[\u0000-\u001f\u007f]/g,
      (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`,
    ),
  );
}

function describeTest(test: TestResult | undefined): string {
  if (!test) return 'not run';
  if (test.timedOut) return `timed out after ${seconds(test.durationMs)}`;
  return `${test.exitCode === 0 ? 'pass' : 'fail'} (exit ${test.exitCode}, ${seconds(test.durationMs)})`;
}

function seconds(ms: number): string {
  return `${(ms / 1000).toFixed(1)}s`;
}
