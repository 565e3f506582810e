// What the run page shows, independent of where it comes from (`frognano solve`, the App's run
// directory). Several attempts per run are part of the model: today a run has one.
import { RUNNING_EXIT_REASON, type Trajectory } from '../leaf/trajectory.js';
import type { RunResult, TestResult } from '../runner/run-types.js';

export interface RunPageAttempt {
  label: string;
  /** Absent when the run stopped before the agent loop started. */
  trajectory?: Trajectory;
  /** `git diff` text of this attempt's change (may be empty). */
  patch: string;
  verifyAfter?: TestResult;
  /** One line: how this attempt ended (exit reason, tests after). */
  verdict: string;
  /** The attempt whose change was published. */
  selected: boolean;
}

export interface RunPageData {
  runId: string;
  /** `owner/repo`, or the local path `frognano solve` ran on. */
  repo: string;
  issue: { number?: number; title: string; url?: string };
  model?: string;
  /** Who started it, in words (e.g. `label by @octocat`). */
  trigger?: string;
  state: 'queued' | 'running' | 'finished';
  /** The run's outcome (RunOutcome, or the queue's outcome while the result is unknown). */
  outcome?: string;
  error?: string;
  exitReason?: string;
  partial?: boolean;
  finalMessage?: string;
  /** The task exactly as the model got it (the result's, else the trajectory's first user turn). */
  task?: string;
  testCommand?: RunResult['testCommand'];
  verifyBefore?: TestResult;
  steps: number;
  maxSteps?: number;
  promptTokens: number;
  completionTokens: number;
  contextTokens: number;
  maxContextTokens?: number;
  wallMs?: number;
  attempts: RunPageAttempt[];
  /** Served pages poll this URL for new steps while the run is active. */
  liveUrl?: string;
}

export interface RunPageSource {
  runId: string;
  repo: string;
  issue: RunPageData['issue'];
  model?: string;
  trigger?: string;
  state?: RunPageData['state'];
  /** The queue's outcome, used when there is no result yet. */
  outcome?: string;
  trajectory?: Trajectory;
  result?: RunResult;
  /** Several attempts: each attempt's trajectory by number (attempt 1's is `trajectory`). */
  attemptTrajectories?: Record<number, Trajectory | undefined>;
  liveUrl?: string;
}

/** Builds the page data of a one-attempt run from its trajectory and (once finished) its result. */
export function runPageData(source: RunPageSource): RunPageData {
  const { trajectory: t, result: r } = source;
  const finished = r !== undefined || (t?.status === 'finished' && source.state !== 'running');
  const state = source.state ?? (finished ? 'finished' : 'running');
  // A checkpoint says `running` (upstream's word): no exit reason yet.
  const exitReason =
    r?.exitReason ??
    (t?.exit_reason === RUNNING_EXIT_REASON ? undefined : t?.exit_reason) ??
    undefined;
  const attempt: RunPageAttempt = {
    label: 'attempt 1',
    trajectory: t,
    patch: r?.patch ?? t?.output_patch ?? '',
    verifyAfter: r?.verifyAfter,
    verdict: verdictOf(exitReason, r?.verifyAfter, state),
    selected: true,
  };
  return {
    runId: source.runId,
    repo: source.repo,
    issue: source.issue,
    model: source.model,
    trigger: source.trigger,
    state,
    outcome: r?.outcome ?? source.outcome,
    error: r?.error ?? t?.error ?? undefined,
    exitReason,
    // A record from before issue 26 said it in `partial`; the final record's is false now.
    partial: r?.partial ?? (state === 'finished' ? (t?.ended_on_limit ?? t?.partial) : undefined),
    finalMessage: r?.finalMessage ?? t?.final_message,
    task: r?.task ?? t?.messages.find((m) => m.role === 'user')?.content,
    testCommand: r?.testCommand,
    verifyBefore: r?.verifyBefore,
    steps: r?.budgets.steps ?? t?.n_steps ?? t?.steps.length ?? 0,
    maxSteps: r?.budgets.maxSteps ?? t?.budget.max_steps,
    promptTokens: r?.budgets.promptTokens ?? t?.usage.prompt_tokens ?? 0,
    completionTokens: r?.budgets.completionTokens ?? t?.usage.completion_tokens ?? 0,
    contextTokens: r?.budgets.contextTokens ?? t?.context_tokens ?? 0,
    maxContextTokens: t?.budget.max_context_tokens,
    wallMs: r?.budgets.wallMs ?? (t ? t.elapsed_sec * 1000 : undefined),
    attempts: r?.attempts && r.attempts.length > 1 ? attemptsOf(source, state) : [attempt],
    liveUrl: state === 'finished' ? undefined : source.liveUrl,
  };
}

function verdictOf(
  exitReason: string | undefined,
  after: TestResult | undefined,
  state: RunPageData['state'],
): string {
  if (state !== 'finished' && !exitReason) return 'running';
  const parts = [exitReason ? `stopped: ${exitReason}` : 'no agent loop'];
  if (after) {
    parts.push(after.timedOut ? 'tests after: timed out' : `tests after: exit ${after.exitCode}`);
  }
  return parts.join(' · ');
}

/** One tab per attempt of a run with several, each with its verdict and why it won or lost. */
function attemptsOf(source: RunPageSource, state: RunPageData['state']): RunPageAttempt[] {
  return (source.result?.attempts ?? []).map((a) => ({
    label: `attempt ${a.attempt}`,
    trajectory: a.attempt === 1 ? source.trajectory : source.attemptTrajectories?.[a.attempt],
    patch: a.patch,
    verifyAfter: a.verifyAfter,
    verdict: `${verdictOf(a.exitReason ?? (a.outcome === 'completed' ? undefined : a.outcome), a.verifyAfter, state)} · ${a.reason}`,
    selected: a.selected,
  }));
}
