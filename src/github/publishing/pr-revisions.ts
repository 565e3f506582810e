// The "Revisions" part of the draft pull request's body: one section per published follow-up,
// the newest open, earlier ones collapsed, appended below what the first run wrote. Sections sit
// between markers so the next revision can find and fold them; the whole body stays within
// GitHub's size limit (the oldest revisions go first, then the top is cut).
import type { RunResult, TestResult } from '../../runner/run-types.js';
import { redactSecrets } from '../../redact.js';
import { PR_BODY_LIMIT } from './pr-body.js';
import { changedFiles, diffstatLines, diffstatTotal } from './diffstat.js';
import { fence, fileName, inertQuote, inlineCode, textCell } from '../markdown.js';
import { exitWords } from '../status/index.js';

export const REVISIONS_MARKER = '<!-- frognano:revisions -->';
const BODY_BUDGET = PR_BODY_LIMIT - 1_536;
const startMarker = (n: number) => `<!-- frognano:revision ${n} -->`;
const endMarker = (n: number) => `<!-- frognano:revision-end ${n} -->`;

export interface RevisionInput {
  revision: number;
  result: RunResult;
  commit: string;
  parent: string;
  requestedBy: string;
  trigger: 'comment' | 'review' | 'review_comment';
  /** Sanitized request text (after `/frognano`). */
  feedback: string;
  threads: { path: string; line?: number; comments: { body: string }[] }[];
  trajectoryUrl?: string;
}

const TRIGGER_WORDS = {
  comment: 'a comment',
  review: 'a review',
  review_comment: 'a review comment',
} as const;

/** The inner text of one revision's section (no heading: the fold decides that). */
export function renderRevision(input: RevisionInput): string {
  const { result } = input;
  const parts: string[] = [
    `Commit ${inlineCode(input.commit.slice(0, 12))} on top of ${inlineCode(input.parent.slice(0, 12))}, asked for by @${input.requestedBy} in ${TRIGGER_WORDS[input.trigger]}.`,
  ];
  const feedback: string[] = ['**Feedback**'];
  if (input.feedback.trim()) feedback.push('', inertQuote(cut(input.feedback.trim(), 1_500)));
  if (input.threads.length > 0) {
    feedback.push('');
    for (const t of input.threads.slice(0, 30)) {
      const where = t.line === undefined ? t.path : `${t.path}:${t.line}`;
      feedback.push(`- ${fileName(where)}: ${textCell(t.comments[0]?.body ?? '', 100)}`);
    }
    if (input.threads.length > 30) feedback.push(`- … and ${input.threads.length - 30} more`);
  }
  parts.push(feedback.join('\n'));
  const summary = result.finalMessage.trim();
  parts.push(
    summary
      ? `**The model's summary**\n\n${inertQuote(cut(summary, 3_000))}`
      : "**The model's summary**: _none given._",
  );
  parts.push(evidence(result));
  const untrusted = untrustedHarness(result);
  if (untrusted) parts.push(untrusted);
  // git's reading of this revision's patch when the run has it: the text is the agent's.
  const files = changedFiles(result.patchFacts, result.patch);
  const lines = [...diffstatLines(files, 100), diffstatTotal(files)];
  parts.push(`**Changes**\n\n${fence(lines.join('\n'))}`);
  const b = result.budgets;
  parts.push(
    `**Budgets**: ${b.steps} of ${b.maxSteps} steps; ${b.promptTokens.toLocaleString('en-US')} prompt and ${b.completionTokens.toLocaleString('en-US')} completion tokens; ${seconds(b.wallMs)} of ${seconds(b.timeoutMs)}; exit reason ${result.exitReason ?? result.outcome}.`,
  );
  if (input.trajectoryUrl) parts.push(`The run page: ${input.trajectoryUrl}`);
  return redactSecrets(parts.join('\n\n'));
}

function evidence(result: RunResult): string {
  if (!result.testCommand) {
    return '**Test evidence**: no test command was configured or detected, so this revision is **unverified**.';
  }
  const row = (label: string, t: TestResult | undefined) =>
    t
      ? `| ${label} | ${exitWords(t.exitCode, t.timedOut)} | ${t.exitCode} | ${seconds(t.durationMs)} |`
      : `| ${label} | not run | – | – |`;
  return [
    `**Test evidence**: ${inlineCode(redactSecrets(result.testCommand.command))} on the previous head (before) and with this revision (after).`,
    '',
    '| | result | exit code | time |',
    '|---|---|---|---|',
    row('before', result.verifyBefore),
    row('after', result.verifyAfter),
  ].join('\n');
}

/**
 * The harness files any revision changed since the base revision: the evidence above ran the
 * base revision's versions of them, so what a model wrote there decides nothing.
 */
function untrustedHarness(result: RunResult): string {
  const base = result.followUpBase;
  if (!base || base.harnessFiles.length === 0) return '';
  const names = base.harnessFiles.slice(0, 30).map((p) => fileName(p));
  if (base.harnessFiles.length > 30) names.push(`and ${base.harnessFiles.length - 30} more`);
  return `**Not trusted: the test harness.** The revisions of this pull request change ${names.join(', ')}. Before and after ran the harness as it was at the base revision ${inlineCode(base.commit.slice(0, 12))}; these files are reported, not trusted.`;
}

interface Section {
  n: number;
  text: string;
}

/** The body with `section` as the newest revision, earlier ones folded, within the size limit. */
export function withRevision(body: string, section: Section): string {
  const at = body.indexOf(REVISIONS_MARKER);
  const top = (at >= 0 ? body.slice(0, at) : body).trimEnd();
  const earlier = at >= 0 ? parseSections(body.slice(at)) : [];
  const all = [section, ...earlier.filter((s) => s.n !== section.n)].sort((a, b) => b.n - a.n);
  for (let keep = all.length; keep >= 1; keep--) {
    const out = render(top, all.slice(0, keep));
    if (out.length <= BODY_BUDGET) return out;
  }
  // Only the newest section and a cut top fit.
  const tailPart = renderRevisions([section]);
  const note = '\n\n_(The first run’s description was cut to fit GitHub’s size limit.)_\n\n';
  const room = Math.max(0, BODY_BUDGET - tailPart.length - note.length);
  return (top.slice(0, room) + note + tailPart).slice(0, BODY_BUDGET);
}

function render(top: string, sections: Section[]): string {
  return `${top}\n\n${renderRevisions(sections)}`;
}

function renderRevisions(sections: Section[]): string {
  // Revisions are numbered from 2 (the first attempt is 1): those below the oldest shown went
  // to make room, now or at an earlier revision.
  const dropped = Math.max(0, Math.min(...sections.map((s) => s.n)) - 2);
  const out = [REVISIONS_MARKER, '## Revisions'];
  sections.forEach((s, i) => {
    const inner = `${startMarker(s.n)}\n${s.text}\n${endMarker(s.n)}`;
    out.push(
      i === 0
        ? `### Revision ${s.n} (latest)\n\n${inner}`
        : `<details><summary>Revision ${s.n}</summary>\n\n${inner}\n\n</details>`,
    );
  });
  if (dropped > 0) {
    out.push(
      `_(${dropped} earlier revision${dropped === 1 ? '' : 's'} left out to fit GitHub’s size limit; the commits are on the branch.)_`,
    );
  }
  return `${out.join('\n\n')}\n`;
}

function parseSections(text: string): Section[] {
  const sections: Section[] = [];
  const re = /<!-- frognano:revision (\d+) -->\n([\s\S]*?)\n<!-- frognano:revision-end \1 -->/g;
  for (const m of text.matchAll(re)) sections.push({ n: Number(m[1]), text: m[2] ?? '' });
  return sections;
}

function cut(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max)}…` : text;
}

function seconds(ms: number): string {
  if (ms >= 60_000) return `${Math.floor(ms / 60_000)} min ${Math.round((ms % 60_000) / 1000)} s`;
  return `${(ms / 1000).toFixed(1)} s`;
}
