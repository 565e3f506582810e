// summary.md for `frognano solve`: what a person reads first after a run.
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
  } else {
    lines.push('No test command: none configured in .github/frognano.yml and none detected.');
  }
  lines.push('');

  lines.push('## Files changed', '');
  if (result.filesChanged.length === 0) lines.push('None: the patch is empty.');
  for (const file of result.filesChanged) lines.push(`- ${file}`);
  lines.push('');

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

function describeTest(test: TestResult | undefined): string {
  if (!test) return 'not run';
  if (test.timedOut) return `timed out after ${seconds(test.durationMs)}`;
  return `${test.exitCode === 0 ? 'pass' : 'fail'} (exit ${test.exitCode}, ${seconds(test.durationMs)})`;
}

function seconds(ms: number): string {
  return `${(ms / 1000).toFixed(1)}s`;
}
