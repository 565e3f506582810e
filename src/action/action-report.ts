// What a workflow run reports when its event is handled: the exit code, the step's outputs, the
// step summary (the status comment's words, then the run's summary.md) and, for a failure, one
// line for the log. Exit 0: handled (a pull request or a follow-up commit, a refusal, nothing to
// do); 1: the run failed, or GitHub could not be asked whether the sender may start runs.
import { STATUS_MARKER } from '../github/status/index.js';
import type { RunRecord } from '../queue/types.js';
import type { IssueJob } from '../github/job.js';
import type { ActionOutputs } from './action-files.js';
import { redactSecrets } from '../redact.js';

export interface ActionReport {
  exitCode: 0 | 1;
  outputs: ActionOutputs;
  summary: string;
  /** One line for the log when the exit code is 1. */
  failure?: string;
}

/** Outcomes of finished runs that are a refusal, not a failure (the event was handled). */
const REFUSALS = new Set(['follow_up_refused']);

const HEADING = '## 🐸 frognano';

/** Nothing for the bot in this event (another label, not a command, a bot's own comment). */
export function ignoredReport(event: string, reason: string): ActionReport {
  return {
    exitCode: 0,
    outputs: outputsOf('ignored'),
    summary: `${HEADING}\n\nNothing to do for this \`${event}\` event: ${reason}.\n`,
  };
}

/** The event was decided without a run: refused, a cancel asked for, `/frognano use` answered. */
export function answeredReport(outcome: string, comment: string | undefined): ActionReport {
  const said = comment ? `\n\n${quote(comment)}\n` : '\n';
  return {
    exitCode: 0,
    outputs: outputsOf(outcome),
    summary: `${HEADING}\n\nOutcome: \`${outcome}\`.${said}`,
  };
}

/** GitHub did not answer the sender's permission check (or another of intake's calls). */
export function intakeFailedReport(): ActionReport {
  const failure =
    'GitHub could not be asked whether the sender may start runs (the API failed or refused the token; see the log above)';
  return {
    exitCode: 1,
    outputs: outputsOf('intake_failed'),
    summary: `${HEADING}\n\n${failure}.\n`,
    failure,
  };
}

/** Something this process did not foresee stopped it (a bug, the data directory busy, …). */
export function crashedReport(error: unknown): ActionReport {
  const message = error instanceof Error ? error.message || error.name : String(error);
  const failure = `stopped by an unexpected error: ${redactSecrets(message.split('\n')[0] ?? '')}`;
  return {
    exitCode: 1,
    outputs: outputsOf('internal_error'),
    summary: `${HEADING}\n\n${failure}\n`,
    failure,
  };
}

export interface RunFacts {
  run: RunRecord<IssueJob>;
  statusBody?: string;
  /** The run's summary.md, when the pipeline ran. */
  summaryMd?: string;
  serverUrl: string;
}

export function runReport(f: RunFacts): ActionReport {
  const { run } = f;
  const outcome = run.outcome ?? run.state;
  const failed = run.state === 'failed' && !REFUSALS.has(outcome);
  const status = f.statusBody ? statusText(f.statusBody) : `The run ended \`${outcome}\`.`;
  const pr = pullRequestOf(f);
  const parts = [HEADING, status];
  if (f.summaryMd) parts.push('---', f.summaryMd);
  return {
    exitCode: failed ? 1 : 0,
    outputs: outputsOf(outcome, run.id, pr),
    summary: `${parts.join('\n\n')}\n`,
    ...(failed ? { failure: firstLine(status) } : {}),
  };
}

/** All four outputs, empty when there is no run or no pull request. */
function outputsOf(
  outcome: string,
  runId = '',
  pr?: { number: number; url: string },
): ActionOutputs {
  return {
    outcome,
    'run-id': runId,
    'pr-number': pr ? String(pr.number) : '',
    'pr-url': pr?.url ?? '',
  };
}

/** The status comment without its hidden marker. */
function statusText(body: string): string {
  return body.startsWith(STATUS_MARKER) ? body.slice(STATUS_MARKER.length).trim() : body.trim();
}

function firstLine(status: string): string {
  return (status.split('\n')[0] ?? '').replace(/^🐸 \*\*frognano\*\*: /, '');
}

/** The pull request the run opened (as the status names it) or revised (the job's). */
function pullRequestOf(f: RunFacts): { number: number; url: string } | undefined {
  const opened = /opened draft pull request #(\d+) \((\S+)\)/.exec(f.statusBody ?? '');
  if (opened && f.run.outcome === 'pull_request') {
    return { number: Number(opened[1]), url: opened[2] as string };
  }
  if (f.run.outcome !== 'revision') return undefined;
  const { owner, repo, issueNumber } = f.run.job;
  return { number: issueNumber, url: `${f.serverUrl}/${owner}/${repo}/pull/${issueNumber}` };
}

function quote(text: string): string {
  return text
    .trim()
    .split('\n')
    .map((line) => `> ${line}`)
    .join('\n');
}
