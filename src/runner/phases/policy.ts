// The policy phase: every attempt's patch checked, on its text and on what git makes of it
// (read-patch.ts): blocked paths, the patch size, .git, symbolic links.
import { DEFAULT_MAX_PATCH_BYTES, checkAppliedChanges, checkPatch } from '../patch-policy.js';
import type { RunContext } from '../run-context.js';
import type { PolicyViolation } from '../run-types.js';
import type { Attempt } from './agent.js';
import type { Prepared } from './config.js';
import type { PatchReadings } from './read-patch.js';

/** Per attempt, in order, what its patch violates (nothing for an attempt without a loop). */
export type PolicyOutcome = PolicyViolation[][];

export function checkPolicies(
  run: RunContext,
  prepared: Prepared,
  readings: PatchReadings,
  attempts: readonly Attempt[],
): Promise<PolicyOutcome> {
  return run.phase('policy', () =>
    Promise.all(
      attempts.map(async (attempt) =>
        attempt.leaf ? checkPolicy(run, prepared, readings, attempt) : [],
      ),
    ),
  );
}

async function checkPolicy(
  run: RunContext,
  prepared: Prepared,
  readings: PatchReadings,
  attempt: Attempt,
): Promise<PolicyViolation[]> {
  const patch = attempt.leaf?.patch ?? '';
  const policy = {
    blockedPaths: prepared.config.blocked_paths,
    maxPatchBytes: run.deps.maxPatchBytes ?? DEFAULT_MAX_PATCH_BYTES,
  };
  const violations = checkPatch(patch, policy);
  if (patch.trim() === '' || violations.some((v) => v.rule === 'patch_size')) return violations;
  const { applied } = await readings.read(attempt);
  for (const v of applied ? checkAppliedChanges(applied.changes, policy) : []) {
    if (!violations.some((w) => w.rule === v.rule && w.detail === v.detail)) violations.push(v);
  }
  return violations;
}
