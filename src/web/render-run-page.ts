// The run page: one self-contained HTML document (no remote loads, works from a file) rendered
// entirely on the server. Every string a model, a tool or an issue wrote goes through `text()`.
import type { TrajectoryStep } from '../leaf/trajectory.js';
import type { TestResult } from '../runner/run-types.js';
import { testPassed } from '../runner/test-report.js';
import { highlightLine, languageOf } from './highlight.js';
import { escapeHtml, formatCount, formatDuration, jsonForScript, safeHref, text } from './html.js';
import { PAGE_SCRIPT, PAGE_STYLE, runPageCsp } from './page-assets.js';
import type { RunPageAttempt, RunPageData } from './run-page-data.js';

const LEAF_TOOLS = ['Bash', 'Read', 'Edit', 'Write', 'Glob'];
/** Observations longer than this are folded behind "show all". */
const FOLD_LINES = 12;
const FOLD_CHARS = 1500;
/** A patch is shown up to this many lines (patch.diff / the PR has all of it). */
const MAX_DIFF_LINES = 20_000;

export function renderRunPage(data: RunPageData): string {
  const live = data.liveUrl !== undefined;
  const title = `${data.repo}${data.issue.number ? `#${data.issue.number}` : ''}: ${data.issue.title}`;
  const liveBlock = live
    ? `<script type="application/json" id="frognano-live">${jsonForScript({
        url: data.liveUrl,
        after: data.attempts[0]?.trajectory?.steps.length ?? 0,
      })}</script>`
    : '';
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="${runPageCsp({ live })}">
<meta name="referrer" content="no-referrer">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${text(`frognano run · ${title}`)}</title>
<style>${PAGE_STYLE}</style>
</head><body>
<header class="run" id="run-header">${renderHeader(data)}</header>
<main id="run">${renderRunBody(data)}</main>
${liveBlock}<script>${PAGE_SCRIPT}</script>
</body></html>
`;
}

export function renderHeader(data: RunPageData): string {
  const issue = data.issue;
  const issueRef = issue.number ? `#${issue.number}` : 'task';
  const issueLink = issue.url
    ? `<a href="${safeHref(issue.url)}" rel="noreferrer noopener">${text(issueRef)}</a>`
    : text(issueRef);
  const outcome = data.outcome ?? (data.state === 'finished' ? 'finished' : data.state);
  const good = outcome === 'completed' || outcome === 'pull_request';
  const bad = data.state === 'finished' && !good;
  const facts: [string, string][] = [
    ['repository', text(data.repo)],
    ['issue', issueLink],
    ['model', text(data.model ?? 'unknown')],
    [
      'outcome',
      `<span class="badge${good ? ' ok' : bad ? ' bad' : ''}">${text(outcome)}</span>${
        data.state !== 'finished' ? ' <span class="live">(live)</span>' : ''
      }`,
    ],
    ['exit reason', text(data.exitReason ?? '–') + (data.partial ? ' (partial work)' : '')],
    ['steps', `${data.steps}${data.maxSteps ? `/${data.maxSteps}` : ''}`],
    [
      'tokens',
      `context ${formatCount(data.contextTokens)}${
        data.maxContextTokens ? `/${formatCount(data.maxContextTokens)}` : ''
      } · prompt ${formatCount(data.promptTokens)} · completion ${formatCount(data.completionTokens)}`,
    ],
    ['wall time', data.wallMs === undefined ? '–' : formatDuration(data.wallMs)],
    ['trigger', text(data.trigger ?? '–')],
    ['run', `<code>${text(data.runId)}</code>`],
  ];
  return (
    `<h1>${text(data.repo)} ${issueLink}: ${text(issue.title)}</h1>` +
    `<dl class="facts">${facts.map(([k, v]) => `<div><dt>${k}</dt><dd>${v}</dd></div>`).join('')}</dl>` +
    (data.error ? `<pre class="error">${text(data.error)}</pre>` : '')
  );
}

/** Everything below the header: evidence, then each attempt (tabs when there are several). */
export function renderRunBody(data: RunPageData): string {
  const parts: string[] = [renderEvidence(data)];
  if (data.task !== undefined) {
    // Collapsed: long, and read only when the change surprises.
    parts.push(
      `<section class="block"><details class="task"><summary>The task as the model saw it (issue text, instructions, instruction files, guidance, feedback)</summary><pre>${text(data.task)}</pre></details></section>`,
    );
  }
  if (data.finalMessage) {
    parts.push(
      `<section class="block"><h2>Final message</h2><pre>${text(data.finalMessage)}</pre></section>`,
    );
  }
  const several = data.attempts.length > 1;
  if (several) {
    parts.push(
      `<nav class="tabs" role="tablist">${data.attempts
        .map(
          (a, i) =>
            `<button type="button" role="tab" data-attempt="${attemptId(i)}" aria-selected="${i === 0}">${text(a.label)}${a.selected ? ' ★' : ''} · ${text(a.verdict)}</button>`,
        )
        .join('')}</nav>`,
    );
  }
  data.attempts.forEach((attempt, i) => {
    parts.push(renderAttempt(attempt, i, several, i === 0 && data.liveUrl !== undefined));
  });
  return parts.join('\n');
}

function attemptId(index: number): string {
  return `attempt-${index + 1}`;
}

/** Step anchors: `step-12` in the first attempt (the permalink), `attempt-2-step-12` after. */
export function stepAnchor(attemptIndex: number, stepIndex: number): string {
  return attemptIndex === 0
    ? `step-${stepIndex + 1}`
    : `${attemptId(attemptIndex)}-step-${stepIndex + 1}`;
}

function renderAttempt(
  attempt: RunPageAttempt,
  index: number,
  several: boolean,
  live: boolean,
): string {
  const steps = attempt.trajectory?.steps ?? [];
  const tools = new Set(LEAF_TOOLS);
  for (const step of steps) for (const o of step.observations) tools.add(o.tool);
  const verdict = several
    ? `<p class="pad">${text(attempt.label)}: ${text(attempt.verdict)}${attempt.selected ? ' (selected)' : ''}</p>`
    : '';
  return `<section class="attempt" id="${attemptId(index)}"${live ? ' data-live' : ''}>
${verdict}${renderDiff(attempt.patch, live)}
<section class="block"><h2>Steps</h2><ol class="summary">${renderSummaryItems(attempt, index, 0)}</ol></section>
<div class="toolbar"><input class="search" type="search" placeholder="Search steps (command, path, output, reasoning)" aria-label="Search steps">
<select class="tool-filter" aria-label="Filter by tool"><option value="">all tools</option>${[
    ...tools,
  ]
    .map((t) => `<option value="${text(t)}">${text(t)}</option>`)
    .join('')}<option value="(answer)">(answer)</option></select><span class="count"></span></div>
<div class="steps">${
    steps.length === 0
      ? `<p class="empty">${live ? 'No step yet: this page updates itself.' : 'No steps were recorded.'}</p>`
      : renderSteps(attempt, index, 0)
  }</div>
</section>`;
}

export function renderSummaryItems(attempt: RunPageAttempt, index: number, from: number): string {
  const steps = attempt.trajectory?.steps ?? [];
  return steps
    .slice(from)
    .map((step) => {
      const id = stepAnchor(index, step.step);
      return `<li data-step="${id}"><a href="#${id}"><span class="n">#${step.step + 1}</span> ${text(stepSummary(step))}</a></li>`;
    })
    .join('');
}

export function renderSteps(attempt: RunPageAttempt, index: number, from: number): string {
  const t = attempt.trajectory;
  if (!t) return '';
  const maxContext = t.budget.max_context_tokens;
  return t.steps
    .slice(from)
    .map((step) => renderStep(step, index, maxContext))
    .join('\n');
}

function renderStep(step: TrajectoryStep, attemptIndex: number, maxContext: number): string {
  const id = stepAnchor(attemptIndex, step.step);
  const calls = step.assistant.tool_calls ?? [];
  const toolNames = calls.length > 0 ? calls.map((c) => c.function.name) : ['(answer)'];
  const toolMs = step.tool_latency_ms.reduce((a, b) => a + b, 0);
  const reasoning = step.assistant.reasoning_content ?? step.assistant.reasoning ?? '';
  const meta = [
    `model ${formatDuration(step.model_latency_ms)}`,
    calls.length > 0 ? `tools ${formatDuration(toolMs)}` : '',
    `ctx ${formatCount(step.context_tokens)}${maxContext ? ` (${Math.round((100 * step.context_tokens) / maxContext)}%)` : ''}`,
    `at ${formatDuration(step.elapsed_sec * 1000)}`,
    step.tool_call_fallback ? 'tool call recovered from text' : '',
  ].filter(Boolean);
  const parts: string[] = [];
  if (reasoning.trim()) {
    parts.push(
      `<details class="reasoning"><summary>reasoning (${formatCount(reasoning.length)} chars)</summary><pre>${text(reasoning)}</pre></details>`,
    );
  }
  const content = step.assistant.content ?? '';
  if (content.trim()) parts.push(`<div class="content">${folded(content)}</div>`);
  calls.forEach((call, i) => {
    const obs = step.observations[i];
    parts.push(
      `<div class="call">${renderCall(call.function.name, call.function.arguments)}${
        obs
          ? `<div class="obs-label">observation${step.tool_latency_ms[i] !== undefined ? ` · ${formatDuration(step.tool_latency_ms[i] as number)}` : ''}</div>${folded(obs.observation)}`
          : ''
      }</div>`,
    );
  });
  // Observations without a matching call (a malformed turn): still shown.
  for (const obs of step.observations.slice(calls.length)) {
    parts.push(
      `<div class="call"><div class="call-head"><span class="tool">${text(obs.tool)}</span></div>${folded(obs.observation)}</div>`,
    );
  }
  return `<article class="step" id="${id}" data-tools="${text(toolNames.join(' '))}">
<h3><a class="permalink" href="#${id}">#${step.step + 1}</a><span>${text(toolNames.join(', '))}</span><span class="meta">${meta.map(text).join(' · ')}</span></h3>
${parts.join('\n')}
</article>`;
}

/** Pre-formatted text, folded behind "show all" when long. */
function folded(value: string): string {
  const lines = value.split('\n').length;
  if (lines <= FOLD_LINES && value.length <= FOLD_CHARS) return `<pre>${text(value)}</pre>`;
  const label = `show all (${formatCount(lines)} lines, ${formatCount(value.length)} chars)`;
  return `<pre class="folded">${text(value)}</pre><button type="button" class="show-all" data-label="${label}">${label}</button>`;
}

function parseArgs(raw: string): Record<string, unknown> | undefined {
  try {
    const parsed: unknown = JSON.parse(raw);
    return parsed && typeof parsed === 'object' && !Array.isArray(parsed)
      ? (parsed as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
}

function str(value: unknown): string {
  return typeof value === 'string' ? value : value === undefined ? '' : JSON.stringify(value);
}

function renderCall(name: string, rawArgs: string): string {
  const args = parseArgs(rawArgs);
  const head = (body: string) =>
    `<div class="call-head"><span class="tool">${text(name)}</span>${body}</div>`;
  if (!args) return head('') + `<pre>${text(rawArgs)}</pre>`;
  switch (name) {
    case 'Bash':
      return head(
        `<code>$ ${text(str(args.command))}</code>${args.description ? `<span class="desc">${text(str(args.description))}</span>` : ''}${args.timeout !== undefined ? `<span class="desc">timeout ${text(str(args.timeout))}s</span>` : ''}`,
      );
    case 'Read': {
      const range = [
        args.offset !== undefined ? `from line ${str(args.offset)}` : '',
        args.limit !== undefined ? `${str(args.limit)} lines` : '',
      ].filter(Boolean);
      return head(
        `<code>${text(str(args.file_path))}</code>${range.length ? `<span class="desc">${text(range.join(', '))}</span>` : ''}`,
      );
    }
    case 'Glob':
      return head(
        `<code>${text(str(args.pattern))}</code>${args.path !== undefined ? `<span class="desc">in ${text(str(args.path))}</span>` : ''}`,
      );
    case 'Edit': {
      const lines = [
        ...str(args.old_string)
          .split('\n')
          .map((l) => `<span class="l del">-${text(l)}</span>`),
        ...str(args.new_string)
          .split('\n')
          .map((l) => `<span class="l add">+${text(l)}</span>`),
      ];
      return (
        head(
          `<code>${text(str(args.file_path))}</code>${args.replace_all ? '<span class="desc">replace all</span>' : ''}`,
        ) + `<pre class="diff">${lines.join('')}</pre>`
      );
    }
    case 'Write':
      return head(`<code>${text(str(args.file_path))}</code>`) + folded(str(args.content));
    default:
      return head('') + `<pre>${text(JSON.stringify(args, null, 2))}</pre>`;
  }
}

/** One line per step for the summary list: its answer, or each tool call's main argument. */
function stepSummary(step: TrajectoryStep): string {
  const calls = step.assistant.tool_calls ?? [];
  if (calls.length === 0) {
    const content = (step.assistant.content ?? '').replace(/\s+/g, ' ').trim();
    return `answer: ${clip(content || '(empty)')}`;
  }
  return calls
    .map((call) => {
      const args = parseArgs(call.function.arguments);
      const name = call.function.name;
      if (!args) return `${name}: ${clip(call.function.arguments)}`;
      const main =
        name === 'Bash'
          ? args.command
          : name === 'Glob'
            ? args.pattern
            : (args.file_path ?? Object.values(args)[0]);
      return `${name}: ${clip(str(main).replace(/\s+/g, ' '))}`;
    })
    .join(' · ');
}

function clip(value: string, max = 140): string {
  return value.length > max ? `${value.slice(0, max - 1)}…` : value;
}

function renderEvidence(data: RunPageData): string {
  const after = data.attempts.find((a) => a.selected)?.verifyAfter;
  if (!data.testCommand && !data.verifyBefore && !after) {
    return data.state === 'finished'
      ? '<section class="block"><h2>Test evidence</h2><p class="empty">No test command: none configured and none detected, or the run stopped before the tests.</p></section>'
      : '';
  }
  const row = (label: string, r: TestResult | undefined) => {
    if (!r) return `<tr><th>${label}</th><td colspan="3">not run</td></tr>`;
    // Exit 0 without pytest's report (when one was asked for) is not a pass.
    const verdict = r.timedOut ? 'timed out' : testPassed(r) ? 'pass' : 'fail';
    const cls = testPassed(r) ? 'ok' : 'bad';
    return `<tr><th>${label}</th><td><span class="badge ${cls}">${verdict}</span></td><td>exit ${r.exitCode}</td><td>${formatDuration(r.durationMs)}</td></tr>`;
  };
  const tails = (
    [
      ['before', data.verifyBefore],
      ['after', after],
    ] as const
  )
    .filter(([, r]) => r?.outputTail)
    .map(
      ([label, r]) =>
        `<details class="out"><summary>output ${label} (tail)</summary><pre>${text(r?.outputTail)}</pre></details>`,
    )
    .join('');
  const command = data.testCommand ?? data.verifyBefore;
  return `<section class="block"><h2>Test evidence: before → after</h2>
${command ? `<div class="pad">command${data.testCommand ? ` (${text(data.testCommand.source)})` : ''}: <code>${text(command.command)}</code>${data.testCommand?.detail ? ` — ${text(data.testCommand.detail)}` : ''}</div>` : ''}
<table class="evidence">${row('before', data.verifyBefore)}${row('after', after)}</table>${tails}</section>`;
}

interface FileDiff {
  name: string;
  lines: string[];
  added: number;
  removed: number;
}

export function splitPatch(patch: string): FileDiff[] {
  const files: FileDiff[] = [];
  let current: FileDiff | undefined;
  for (const line of patch.split('\n')) {
    if (line.startsWith('diff --git ')) {
      current = { name: line.slice('diff --git '.length), lines: [], added: 0, removed: 0 };
      files.push(current);
    }
    if (!current) continue;
    current.lines.push(line);
    if (line.startsWith('+++ ') && line !== '+++ /dev/null')
      current.name = line.slice(4).replace(/^b\//, '');
    else if (line.startsWith('--- ') && line !== '--- /dev/null' && current.name.startsWith('a/'))
      current.name = line.slice(4).replace(/^a\//, '');
    else if (line.startsWith('+') && !line.startsWith('+++ ')) current.added++;
    else if (line.startsWith('-') && !line.startsWith('--- ')) current.removed++;
  }
  for (const f of files) {
    if (f.name.startsWith('a/')) f.name = f.name.replace(/^a\/(.*) b\/.*$/, '$1');
    while (f.lines.length > 0 && f.lines[f.lines.length - 1] === '') f.lines.pop();
  }
  return files;
}

function lineClass(line: string): string {
  if (line.startsWith('@@')) return 'hunk';
  if (line.startsWith('+++ ') || line.startsWith('--- ')) return 'meta';
  if (line.startsWith('+')) return 'add';
  if (line.startsWith('-')) return 'del';
  if (line.startsWith(' ') || line === '') return 'ctx';
  return 'meta';
}

function renderDiff(patch: string, running: boolean): string {
  const files = splitPatch(patch);
  if (files.length === 0 && running) {
    return '<section class="block"><h2>Change</h2><p class="empty">The change appears here when the run has finished.</p></section>';
  }
  if (files.length === 0) {
    return '<section class="block"><h2>Change</h2><p class="empty">No change: the patch is empty.</p></section>';
  }
  let budget = MAX_DIFF_LINES;
  const rendered = files.map((f) => {
    const shown = f.lines.slice(0, Math.max(0, budget));
    budget -= shown.length;
    const cut =
      shown.length < f.lines.length
        ? `<p class="empty">… ${formatCount(f.lines.length - shown.length)} more lines</p>`
        : '';
    const family = languageOf(f.name);
    return `<details class="file" open><summary>${text(f.name)} <span class="n-add">+${f.added}</span> <span class="n-del">−${f.removed}</span></summary><pre class="diff">${shown
      .map((l) => {
        const kind = lineClass(l);
        const body =
          kind === 'add' || kind === 'del' || kind === 'ctx'
            ? escapeHtml(l.slice(0, 1)) + highlightLine(l.slice(1), family)
            : text(l);
        return `<span class="l ${kind}">${body || ' '}</span>`;
      })
      .join('')}</pre>${cut}</details>`;
  });
  const added = files.reduce((n, f) => n + f.added, 0);
  const removed = files.reduce((n, f) => n + f.removed, 0);
  return `<section class="block"><h2>Change: ${files.length} file${files.length === 1 ? '' : 's'}, <span class="n-add">+${added}</span> <span class="n-del">−${removed}</span></h2>${rendered.join('')}</section>`;
}
