// The instrument calls on their own: what each records, and that the call sites' fallbacks
// (a run that crashes after finishing, a pipeline that throws) cannot count twice.
import { describe, expect, it } from 'vitest';
import {
  countRunResult,
  createMetrics,
  startPhaseClock,
  startRunClock,
} from '../../src/metrics/index.js';
import { runResult } from '../github/helpers/run-result.js';
import { parseExposition, sampleValue } from './prom-text.js';

async function page(metrics: ReturnType<typeof createMetrics>) {
  return parseExposition(await metrics.scrape());
}

describe('startRunClock', () => {
  it('counts a run running until it finishes, and finishes it once', async () => {
    const metrics = createMetrics();
    const clock = startRunClock(metrics);
    expect(sampleValue(await page(metrics), 'frognano_runs_running')).toBe(1);
    clock.finish('done', 'pull_request');
    // The worker's crash fallback after a finished run changes nothing.
    clock.finish('failed', 'internal_error');
    const p = await page(metrics);
    expect(sampleValue(p, 'frognano_runs_running')).toBe(0);
    expect(sampleValue(p, 'frognano_runs_finished_total', { state: 'done' })).toBe(1);
    expect(sampleValue(p, 'frognano_runs_finished_total', { state: 'failed' })).toBeUndefined();
    expect(sampleValue(p, 'frognano_run_duration_seconds_count', { state: 'done' })).toBe(1);
  });

  it('does nothing without metrics', () => {
    expect(() => startRunClock(undefined).finish('done', 'no_change')).not.toThrow();
  });
});

describe('startPhaseClock', () => {
  it('observes each phase when the next starts, the last at the end, and ignores steps', async () => {
    const metrics = createMetrics();
    const phases = startPhaseClock(metrics);
    phases.progress({ kind: 'phase', phase: 'clone' });
    phases.progress({ kind: 'phase', phase: 'agent' });
    phases.progress({
      kind: 'step',
      step: 1,
      maxSteps: 5,
      tools: ['Read'],
      elapsedMs: 10,
      contextTokens: 100,
    });
    await new Promise((r) => setTimeout(r, 30));
    phases.end();
    phases.end(); // the worker's error path may end it again
    const p = await page(metrics);
    expect(sampleValue(p, 'frognano_run_phase_duration_seconds_count', { phase: 'clone' })).toBe(1);
    expect(sampleValue(p, 'frognano_run_phase_duration_seconds_count', { phase: 'agent' })).toBe(1);
    expect(
      sampleValue(p, 'frognano_run_phase_duration_seconds_sum', { phase: 'agent' }),
    ).toBeGreaterThanOrEqual(0.025);
  });
});

describe('countRunResult', () => {
  it('counts tokens, requests and a Docker start from a setup snapshot', async () => {
    const metrics = createMetrics();
    const result = runResult({ snapshotHit: true });
    result.budgets = { ...result.budgets, steps: 4, promptTokens: 800, completionTokens: 60 };
    countRunResult(metrics, 'docker', result);
    const p = await page(metrics);
    expect(sampleValue(p, 'frognano_model_tokens_total', { kind: 'prompt' })).toBe(800);
    expect(sampleValue(p, 'frognano_model_tokens_total', { kind: 'completion' })).toBe(60);
    expect(sampleValue(p, 'frognano_model_requests_total')).toBe(4);
    expect(
      sampleValue(p, 'frognano_sandbox_starts_total', { kind: 'docker', snapshot: 'hit' }),
    ).toBe(1);
  });

  it('counts no sandbox start for a run that never brought one up', async () => {
    const metrics = createMetrics();
    const result = runResult({ outcome: 'sandbox_failed', snapshotHit: undefined });
    countRunResult(metrics, 'docker', result);
    expect(sampleValue(await page(metrics), 'frognano_sandbox_starts_total')).toBeUndefined();
  });
});
