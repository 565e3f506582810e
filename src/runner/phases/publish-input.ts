// Phase 6 and the publish input: rank the attempts by evidence, keep every attempt's patch
// with the run, and fill the RunResult with the selected attempt (publishing consumes it).
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { errorText } from '../command-output.js';
import { changedLines } from '../patch-facts.js';
import type { RunContext } from '../run-context.js';
import type { AttemptSummary, RunResult } from '../run-types.js';
import { selectAttempt, type AttemptEvidence, type AttemptRanking } from '../select-attempt.js';
import type { Attempt } from './attempts.js';

/** Ranks the attempts (several only) and returns the selected one with the rankings. */
export function select(
  run: RunContext,
  attempts: Attempt[],
): { winner: Attempt; rankings?: AttemptRanking[] } {
  if (attempts.length === 1) return { winner: attempts[0]! };
  const rankings = selectAttempt(attempts.map(evidenceOf), run.result.verifyBefore);
  const selected = rankings.find((r) => r.selected)?.attempt ?? 1;
  run.log.info(
    { selected, reasons: rankings.map((r) => `${r.attempt}: ${r.reason}`) },
    'attempt selected',
  );
  return { winner: attempts[selected - 1]!, rankings };
}

function evidenceOf(a: Attempt): AttemptEvidence {
  const patch = a.leaf?.patch ?? '';
  const disqualified = a.failure
    ? `${a.failure.outcome}: ${a.failure.error}`
    : patch.trim() === ''
      ? `the patch is empty${a.error ? ` (${a.error})` : ''}`
      : a.violations.length > 0
        ? `policy: ${a.violations.map((v) => `${v.rule} ${v.detail}`).join('; ')}`
        : undefined;
  const lines = a.patchFacts && changedLines(a.patchFacts);
  return {
    attempt: a.number,
    patch,
    steps: a.leaf?.nSteps ?? 0,
    ...(disqualified ? { disqualified } : {}),
    ...(a.failure ? { failed: true } : {}),
    ...(a.verifyAfter ? { verifyAfter: a.verifyAfter } : {}),
    ...(a.agentTests ? { agentTests: a.agentTests } : {}),
    ...(a.ownTestsBefore ? { ownTestsBefore: a.ownTestsBefore } : {}),
    ...(a.ownTestsText ? { ownTestsText: a.ownTestsText } : {}),
    ...(lines !== undefined ? { diffLines: lines } : {}),
  };
}

/** The RunResult as publishing reads it: the selected attempt's fields, then every attempt. */
export async function publishInput(
  run: RunContext,
  attempts: Attempt[],
  winner: Attempt,
  rankings: AttemptRanking[] | undefined,
): Promise<RunResult> {
  const { result } = run;
  fillFromAttempt(result, winner);
  if (winner.verifyAfter) result.verifyAfter = winner.verifyAfter;
  if (winner.agentTests) result.agentTests = winner.agentTests;
  if (winner.patchFacts) result.patchFacts = winner.patchFacts;
  if (result.followUpBase && winner.harnessSinceOrigin)
    result.followUpBase = { ...result.followUpBase, harnessFiles: winner.harnessSinceOrigin };
  result.violations = winner.violations;
  if (!rankings) return result;
  result.selectedAttempt = winner.number;
  result.attempts = await Promise.all(
    attempts.map((a) => summaryOf(run, a, rankings[a.number - 1]!)),
  );
  return result;
}

/** The Leaf loop's figures of one attempt into the result (before any verification). */
export function fillFromAttempt(result: RunResult, attempt: Attempt): void {
  const { leaf } = attempt;
  result.trajectoryPath = attempt.trajectoryPath;
  if (!leaf) return;
  result.exitReason = leaf.exitReason;
  result.partial = leaf.partial;
  result.finalMessage = leaf.finalMessage;
  result.patch = leaf.patch;
  result.filesChanged = attempt.filesChanged;
  result.steps = leaf.steps;
  result.budgets.steps = leaf.nSteps;
  result.budgets.contextTokens = leaf.contextTokens;
  result.budgets.promptTokens = leaf.usage.promptTokens;
  result.budgets.completionTokens = leaf.usage.completionTokens;
  if (leaf.trajectory.model_endpoints) result.servedBy = leaf.trajectory.model_endpoints;
  // The run's error is the published attempt's: another attempt's stays in its own summary.
  if (attempt.error !== undefined) result.error = attempt.error;
  else delete result.error;
}

async function summaryOf(
  run: RunContext,
  a: Attempt,
  ranking: AttemptRanking,
): Promise<AttemptSummary> {
  const patch = a.leaf?.patch ?? '';
  let patchPath: string | undefined = attemptPatchPath(run.request.outDir, a.number);
  try {
    await mkdir(path.dirname(patchPath), { recursive: true });
    await writeFile(patchPath, patch);
  } catch (error) {
    run.log.warn({ attempt: a.number, err: errorText(error) }, 'attempt patch not kept');
    patchPath = undefined;
  }
  return {
    attempt: a.number,
    outcome: a.failure?.outcome ?? 'completed',
    ...(a.failure || a.error ? { error: a.failure?.error ?? a.error } : {}),
    ...(a.leaf ? { exitReason: a.leaf.exitReason } : {}),
    patch,
    partial: a.leaf?.partial ?? false,
    filesChanged: a.filesChanged,
    finalMessage: a.leaf?.finalMessage ?? '',
    steps: a.leaf?.nSteps ?? 0,
    ...(a.leaf ? { stepList: a.leaf.steps } : {}),
    promptTokens: a.leaf?.usage.promptTokens ?? 0,
    completionTokens: a.leaf?.usage.completionTokens ?? 0,
    contextTokens: a.leaf?.contextTokens ?? 0,
    ...(a.verifyAfter ? { verifyAfter: a.verifyAfter } : {}),
    ...(a.agentTests ? { agentTests: a.agentTests } : {}),
    ...(a.ownTestsBefore ? { ownTestsBefore: a.ownTestsBefore } : {}),
    ...(a.ownTestsText ? { ownTestsText: a.ownTestsText } : {}),
    violations: a.violations,
    ...(a.patchFacts ? { patchFacts: a.patchFacts } : {}),
    tests: ranking.tests,
    testsText: ranking.testsText,
    ownTests: ranking.ownTests,
    votes: ranking.votes,
    diffLines: ranking.diffLines,
    selected: ranking.selected,
    reason: ranking.reason,
    ...(a.leaf ? { trajectoryPath: a.trajectoryPath } : {}),
    ...(patchPath ? { patchPath } : {}),
    ...(a.leaf?.trajectory.model_endpoints ? { servedBy: a.leaf.trajectory.model_endpoints } : {}),
  };
}

/** Where attempt K's patch is kept with the run (several attempts). */
export function attemptPatchPath(outDir: string, attempt: number): string {
  return path.join(outDir, `attempt-${attempt}`, 'patch.diff');
}
