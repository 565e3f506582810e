// A run's attempt base: with several attempts, the prepared sandbox is committed to an image the
// other attempts start from, removed with the run. A run that is killed cannot remove it, so it
// carries its owner as the run's containers do (owner.ts): `reap` removes it once that owner is
// provably gone, and only from the same data directory's instance.
import { LABEL_RUN } from './docker-sandbox.js';
import { ownerLabels, type SandboxOwner } from './owner.js';

/** Image repository of a run's attempt base. */
export const ATTEMPT_IMAGE_REPOSITORY = 'frognano-attempt-base';
/** On an attempt base: the id of the run it belongs to. */
export const LABEL_ATTEMPT_BASE = 'frognano.attempt-base';

/**
 * The tag and labels of `runId`'s attempt base, made by `owner`'s process; `suffix` tells
 * another base of the same run apart (setup's image, moved to the agent's runtime).
 */
export function attemptBaseImage(
  runId: string,
  owner: SandboxOwner,
  suffix = '',
): { tag: string; labels: Record<string, string> } {
  const version = `${runId
    .toLowerCase()
    .replace(/[^a-z0-9_.-]/g, '-')
    .slice(0, 120)}${suffix}`;
  return {
    tag: `${ATTEMPT_IMAGE_REPOSITORY}:${version}`,
    labels: {
      ...ownerLabels(owner),
      // Not a run's container: containers started from it are labelled with their own run.
      [LABEL_RUN]: '',
      [LABEL_ATTEMPT_BASE]: runId,
    },
  };
}
