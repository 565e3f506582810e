// Automatic setup in the sandbox (issue 25): each candidate of the plan in order, under setup's
// one time limit, judged by whether the test command can collect the tests afterwards; the
// first that works is kept. It never fails the run: what did not work is reported instead.
import type { Sandbox } from '../../leaf/sandbox.js';
import {
  COMMAND_OUTPUT_BYTES,
  OUTPUT_TAIL_CHARS,
  combined,
  combinedOutput,
  limitNote,
  shortCommand,
  tail,
} from '../command-output.js';
import type { RunContext } from '../run-context.js';
import type { EnvironmentCommand } from '../run-types.js';
import { finishAgentEnvironment } from '../setup-plan/agent-environment.js';
import { diagnoseSetupFailure, type SetupEgress } from './setup-egress.js';
import { collectTests, collectionUsable, type Collection } from '../setup-plan/collection.js';
import type { SetupCandidate, SetupPlan } from '../setup-plan/setup-plan-types.js';

export interface AutoSetupOutcome {
  /** The kept candidate's commands (none when no candidate worked). */
  commands: EnvironmentCommand[];
  failed: { candidate: string; reason: string }[];
  /** The last collection, when the test command has one (pytest). */
  collection?: Collection;
  /** Setup's output, its end. */
  tail: string;
}

export async function runAutoSetup(
  run: RunContext,
  plan: SetupPlan,
  sandbox: Sandbox,
  options: { testCommand?: string; deadline: number; egress?: SetupEgress },
): Promise<AutoSetupOutcome> {
  const outcome: AutoSetupOutcome = { commands: [], failed: [], tail: '' };
  const tails: string[] = [];
  for (const candidate of plan.candidates) {
    const failure = await runCandidate(run, candidate, sandbox, options, tails);
    outcome.tail = tail(tails.join('\n'), OUTPUT_TAIL_CHARS);
    // A plain `pytest` must be the venv's before collection judges the candidate.
    await finishAgentEnvironment(sandbox, run.signal);
    const collection = options.testCommand
      ? await collectTests(sandbox, options.testCommand, run.signal)
      : undefined;
    if (collection) outcome.collection = collection;
    if (failure === undefined && collectionUsable(collection)) {
      outcome.commands = candidate.commands;
      run.log.info({ candidate: candidate.name }, 'automatic setup kept a candidate');
      return outcome;
    }
    const reason = failure ?? collectionProblem(collection!);
    outcome.failed.push({ candidate: candidate.name, reason });
    run.log.info({ candidate: candidate.name, reason }, 'automatic setup candidate did not work');
    if (Date.now() >= options.deadline || run.signal.aborted) break;
  }
  return outcome;
}

/** Runs one candidate's commands in order: the first failure, in one line, or undefined. */
async function runCandidate(
  run: RunContext,
  candidate: SetupCandidate,
  sandbox: Sandbox,
  { deadline, egress }: { deadline: number; egress?: SetupEgress },
  tails: string[],
): Promise<string | undefined> {
  for (const { command, from } of candidate.commands) {
    const left = deadline - Date.now();
    if (left <= 0) return `${shortCommand(command)} (${from}) did not start: setup time limit`;
    const blockedBefore = egress?.facts().blocked ?? [];
    const done = await sandbox.exec(combinedOutput(command), {
      timeoutMs: left,
      signal: run.signal,
      maxOutputBytes: COMMAND_OUTPUT_BYTES,
      ...(egress ? { env: egress.env } : {}),
    });
    tails.push(`$ ${command}\n${combined(done)}`);
    // A refused host or an untrusted certificate, named (the network's own words).
    const network = egress
      ? diagnoseSetupFailure(combined(done), blockedBefore, egress.facts().blocked)
      : undefined;
    const why = network ? `: ${network}` : '';
    if (done.timedOut)
      return `${shortCommand(command)} (${from}) did not finish within the setup time limit${why}`;
    if (done.exitCode !== 0) {
      const last = network ?? lastLine(combined(done));
      return `${shortCommand(command)} (${from}) failed with exit code ${done.exitCode}${limitNote(done)}${last ? `: ${last}` : ''}`;
    }
  }
  return undefined;
}

export function collectionProblem(collection: Collection): string {
  if (collection.importErrors.length > 0)
    return `import errors at collection: ${collection.importErrors.join('; ')}`;
  if (collection.tests === 0) return 'the test command collected no tests';
  return `the test command's collection failed (exit ${collection.exitCode})`;
}

function lastLine(output: string): string {
  const line =
    output
      .split('\n')
      .map((l) => l.trim())
      .filter(Boolean)
      .at(-1) ?? '';
  return line.length > 200 ? `${line.slice(0, 197)}...` : line;
}
