// summary.md for `frognano solve`: what a person reads first after a run. Everything the model,
// the repository or its commands wrote is escaped, quoted or fenced (src/github/markdown.ts), so
// a file name or a test's output cannot write a section of its own; the step table and the
// diffstat are the PR body's own renderers.
import path from 'node:path';
import { fence, fileName, inertQuote, inlineCode, tail, visibleControls } from '../markdown.js';
import { redactSecrets } from '../../redact.js';
import type { AttemptSummary, RunResult, TestResult } from '../../runner/run-types.js';
import { testPassed } from '../../runner/test-report.js';
import {
  environmentLines,
  environmentProblem,
  instructionFileWords,
  reportWords,
  testsInconclusive,
} from '../status/index.js';
import type { StopReason } from '../../leaf/protocol.js';
import { attemptsTable, changesSection, trajectoryTable, verdictLine } from './pr-body.js';
import { runtimeWords } from './runtime-words.js';
import { servedBySection } from './served-by.js';

export interface SummaryMeta {
  /** The served model name the run used. */
  model?: string;
  /** Where summary.md is written: the attempts' files are named relative to it. */
  outDir?: string;
  /** The top heading's text (default `frognano solve`; `frognano action` names its run). */
  heading?: string;
}

const TAIL_CHARS = 6000;

/** Each Leaf stop reason in plain words; the code itself is shown beside. */
const STOP_WORDS: Record<StopReason, string> = {
  agent: 'it finished on its own',
  max_turns: 'it ran out of steps',
  max_time: 'it ran out of time',
  max_context_len: 'the conversation outgrew the context window',
  max_tokens_per_turn: 'one answer reached the token limit of a turn',
  llm_query_error: 'the model endpoint stopped answering',
  tool_error: 'the sandbox failed under a tool call',
  cancelled: 'the run was cancelled',
};

export function renderSummary(result: RunResult, meta: SummaryMeta = {}): string {
  const several = result.attempts && result.attempts.length > 1 ? result.attempts : undefined;
  const lines: string[] = [
    ...headerLines(result, meta, several),
    ...problemLines(result),
    ...taskLines(result),
    ...setupLines(result),
    ...environmentSummaryLines(result),
    ...testLines(result),
    ...filesLines(result),
    ...patchFactLines(result),
    ...violationLines(result),
  ];
  if (result.patch.trim() !== '') lines.push(changesSection(result), '');
  if (several) lines.push(...attemptLines(several, meta.outDir));
  lines.push(trajectoryTable(result), '');
  const served = servedBySection(result, { chosen: 'selected' });
  if (served) lines.push(served, '');
  lines.push(...timingLines(result), ...finalLines(result));
  return `${lines.join('\n').trimEnd()}\n`;
}

/** The title and the run's facts: outcome, model, budgets, instruction files, snapshot. */
function headerLines(
  result: RunResult,
  meta: SummaryMeta,
  several: readonly AttemptSummary[] | undefined,
): string[] {
  // The pull request's own verdict first: what a reviewer needs before anything else.
  const lines: string[] = [`# ${meta.heading ?? 'frognano solve'}`, '', verdictLine(result), ''];
  lines.push(`- Outcome: ${result.outcome}${result.error ? ` (${codeText(result.error)})` : ''}`);
  if (result.exitReason) {
    const partial = result.partial ? ', so the patch is partial work' : '';
    lines.push(
      `- How the model stopped: ${STOP_WORDS[result.exitReason]} (\`${result.exitReason}\`)${partial}`,
    );
  }
  if (several) {
    lines.push(
      `- Selected attempt: ${result.selectedAttempt ?? several.find((a) => a.selected)?.attempt} of ${several.length} (the steps, tokens, tests and patch here are its own; see Attempts)`,
    );
  }
  if (meta.model) lines.push(`- Model: ${inlineCode(meta.model)}`);
  if (result.baseCommit) lines.push(`- Base commit: ${inlineCode(result.baseCommit)}`);
  const b = result.budgets;
  lines.push(`- Steps: ${b.steps}/${b.maxSteps}`);
  lines.push(
    `- Tokens: context ${b.contextTokens}, prompt ${b.promptTokens}, completion ${b.completionTokens}`,
  );
  // The run's whole time (clone, setup, tests) beside the agent's own limit, not a share of it.
  const per = several ? ' per attempt' : '';
  lines.push(`- Wall time: ${seconds(b.wallMs)} (agent time limit ${seconds(b.timeoutMs)}${per})`);
  if (result.instructionFiles) {
    const files = result.instructionFiles.map(instructionFileWords).join(', ');
    lines.push(`- Instruction files: ${files}`);
  }
  if (result.snapshotHit !== undefined) {
    lines.push(`- Setup snapshot: ${result.snapshotHit ? 'reused (setup skipped)' : 'none'}`);
  }
  if (result.sandboxRuntime)
    lines.push(`- Sandbox runtime: ${runtimeWords(result.sandboxRuntime)}`);
  lines.push('');
  return lines;
}

/** When the environment cannot run the tests: said first, with the snippet that fixes it. */
function problemLines(result: RunResult): string[] {
  const problem = environmentProblem(result);
  return problem ? [problem, ''] : [];
}

function environmentSummaryLines(result: RunResult): string[] {
  const lines = environmentLines(result);
  return lines.length > 0 ? ['## Environment', '', ...lines, ''] : [];
}

/** The task, collapsed: long, and what a reviewer checks only when the change surprises. */
function taskLines(result: RunResult): string[] {
  if (result.task === undefined) return [];
  return [
    '## The task as the model saw it',
    '',
    '<details><summary>The issue text, the instructions, the instruction files and any guidance or review feedback, exactly as sent</summary>',
    '',
    fence(result.task),
    '',
    '</details>',
    '',
  ];
}

/** A failed setup, or one that ran without the network it may have needed. */
function setupLines(result: RunResult): string[] {
  if (!(result.outcome === 'setup_failed' || (result.setupTail && result.setupNetwork === false))) {
    return [];
  }
  const lines = ['## Setup', ''];
  if (result.outcome === 'setup_failed') lines.push('The setup commands failed.', '');
  if (result.setupNetwork === false) {
    lines.push(
      "Setup ran without a network (`network: none`, or the operator's cap). If it needs to download dependencies, set `network: registries` in `.github/frognano.yml` (the package registries, through the bot's egress proxy) or `network: open`: setup then gets a network, which is cut before the tests and the agent run.",
      '',
    );
  }
  if (result.setupTail?.trim()) {
    lines.push('The end of its output:', '', fence(tail(result.setupTail, TAIL_CHARS)), '');
  }
  return lines;
}

function testLines(result: RunResult): string[] {
  const lines = ['## Tests', ''];
  if (result.testCommand) {
    const detail = result.testCommand.detail ? ` — ${codeText(result.testCommand.detail)}` : '';
    lines.push(
      `Command (${result.testCommand.source}): ${inlineCode(result.testCommand.command)}${detail}`,
      '',
    );
    lines.push(`- Before: ${describeTest(result.verifyBefore)}`);
    lines.push(`- After: ${describeTest(result.verifyAfter)}`);
    if (testsInconclusive(result))
      lines.push('- Verdict: inconclusive (the tests could not run in this environment)');
    lines.push(...harnessLines(result));
  } else {
    lines.push('No test command: none configured in .github/frognano.yml and none detected.');
  }
  lines.push('');
  return lines;
}

function filesLines(result: RunResult): string[] {
  const lines = ['## Files changed', ''];
  if (result.filesChanged.length === 0) lines.push('None: the patch is empty.');
  for (const file of result.filesChanged) lines.push(`- ${fileName(file)}`);
  lines.push('');
  return lines;
}

function violationLines(result: RunResult): string[] {
  if (result.violations.length === 0) return [];
  const lines = ['## Policy violations', ''];
  for (const v of result.violations) lines.push(`- ${v.rule}: ${fileName(v.detail)}`);
  lines.push('');
  return lines;
}

function timingLines(result: RunResult): string[] {
  const timings = Object.entries(result.timings);
  if (timings.length === 0) return [];
  const lines = ['## Timings', '', '| phase | seconds |', '|---|---|'];
  for (const [phase, ms] of timings) lines.push(`| ${phase} | ${(ms / 1000).toFixed(1)} |`);
  lines.push('');
  return lines;
}

/** The model's final message, then the ends of the tests' output. */
function finalLines(result: RunResult): string[] {
  const final = result.finalMessage.trim();
  const lines = ['## Final message', '', final ? inertQuote(final) : '(empty)', ''];
  for (const [label, test] of [
    ['before', result.verifyBefore],
    ['after', result.verifyAfter],
  ] as const) {
    if (test?.outputTail) {
      lines.push(
        `## Test output ${label} (tail)`,
        '',
        fence(tail(test.outputTail.trimEnd(), TAIL_CHARS)),
        '',
      );
    }
  }
  return lines;
}

/**
 * Several attempts: the PR body's table of how each went and why the selected one won, with
 * whole reasons, then where each attempt's patch and trajectory are (the runner-ups' too, so
 * they can be applied or read).
 */
function attemptLines(attempts: readonly AttemptSummary[], outDir: string | undefined): string[] {
  const where = (file: string) => fileName(outDir === undefined ? file : relativeTo(outDir, file));
  const lines = [
    '## Attempts',
    '',
    `${attempts.length} attempts ran in parallel from the same setup; each patch was verified in a fresh sandbox, and the one this summary describes (\`patch.diff\`) was chosen by the evidence below.`,
    '',
    attemptsTable(attempts, { chosen: 'selected', reasonChars: 2000 }),
    '',
    "Each attempt's files (`trajectory.html` shows every attempt, one tab each):",
    '',
  ];
  for (const a of attempts) {
    const patch = a.patchPath ? `patch ${where(a.patchPath)}` : 'patch not kept';
    const trajectory = a.trajectoryPath
      ? `trajectory ${where(a.trajectoryPath)}`
      : `no trajectory (it ended ${inlineCode(a.outcome)})`;
    const label = a.selected ? ' (selected, also `patch.diff`)' : '';
    lines.push(`- Attempt ${a.attempt}${label}: ${patch}, ${trajectory}`);
  }
  lines.push('');
  return lines;
}

/** `file` as it is named from `dir` when it lies inside it, as given otherwise. */
function relativeTo(dir: string, file: string): string {
  const relative = path.relative(dir, file);
  return relative === '' ||
    relative === '..' ||
    relative.startsWith(`..${path.sep}`) ||
    path.isAbsolute(relative)
    ? file
    : relative;
}

/**
 * Text that carries commands and file names (an error, how the test command was found) as one
 * code span: it reads the same in a terminal as rendered (`&&`, `__init__`, not `&amp;&amp;` or
 * `\_\_init\_\_`), and a code span never links, pings or formats.
 */
function codeText(text: string): string {
  return inlineCode(visibleControls(redactSecrets(text)).replace(/\s+/g, ' ').trim());
}

/** Beside the verdict: harness files the patch changes, and the agent's own run. */
function harnessLines(result: RunResult): string[] {
  const facts = result.patchFacts;
  const lines: string[] = [];
  if (facts && facts.harnessFiles.length > 0) {
    lines.push(
      `- The patch changes the test harness (${fileNames(facts.harnessFiles)}): "After" ran the repository's own harness as it was before the change.`,
    );
  }
  if (facts && facts.testFiles.length > 0) {
    lines.push(
      `- Tests the agent added or changed, not part of "After": ${fileNames(facts.testFiles)}`,
    );
  }
  const base = result.followUpBase;
  if (base && base.harnessFiles.length > 0) {
    lines.push(
      `- Not trusted: the revisions since the base revision ${inlineCode(base.commit.slice(0, 12))} change the test harness (${fileNames(base.harnessFiles)}): "Before" and "After" ran the base revision's harness.`,
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
    ...facts.symlinks.map((l) => `- symbolic link ${fileName(l.path)} → ${fileName(l.target)}`),
    ...facts.binaries.map(
      (b) => `- binary file ${fileName(b.path)}, ${b.size} bytes, mode ${b.mode}`,
    ),
    ...facts.modeChanges.map(
      (m) =>
        `- mode ${m.oldMode === '000000' ? 'new' : m.oldMode} → ${m.newMode}: ${fileName(m.path)}`,
    ),
    ...facts.gitattributes.map((g) => `- ${fileName(g)} changed: it decides how git filters files`),
  ];
  return items.length > 0
    ? ['## Links, binaries, mode changes and attributes', '', ...items, '']
    : [];
}

function fileNames(paths: readonly string[]): string {
  return paths.map(fileName).join(', ');
}

function describeTest(test: TestResult | undefined): string {
  if (!test) return 'not run';
  if (test.timedOut) return `timed out after ${seconds(test.durationMs)}`;
  const report = test.report ? `, ${reportWords(test.report)}` : '';
  return `${testPassed(test) ? 'pass' : 'fail'} (exit ${test.exitCode}${report}, ${seconds(test.durationMs)})`;
}

function seconds(ms: number): string {
  return `${(ms / 1000).toFixed(1)}s`;
}
