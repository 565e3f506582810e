// The environment facts of a run (issue 25) as its trajectory records them: the same facts the
// pull request's Environment section, `frognano runs show` and `frognano env --json` give,
// in the trajectory's snake_case.
import type { TrajectoryEnvironment } from '../leaf/trajectory.js';
import type { EgressFacts } from '../sandbox/egress-facts.js';
import type { EnvironmentFacts } from './run-types.js';

export function trajectoryEnvironment(
  environment: EnvironmentFacts | undefined,
  egress: EgressFacts | undefined,
): TrajectoryEnvironment | undefined {
  if (!environment) return undefined;
  return {
    source: environment.source,
    ecosystems: [...environment.ecosystems],
    commands: environment.commands.map(({ command, from }) => ({ command, from })),
    failed: environment.failed.map(({ candidate, reason }) => ({ candidate, reason })),
    notes: [...environment.notes],
    seconds: environment.seconds ?? null,
    // The mode in force (after the operator's cap) when setup had a network of ours.
    network: egress?.mode ?? environment.network,
    allowed_hosts: [...(egress?.allowedHosts ?? [])],
    blocked: (egress?.blocked ?? []).map(({ host, port, count, reason }) => ({
      host,
      port,
      count,
      reason,
    })),
    tests_collected: environment.testsCollected ?? null,
    import_errors: [...environment.importErrors],
    snapshot: environment.snapshot,
    runnable: environment.runnable,
    problem: environment.problem ?? null,
  };
}
