// Before the agent phase: the model endpoints, checked once (the run goes on while one of them
// serves the model), then one Model per attempt, pinned to an endpoint of the fleet.
import type { Model } from '../../leaf/model.js';
import { fleetOfModelConfig } from '../../model-fleet/open-fleet.js';
import type { EndpointCheck } from '../../model-fleet/fleet.js';
import { errorText } from '../command-output.js';
import type { Failure, RunContext } from '../run-context.js';

/** Sent with every model request of a run with several attempts; the body stays Leaf-exact. */
export const ATTEMPT_HEADER = 'x-frognano-attempt';

/**
 * The endpoints, checked once (the run goes on while one of them serves the model); then one
 * Model per attempt, pinned to an endpoint of the fleet (each tells its number in a header).
 */
export async function connectModel(
  run: RunContext,
  attempts: number,
): Promise<((attempt: number) => Model) | Failure> {
  const { deps } = run;
  const fleet =
    deps.fleet ??
    (deps.modelConfig === undefined ? undefined : fleetOfModelConfig(deps.modelConfig, run.log));
  if (fleet) {
    const checks = await fleet.check();
    if (!checks.some((c) => c.ok))
      return { outcome: 'model_unreachable', error: noneServes(checks) };
    for (const c of checks) {
      if (!c.ok)
        run.log.warn({ endpoint: c.endpoint.name, problem: c.message }, 'model endpoint left out');
    }
  }
  const shared = deps.model;
  if (shared) return () => shared;
  if (!fleet)
    return {
      outcome: 'model_unreachable',
      error: 'no model endpoint is configured: set FROGNANO_MODEL_URL',
    };
  const several = attempts > 1;
  return (attempt) =>
    fleet.loop({
      headers: several ? { [ATTEMPT_HEADER]: String(attempt) } : {},
      onWait: (waiting, waitedMs) =>
        run.report({ kind: 'model-wait', ...(several ? { attempt } : {}), waiting, waitedMs }),
    });
}

/** One endpoint: its own line, as always. Several: each one's reason. */
function noneServes(checks: readonly EndpointCheck[]): string {
  const failed = checks.filter((c): c is Extract<EndpointCheck, { ok: false }> => !c.ok);
  if (failed.length === 1) return errorText(new Error(failed[0]!.message));
  return `no model endpoint can serve this run: ${failed.map((c) => c.message).join('; ')}`;
}
