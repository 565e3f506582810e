// The run's result, assembled once, at its end, from what each phase made (run.ts keeps the
// pieces as the phases return them). Field by field in the order the phases ran, so the result
// (and run.json, which is its JSON) reads clone, config, setup, verify-before, the agent's
// first attempt, then the selected attempt's evidence, then how the run ended.
import { DEFAULT_MAX_STEPS } from '../leaf/protocol.js';
import type { ModelEndpointRecord, SandboxRecovery } from '../leaf/trajectory.js';
import type { ConfigFacts } from './phases/config.js';
import type { SetupFacts } from './phases/setup.js';
import type { VerifyBefore } from './phases/verify-before.js';
import { DEFAULT_TIMEOUT_MINUTES } from './repo-config.js';
import type { Failure } from './run-context.js';
import type {
  AttemptSummary,
  PatchFacts,
  PolicyViolation,
  RunPhase,
  RunRequest,
  RunResult,
  TestResult,
} from './run-types.js';

/** What the result reports of one attempt's Leaf loop (a LeafRunResult is one). */
export interface LoopFigures {
  exitReason: NonNullable<RunResult['exitReason']>;
  partial: boolean;
  finalMessage: string;
  patch: string;
  steps: RunResult['steps'];
  nSteps: number;
  contextTokens: number;
  usage: { promptTokens: number; completionTokens: number };
  trajectory: {
    model_endpoints?: ModelEndpointRecord[] | undefined;
    sandbox_recoveries?: SandboxRecovery[] | undefined;
  };
}

/** One attempt as the result shows it: its trajectory, its loop, its files, its error. */
export interface AttemptFigures {
  trajectoryPath: string;
  leaf?: LoopFigures | undefined;
  filesChanged: string[];
  error?: string | undefined;
}

/** The attempt to publish, with its evidence; with several attempts, every one's summary. */
export interface SelectedFigures {
  winner: AttemptFigures & {
    verifyAfter?: TestResult | undefined;
    agentTests?: TestResult | undefined;
    patchFacts?: PatchFacts | undefined;
    harnessSinceOrigin?: string[] | undefined;
    violations: PolicyViolation[];
  };
  selectedAttempt?: number | undefined;
  attempts?: AttemptSummary[] | undefined;
}

/** What the phases made, as far as the run got. */
export interface RunPieces {
  /** clone: the commit the run started from. */
  baseCommit?: string;
  /** config, as far as it got. */
  config?: ConfigFacts;
  /** sandbox and setup, as far as they got. */
  setup?: SetupFacts;
  /** verify-before. */
  verifyBefore?: VerifyBefore;
  /** agent: attempt 1's trajectory, once the run's output directory exists. */
  trajectoryPath?: string;
  /** agent: attempt 1 as its loop ended (the result's figures until one is selected). */
  firstAttempt?: AttemptFigures;
  /** After policy: the selected attempt. */
  selection?: SelectedFigures;
}

/** How the run ended: the failure that stopped it (none when it completed), and its times. */
export interface RunEnd {
  failure?: Failure | undefined;
  timings: Partial<Record<RunPhase, number>>;
  wallMs: number;
}

export function assembleResult(request: RunRequest, pieces: RunPieces, end: RunEnd): RunResult {
  const budgets = pieces.config?.budgets;
  const result: RunResult = {
    runId: request.runId,
    outcome: 'completed',
    patch: '',
    partial: false,
    filesChanged: [],
    finalMessage: '',
    violations: [],
    steps: [],
    budgets: {
      steps: 0,
      maxSteps: budgets?.maxSteps ?? request.overrides?.maxSteps ?? DEFAULT_MAX_STEPS,
      contextTokens: 0,
      promptTokens: 0,
      completionTokens: 0,
      wallMs: end.wallMs,
      timeoutMs:
        budgets?.timeoutMs ??
        (request.overrides?.timeoutMinutes ?? DEFAULT_TIMEOUT_MINUTES) * 60_000,
    },
    timings: end.timings,
  };
  if (pieces.baseCommit !== undefined) result.baseCommit = pieces.baseCommit;
  addConfig(result, pieces.config);
  addSetup(result, pieces.setup, pieces.verifyBefore);
  if (pieces.trajectoryPath !== undefined) result.trajectoryPath = pieces.trajectoryPath;
  if (pieces.firstAttempt) addAttempt(result, pieces.firstAttempt);
  if (pieces.selection) addSelection(result, pieces.selection);
  if (end.failure) {
    result.outcome = end.failure.outcome;
    result.error = end.failure.error;
  }
  return result;
}

function addConfig(result: RunResult, config: ConfigFacts | undefined): void {
  if (config?.instructionFiles) result.instructionFiles = config.instructionFiles;
  if (config?.testCommand) result.testCommand = config.testCommand;
  if (config?.followUpBase) result.followUpBase = config.followUpBase;
  if (config?.task !== undefined) result.task = config.task;
}

function addSetup(
  result: RunResult,
  setup: SetupFacts | undefined,
  before: VerifyBefore | undefined,
): void {
  if (setup?.snapshotHit !== undefined) result.snapshotHit = setup.snapshotHit;
  if (setup?.setupNetwork !== undefined) result.setupNetwork = setup.setupNetwork;
  if (setup?.runtime) result.sandboxRuntime = setup.runtime;
  if (setup?.setupTail !== undefined) result.setupTail = setup.setupTail;
  if (setup?.environment) result.environment = setup.environment;
  if (setup?.egress !== undefined) result.egress = setup.egress;
  if (before?.verifyBefore) result.verifyBefore = before.verifyBefore;
  // A test command that could not run: its output reads as setup's.
  if (before?.setupTail !== undefined) result.setupTail = before.setupTail;
}

/** The Leaf loop's figures of one attempt (before its verification, or the selected one's). */
function addAttempt(result: RunResult, attempt: AttemptFigures): void {
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
  const recoveries = leaf.trajectory.sandbox_recoveries ?? [];
  if (recoveries.length > 0) result.sandboxRecoveries = recoveries;
  else delete result.sandboxRecoveries;
  // The run's error is the published attempt's: another attempt's stays in its own summary.
  if (attempt.error !== undefined) result.error = attempt.error;
  else delete result.error;
}

/** The selected attempt's fields, then (several attempts) every attempt. */
function addSelection(result: RunResult, selection: SelectedFigures): void {
  const { winner } = selection;
  addAttempt(result, winner);
  if (winner.verifyAfter) result.verifyAfter = winner.verifyAfter;
  if (winner.agentTests) result.agentTests = winner.agentTests;
  if (winner.patchFacts) result.patchFacts = winner.patchFacts;
  if (result.followUpBase && winner.harnessSinceOrigin)
    result.followUpBase = { ...result.followUpBase, harnessFiles: winner.harnessSinceOrigin };
  result.violations = winner.violations;
  if (selection.selectedAttempt === undefined || !selection.attempts) return;
  result.selectedAttempt = selection.selectedAttempt;
  result.attempts = selection.attempts;
}
