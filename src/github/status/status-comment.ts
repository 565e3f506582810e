// One status comment per issue, found by a hidden marker and edited in place, so a run never
// floods the issue: queued (position) -> running (phase, step n/max) -> done / failed.
import type { Logger } from 'pino';
import type { RunPhase, RunResult, TestReport, TestResult } from '../../runner/run-types.js';
import type { RunStatus } from '../../runs/index.js';
import { counted, testPassed } from '../../runner/test-report.js';
import { redactSecrets } from '../../redact.js';
import { fence, inertQuote, inlineCode, literalLines, tail } from '../markdown.js';
import { environmentProblem } from './environment-words.js';
import type { GitHubClient, IssueRef } from '../octokit.js';
import type { RestBudget } from '../rest-budget.js';
import type { IssueJob } from '../job.js';
import type { WorkflowRunLink } from '../workflow-run.js';

export const STATUS_MARKER = '<!-- frognano:status -->';

/** The queue note under which an issue's status comment id is kept (shared with other processes). */
export const STATUS_COMMENT_NOTE = 'status-comment-id';

/** Who asked for the run, and how, in the status comment's words. */
export function triggerWords(t: {
  sender: { login: string };
  source?: IssueJob['source'];
}): string {
  const { source } = t;
  if (source === 'review') return `follow-up requested by @${t.sender.login}`;
  return source === 'retry' ? `retried by @${t.sender.login}` : `requested by @${t.sender.login}`;
}

const FOLLOW_UP_HINT =
  'Comment `/frognano <what to change>` on this pull request (or review it with `/frognano` in the review) to try again.';

const RETRY_HINT =
  'Comment `/frognano retry` to try again; anything after it on the same comment is passed to the model as extra guidance.';

/** What the status comment shows: the run's status, in the runs room's vocabulary. */
export type StatusState = RunStatus;

const PHASE_WORDS: Record<RunPhase, string> = {
  clone: 'cloning the repository',
  config: 'reading `.github/frognano.yml`',
  sandbox: 'starting the sandbox',
  setup: 'running the setup commands',
  'verify-before': 'running the tests before the change',
  agent: 'the model is working',
  capture: 'capturing the change',
  'verify-after': 'running the tests after the change',
  policy: 'checking the change against the repository policy',
  cleanup: 'cleaning up',
};

/** What the comment's small print names: the trigger, the run, where to see it. */
export interface StatusMeta {
  runId?: string;
  trigger?: string;
  runPageUrl?: string;
  /** Actions mode: the workflow run and the artifact holding the run page. */
  workflowRun?: WorkflowRunLink;
}

const VERIFICATION_WORDS = { none: '', verifying: ', testing its change', done: ', tested' };

export function renderStatus(state: StatusState, meta: StatusMeta = {}): string {
  const lines: string[] = [STATUS_MARKER, ...stateLines(state)];
  const notes = 'notes' in state ? (state.notes ?? []) : [];
  if (notes.length > 0) lines.splice(2, 0, '', ...notes);
  if (meta.runId || meta.trigger) {
    const bits = [
      meta.trigger,
      meta.runId ? `run ${inlineCode(meta.runId)}` : undefined,
      meta.runPageUrl ? `[run page](${meta.runPageUrl})` : undefined,
      meta.workflowRun
        ? `[workflow run](${meta.workflowRun.url}), artifact \`${meta.workflowRun.artifact}\``
        : undefined,
    ].filter(Boolean);
    lines.push('', `<sub>${bits.join(' · ')}</sub>`);
  }
  // Reasons carry error texts (clone, sandbox, model endpoint): whatever secret the process
  // knows of must not reach a public comment through any of them.
  return redactSecrets(lines.join('\n'));
}

type StateOf<K extends StatusState['kind']> = Extract<StatusState, { kind: K }>;

/** The comment's own lines for `state`: its headline first, then what follows from it. */
function stateLines(state: StatusState): string[] {
  switch (state.kind) {
    case 'queued':
      return [
        state.requeued
          ? `🐸 **frognano**: the previous attempt was interrupted by a restart; queued again (position ${state.position}).`
          : `🐸 **frognano**: queued (position ${state.position}).`,
        '',
        'Comment `/frognano cancel` to cancel.',
      ];
    case 'running':
      return runningLines(state);
    case 'done':
      return doneLines(state);
    case 'revised':
      return revisedLines(state);
    case 'no-change':
      return noChangeLines(state);
    case 'failed': {
      const lines = [`🐸 **frognano**: the run failed: ${state.reason}`];
      if (state.detail?.trim()) lines.push('', fence(tail(redactSecrets(state.detail), 3000)));
      lines.push('', state.followUp ? FOLLOW_UP_HINT : RETRY_HINT);
      return lines;
    }
    case 'cancelled':
      return [
        `🐸 **frognano**: cancelled${state.by ? ` by @${state.by}` : ''}. Comment \`/frognano retry\` to start again.`,
      ];
    case 'interrupted':
      return [
        '🐸 **frognano**: interrupted: the app is shutting down. The run will be queued again once when it restarts.',
      ];
    case 'full':
      return [
        `🐸 **frognano**: not queued: ${state.repo} already has ${state.limit} run${state.limit === 1 ? '' : 's'} waiting, the most this server queues per repository (\`FROGNANO_MAX_QUEUED_PER_REPO\`). ${state.followUp ? 'Comment `/frognano <what to change>` again' : 'Comment `/frognano retry`'} once some have started.`,
      ];
    case 'busy':
      return [
        `🐸 **frognano**: a run for this issue is already ${state.state}. Comment \`/frognano cancel\` to stop it, then \`/frognano retry\` to start again.`,
      ];
  }
}

/** The phase (or the parallel attempts' steps), a wait for a model slot, a last try. */
function runningLines(state: StateOf<'running'>): string[] {
  const lines: string[] = [];
  const step =
    state.step !== undefined && state.maxSteps !== undefined
      ? ` (step ${state.step}/${state.maxSteps})`
      : '';
  const several = state.attempts !== undefined && Object.keys(state.attempts).length > 0;
  const waiting = state.waiting ?? [];
  const doing =
    !several && waiting.length > 0 ? 'waiting for a model slot' : PHASE_WORDS[state.phase];
  lines.push(`🐸 **frognano**: running: ${doing}${several ? '' : step}.`);
  if (several) {
    const of = state.maxSteps !== undefined ? `/${state.maxSteps}` : '';
    const progress = Object.entries(state.attempts!)
      .sort(([a], [b]) => Number(a) - Number(b))
      .map(
        ([k, n]) =>
          `attempt ${k}: step ${n}${of}${waiting.includes(Number(k)) ? ', waiting for a model slot' : ''}${VERIFICATION_WORDS[state.verification?.[Number(k)] ?? 'none']}`,
      );
    lines.push('', `Parallel attempts: ${progress.join(' · ')}.`);
  }
  if (waiting.length > 0) {
    lines.push(
      '',
      'Every model endpoint is serving as many runs as it may at once; the wait does not count against the time limit.',
    );
  }
  if (state.retried) {
    lines.push(
      '',
      'The previous attempt was interrupted (a restart, or its worker was lost); this is the last try.',
    );
  }
  lines.push('', 'Comment `/frognano cancel` to stop it.');
  return lines;
}

function doneLines(state: StateOf<'done'>): string[] {
  const lines = [
    `🐸 **frognano**: opened draft pull request #${state.prNumber} (${state.prUrl}) for human review.`,
  ];
  if (state.verified) lines.push('', state.verified);
  if (state.partial) {
    lines.push('', 'The model stopped on a limit, so the change may be incomplete.');
  }
  lines.push(
    '',
    'Not right? Review the draft, or ' + RETRY_HINT.charAt(0).toLowerCase() + RETRY_HINT.slice(1),
  );
  return lines;
}

function revisedLines(state: StateOf<'revised'>): string[] {
  const lines = [
    `🐸 **frognano**: pushed revision ${state.revision} to this pull request: ${state.commit}.`,
  ];
  if (state.verified) lines.push('', state.verified);
  if (state.partial) {
    lines.push('', 'The model stopped on a limit, so the change may be incomplete.');
  }
  if (state.threads > 0) {
    lines.push(
      '',
      `Answered ${state.replies} of the ${state.threads} review thread${state.threads === 1 ? '' : 's'} it was given.`,
    );
  }
  if (!state.bodyUpdated) {
    lines.push('', 'The description could not be updated with this revision.');
  }
  lines.push('', 'Still not right? Comment `/frognano <what to change>` or review again.');
  return lines;
}

function noChangeLines(state: StateOf<'no-change'>): string[] {
  const lines = [
    `🐸 **frognano**: ${state.followUp ? 'no new commit' : 'no pull request'}: ${state.reason}`,
  ];
  if (state.finalMessage.trim()) {
    lines.push('', "The model's final message:", '', quote(state.finalMessage));
  }
  lines.push('', state.followUp ? FOLLOW_UP_HINT : RETRY_HINT);
  return lines;
}

function quote(text: string): string {
  return inertQuote(tail(text.trim(), 4000));
}

/** A plain-words account of why a run produced no pull request, from its result. */
export function describeResult(run: RunResult): StatusState | undefined {
  // Error texts can carry text from inside the sandbox (e.g. what the agent wrote to the tool
  // helper's stderr): prose, so made literal and kept on one line like the model's own words.
  const result =
    run.error === undefined ? run : { ...run, error: literalLines(run.error).join(' ') };
  switch (result.outcome) {
    case 'config_error':
      // A file other than the repository's own (the owner's `.github` repository, `_extends`)
      // is named by the error itself.
      if (
        result.error !== undefined &&
        /^(?:[\w.-]+\/[\w.-]+:\S+|the configuration) /.test(result.error)
      ) {
        return {
          kind: 'failed',
          reason: `the configuration could not be used: ${result.error}. Fix the file it names, then retry.`,
        };
      }
      return {
        kind: 'failed',
        reason: `\`.github/frognano.yml\` is not valid: ${result.error ?? 'see the run log'}. Fix the file, then retry.`,
      };
    case 'clone_failed':
      return {
        kind: 'failed',
        reason: `cloning the repository failed: ${result.error ?? 'unknown error'}.`,
      };
    case 'sandbox_failed':
      return {
        kind: 'failed',
        reason: `the sandbox could not be started: ${result.error ?? 'unknown error'}.`,
      };
    case 'sandbox_limit':
      return {
        kind: 'failed',
        reason: `the run was stopped: ${result.error ?? 'the sandbox passed a disk limit'}.`,
      };
    case 'setup_failed':
      return {
        kind: 'failed',
        reason: `the setup commands failed${result.error ? ` (${result.error})` : ''}. The end of their output:`,
        detail: result.setupTail ?? '',
      };
    case 'model_unreachable':
      return {
        kind: 'failed',
        reason: `the model endpoint could not be reached${result.error ? `: ${result.error}` : ''}. Check that the model server is up.`,
      };
    case 'capture_failed':
      return {
        kind: 'failed',
        reason: `the agent finished, but its change could not be read out of the sandbox: ${result.error ?? 'unknown error'}.`,
      };
    case 'cancelled':
      return { kind: 'cancelled' };
    case 'completed':
      break;
  }
  if (result.violations.length > 0) {
    return {
      kind: 'failed',
      reason: `the change touched paths the bot may not change, so it was not published: ${result.violations
        .map((v) => `${v.rule} ${inlineCode(v.detail)}`)
        .join(', ')}.`,
    };
  }
  if (result.patch.trim() === '') {
    const why =
      result.exitReason === 'llm_query_error'
        ? 'the model endpoint stopped answering during the run and no file was changed.'
        : result.exitReason && result.exitReason !== 'agent'
          ? `the model stopped on a limit (${result.exitReason}) without changing any file.`
          : 'the model finished without changing any file.';
    const noTest = result.testCommand ? '' : ' No test command was configured or detected either.';
    return { kind: 'no-change', reason: why + noTest, finalMessage: result.finalMessage };
  }
  return undefined;
}

/** One line about the test evidence, for the status comment. */
export function verificationLine(result: RunResult): string {
  if (!result.testCommand) {
    return 'No test command was configured (`test:` in `.github/frognano.yml`) or detected, so the change is unverified.';
  }
  const before = result.verifyBefore ? testWords(result.verifyBefore) : 'not run';
  const after = result.verifyAfter ? testWords(result.verifyAfter) : 'not run';
  const line = `Tests ${inlineCode(result.testCommand.command)}: before ${before} → after ${after}.`;
  // Said first and plainly: a failure here is the environment's, not the change's.
  const problem = environmentProblem(result);
  return problem ? `${problem}\n\n${line}` : line;
}

/**
 * Pass or fail for one test run: exit 0 counts only with pytest's report when one was asked
 * for, and the report's counts (or why there is none) are shown beside the exit code.
 */
export function testWords(test: TestResult): string {
  if (test.timedOut) return 'timed out';
  const report = test.report ? `, ${reportWords(test.report)}` : '';
  return `${testPassed(test) ? 'passed' : 'failed'} (exit ${test.exitCode}${report})`;
}

/** pytest's JUnit report in a few words (made literal: the file was the sandbox's to write). */
export function reportWords(report: TestReport): string {
  const words = report.present ? presentReportWords(report) : (report.problem ?? 'no test report');
  return literalLines(words).join(' ');
}

/** The counts of a report pytest wrote: what was collected apart from what could not be. */
function presentReportWords(report: TestReport): string {
  const uncollected = report.collectionErrors ?? 0;
  const counts = [
    counted(report.tests - uncollected, 'test'),
    counted(report.failures, 'failure'),
    counted(report.errors - uncollected, 'error'),
  ];
  // Nothing ran: the other counts would read as a run of none.
  if (uncollected > 0 && report.tests === uncollected && report.failures === 0) {
    return `pytest report: ${counted(uncollected, 'collection error')}, 0 tests`;
  }
  const lead = uncollected > 0 ? `${counted(uncollected, 'collection error')}, ` : '';
  return `pytest report: ${lead}${counts.join(', ')}`;
}

export function exitWords(exitCode: number, timedOut: boolean): string {
  if (timedOut) return 'timed out';
  return exitCode === 0 ? 'passed (exit 0)' : `failed (exit ${exitCode})`;
}

interface CommentRow {
  id: number;
  body?: string | null;
  user?: { login: string; type?: string } | null;
  performed_via_github_app?: { id: number } | null;
}

/** Attempts at creating the comment when GitHub answers 5xx (each after looking for it first). */
const CREATE_ATTEMPTS = 3;
const CREATE_RETRY_MS = 1000;

/**
 * Creates or edits the issue's status comment and returns its id. A known id is edited directly;
 * otherwise the first page of comments (and the last, for long threads) is searched for our marker.
 */
export async function ensureStatusComment(
  octokit: GitHubClient,
  issue: IssueRef,
  body: string,
  knownId?: number,
): Promise<number> {
  const ref = { owner: issue.owner, repo: issue.repo };
  if (knownId !== undefined) {
    try {
      await octokit.rest.issues.updateComment({ ...ref, comment_id: knownId, body });
      return knownId;
    } catch (error) {
      // Someone deleted it: start a new one.
      if ((error as { status?: number }).status !== 404) throw error;
    }
  } else {
    const found = await findStatusComment(octokit, issue);
    if (found !== undefined) {
      const edited = await editFound(octokit, issue, found, body);
      if (edited !== undefined) return edited;
    }
  }
  return createStatusComment(octokit, issue, body);
}

/** Edits a comment we found; undefined when it turned out not to be ours to edit. */
async function editFound(
  octokit: GitHubClient,
  issue: IssueRef,
  id: number,
  body: string,
): Promise<number | undefined> {
  try {
    await octokit.rest.issues.updateComment({
      owner: issue.owner,
      repo: issue.repo,
      comment_id: id,
      body,
    });
    return id;
  } catch (error) {
    // Another App's comment carrying our marker (403), or one deleted meanwhile (404),
    // must not stop a run from reporting: start our own.
    const status = (error as { status?: number }).status;
    if (status !== 403 && status !== 404) throw error;
    return undefined;
  }
}

/**
 * Posts the status comment. Never blindly again: GitHub may have created the comment and then
 * answered 5xx (or the connection dropped), so the retry plugin is off for this POST and each
 * new attempt first looks for the comment the last one may have left.
 */
async function createStatusComment(
  octokit: GitHubClient,
  issue: IssueRef,
  body: string,
): Promise<number> {
  for (let attempt = 1; ; attempt++) {
    try {
      const { data } = await octokit.rest.issues.createComment({
        owner: issue.owner,
        repo: issue.repo,
        issue_number: issue.issueNumber,
        body,
        request: { retries: 0 },
      });
      return data.id;
    } catch (error) {
      const status = (error as { status?: number }).status ?? 500;
      if (status < 500 || attempt >= CREATE_ATTEMPTS) throw error;
    }
    await new Promise((resolve) => setTimeout(resolve, CREATE_RETRY_MS * attempt));
    const applied = await findStatusComment(octokit, issue);
    if (applied !== undefined) {
      const edited = await editFound(octokit, issue, applied, body);
      if (edited !== undefined) return edited;
    }
  }
}

/**
 * The App's id, from its own credentials (no request: the JWT is made locally); undefined for
 * a client that is not an App's (a plain token).
 */
async function ownAppId(octokit: GitHubClient): Promise<number | undefined> {
  try {
    const auth = (await octokit.auth({ type: 'app' })) as { appId?: unknown };
    return typeof auth.appId === 'number' ? auth.appId : undefined;
  } catch {
    return undefined;
  }
}

async function findStatusComment(
  octokit: GitHubClient,
  issue: IssueRef,
): Promise<number | undefined> {
  const params = {
    owner: issue.owner,
    repo: issue.repo,
    issue_number: issue.issueNumber,
    per_page: 100,
  };
  const appId = await ownAppId(octokit);
  // Ours: a bot's comment that starts with the marker and, where GitHub says which App made
  // it, made by this App (another App may carry the same marker).
  const mine = (rows: CommentRow[]) =>
    rows.find(
      (c) =>
        c.user?.type === 'Bot' &&
        (c.body ?? '').startsWith(STATUS_MARKER) &&
        (appId === undefined ||
          !c.performed_via_github_app ||
          c.performed_via_github_app.id === appId),
    )?.id;
  const first = await octokit.rest.issues.listComments(params);
  const hit = mine(first.data);
  if (hit !== undefined) return hit;
  const last = /<[^>]*[?&]page=(\d+)[^>]*>;\s*rel="last"/.exec(first.headers.link ?? '');
  if (!last) return undefined;
  const page = await octokit.rest.issues.listComments({ ...params, page: Number(last[1]) });
  return mine(page.data);
}

export interface StatusReporterOptions {
  octokit: GitHubClient;
  issue: IssueRef;
  /** Read at every write: the id may have been learned by someone else meanwhile. */
  commentId: () => number | undefined;
  throttleMs: number;
  budget: RestBudget;
  /** REST calls kept back for publishing and the final status edit (read at every write). */
  reserve: number | (() => number);
  log: Logger;
  meta?: StatusMeta;
  onCommentId?: (id: number) => void;
  /** Runs each write under the issue's lock (shared with intake). */
  serialize?: (write: () => Promise<void>) => Promise<void>;
}

/**
 * Throttled status updates: intermediate states are coalesced to at most one edit per
 * `throttleMs` and dropped when the run's REST budget runs low; the final state is always sent.
 */
export class StatusReporter {
  #latest: StatusState | undefined;
  #lastBody = '';
  #lastSentAt = 0;
  #timer: NodeJS.Timeout | undefined;
  #chain: Promise<void> = Promise.resolve();
  #closed = false;
  #intermediatePending = false;

  constructor(private readonly options: StatusReporterOptions) {}

  update(state: StatusState): void {
    if (this.#closed) return;
    this.#latest = state;
    if (this.#timer || this.#intermediatePending) return;
    const wait = Math.max(0, this.#lastSentAt + this.options.throttleMs - Date.now());
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      this.#intermediatePending = true;
      this.#chain = this.#chain.then(async () => {
        this.#intermediatePending = false;
        const latest = this.#latest;
        if (this.#closed || !latest) return;
        // Checked at write time, under the issue's lock: earlier writes (ours and intake's)
        // have spent their calls by now.
        const { reserve } = this.options;
        await this.#write(
          latest,
          () =>
            this.options.budget.remaining() > (typeof reserve === 'number' ? reserve : reserve()),
        );
      });
    }, wait);
    this.#timer.unref?.();
  }

  /** Sends the final state now (after any edit in flight) and stops further updates. */
  async finish(state: StatusState): Promise<void> {
    this.#closed = true;
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#enqueueWrite(state);
    await this.#chain;
  }

  /** Waits for edits in flight (tests and shutdown). */
  async flush(): Promise<void> {
    await this.#chain;
  }

  #enqueueWrite(state: StatusState): void {
    this.#chain = this.#chain.then(() => this.#write(state));
  }

  async #write(state: StatusState, allowed: () => boolean = () => true): Promise<void> {
    const serialize = this.options.serialize ?? ((write: () => Promise<void>) => write());
    const body = renderStatus(state, this.options.meta);
    if (body === this.#lastBody) return;
    try {
      await serialize(async () => {
        if (!allowed()) return;
        const id = await ensureStatusComment(
          this.options.octokit,
          this.options.issue,
          body,
          this.options.commentId(),
        );
        this.options.onCommentId?.(id);
        this.#lastBody = body;
        this.#lastSentAt = Date.now();
      });
    } catch (error) {
      // A status edit failing must not fail the run; the next edit tries again.
      this.options.log.warn(
        { err: error, issue: this.options.issue },
        'status comment update failed',
      );
    }
  }
}
