// After the phases, selection: each attempt with all the evidence about it (its loop, git's
// reading of its patch, verify-after, policy), ranked by that evidence (select-attempt.ts),
// every attempt's patch kept with the run. The selected attempt is what the result holds and
// publishing consumes.
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { errorText } from '../command-output.js';
import { changedLines } from '../patch-facts.js';
import type { RunContext } from '../run-context.js';
import type { AttemptSummary, PatchFacts, PolicyViolation, TestResult } from '../run-types.js';
import { selectAttempt, type AttemptEvidence, type AttemptRanking } from '../select-attempt.js';
import type { Attempt } from './agent.js';
import type { PatchReading } from './read-patch.js';
import type { VerifyAfter } from './verify-after.js';

/** One attempt and everything known about it once policy has run. */
export interface JudgedAttempt {
  number: number;
  trajectoryPath: string;
  leaf?: Attempt['leaf'];
  failure?: Attempt['failure'];
  /** Its loop's error, else why verify-after did not run. */
  error?: string;
  /** As git reads the patch, else as its text names them. */
  filesChanged: string[];
  patchFacts?: PatchFacts;
  harnessSinceOrigin?: string[];
  verifyAfter?: TestResult;
  agentTests?: TestResult;
  ownTestsBefore?: TestResult;
  ownTestsText?: TestResult;
  violations: PolicyViolation[];
}

export function judge(
  attempt: Attempt,
  reading: PatchReading | undefined,
  verified: VerifyAfter | undefined,
  violations: PolicyViolation[],
): JudgedAttempt {
  const error = attempt.error ?? verified?.notRun;
  return {
    number: attempt.number,
    trajectoryPath: attempt.trajectoryPath,
    ...(attempt.leaf ? { leaf: attempt.leaf } : {}),
    ...(attempt.failure ? { failure: attempt.failure } : {}),
    ...(error !== undefined ? { error } : {}),
    filesChanged: reading?.filesChanged ?? attempt.filesChanged,
    ...(reading?.patchFacts ? { patchFacts: reading.patchFacts } : {}),
    ...(reading?.harnessSinceOrigin ? { harnessSinceOrigin: reading.harnessSinceOrigin } : {}),
    ...(verified?.verifyAfter ? { verifyAfter: verified.verifyAfter } : {}),
    ...(verified?.agentTests ? { agentTests: verified.agentTests } : {}),
    ...(verified?.ownTestsBefore ? { ownTestsBefore: verified.ownTestsBefore } : {}),
    ...(verified?.ownTestsText ? { ownTestsText: verified.ownTestsText } : {}),
    violations,
  };
}

/** The attempt to publish; with several, also its number and every attempt's summary. */
export interface Selection {
  winner: JudgedAttempt;
  selectedAttempt?: number;
  attempts?: AttemptSummary[];
}

/** Ranks the attempts (several only), keeps their patches, and names the selected one. */
export async function select(
  run: RunContext,
  attempts: JudgedAttempt[],
  verifyBefore: TestResult | undefined,
): Promise<Selection> {
  if (attempts.length === 1) return { winner: attempts[0]! };
  const rankings = selectAttempt(attempts.map(evidenceOf), verifyBefore);
  const selected = rankings.find((r) => r.selected)?.attempt ?? 1;
  run.log.info(
    { selected, reasons: rankings.map((r) => `${r.attempt}: ${r.reason}`) },
    'attempt selected',
  );
  const winner = attempts[selected - 1]!;
  return {
    winner,
    selectedAttempt: winner.number,
    attempts: await Promise.all(attempts.map((a) => summaryOf(run, a, rankings[a.number - 1]!))),
  };
}

function evidenceOf(a: JudgedAttempt): AttemptEvidence {
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

async function summaryOf(
  run: RunContext,
  a: JudgedAttempt,
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
