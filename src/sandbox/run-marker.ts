/**
 * Marks a directory under the work root as a run's, so the reaper only removes ours. The runner
 * writes it when it makes a run directory; the reaper reads it, so it lives on the sandbox side.
 */
export const RUN_MARKER = '.frognano-run.json';
