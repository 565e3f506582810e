// What the App's code calls at its existing points: one-liners, each a no-op without metrics
// (tests and tools that build a WorkerPool or an App function without them).
import type { RunPhase, RunProgress, RunResult, SandboxKind } from '../runner/run-types.js';
import type { Metrics } from './registry.js';

/** A verified delivery: `ignored` by the trigger filter, or intake's answer (`accepted`, `duplicate`). */
export function countDelivery(
  metrics: Metrics | undefined,
  decision: string,
  trigger: string,
): void {
  metrics?.webhookDeliveries.inc({ decision, trigger });
}

export interface RunClock {
  /** Counts the run finished and observes its duration; only the first call counts. */
  finish(state: string, outcome: string): void;
}

/** Starts timing a claimed run and counts it running until `finish`. */
export function startRunClock(metrics: Metrics | undefined): RunClock {
  const started = performance.now();
  metrics?.runsRunning.inc();
  let finished = false;
  return {
    finish(state, outcome) {
      if (finished || !metrics) return;
      finished = true;
      metrics.runsRunning.dec();
      metrics.runsFinished.inc({ state, outcome });
      metrics.runDuration.observe({ state }, (performance.now() - started) / 1000);
    },
  };
}

export interface PhaseClock {
  /** Feed every progress event of the run: a phase event closes the phase before it. */
  progress(event: RunProgress): void;
  /** The pipeline returned (or threw): closes the last phase. */
  end(): void;
}

/** Phase durations from the pipeline's progress events (the pipeline reports phase starts). */
export function startPhaseClock(metrics: Metrics | undefined): PhaseClock {
  let current: { phase: RunPhase; since: number } | undefined;
  const close = () => {
    if (current && metrics) {
      metrics.phaseDuration.observe(
        { phase: current.phase },
        (performance.now() - current.since) / 1000,
      );
    }
    current = undefined;
  };
  return {
    progress(event) {
      if (event.kind !== 'phase') return;
      close();
      current = { phase: event.phase, since: performance.now() };
    },
    end: close,
  };
}

/**
 * What a pipeline result tells about the model and the sandbox: tokens and requests (Leaf's
 * step count: one chat completion per step) and whether a sandbox came up for the agent.
 */
export function countRunResult(
  metrics: Metrics | undefined,
  sandbox: SandboxKind,
  result: RunResult,
): void {
  if (!metrics) return;
  const { promptTokens, completionTokens, steps } = result.budgets;
  metrics.modelTokens.inc({ kind: 'prompt' }, promptTokens);
  metrics.modelTokens.inc({ kind: 'completion' }, completionTokens);
  metrics.modelRequests.inc(steps);
  // `snapshotHit` is set once the agent's sandbox is up (run.ts), and only then.
  if (result.snapshotHit !== undefined) {
    metrics.sandboxStarts.inc({ kind: sandbox, snapshot: result.snapshotHit ? 'hit' : 'miss' });
  }
}
