// The config phase: .github/frognano.yml (on top of the caller's base configuration) and the
// instruction files, read from the cloned tree, and what the run will use: budgets, the
// attempts, the test command, the image, whether setup has a network and snapshots. For a
// follow-up, also the task from the previous diff and the previous revisions as host git reads
// them. `Prepared` is what the later phases work with; `ConfigFacts` what the result reports.
import { taskText } from '../task-text.js';
import type Docker from 'dockerode';
import { repoConfigCaps } from '../../config.js';
import { DEFAULT_MAX_STEPS } from '../../leaf/protocol.js';
import { connectDocker } from '../../sandbox/docker-engine.js';
import { DEFAULT_SANDBOX_IMAGE } from '../../sandbox/docker-sandbox.js';
import { errorText } from '../command-output.js';
import { detectTestCommand } from '../detect-test-command.js';
import { resolveRepoConfig } from '../config-layers.js';
import { readInstructionFiles, type InstructionFiles } from '../instruction-files.js';
import {
  DEFAULT_INSTRUCTION_FILES,
  DEFAULT_TIMEOUT_MINUTES,
  MAX_ATTEMPTS,
  RepoConfigError,
  capRepoConfig,
  type RepoConfig,
  type RepoConfigCaps,
} from '../repo-config.js';
import { isFailure, unexpectedFailure, type Failure, type RunContext } from '../run-context.js';
import type { InstructionFileUse, RunResult } from '../run-types.js';
import type { Workspace } from '../workspace.js';
import { plannedSetup, setupRuns, type PlannedSetup } from '../setup-plan/planned-setup.js';
import { previousRevisions, type PreviousRevisions } from './previous-revisions.js';

export type TestCommand = NonNullable<RunResult['testCommand']>;

export interface Prepared {
  workspace: Workspace;
  config: RepoConfig;
  /** Per attempt. */
  maxSteps: number;
  /** Per attempt: each Leaf loop's wall-clock budget. */
  timeoutMs: number;
  /** Leaf loops run at once (1 to 8): the caller's, else the config's, within the operator's cap. */
  attempts: number;
  test?: TestCommand;
  /** The task's issue text: the request's, or for a follow-up, built with the previous diff. */
  issueText: string;
  /** The repository's instruction files (sanitized, capped), after the config's `instructions`. */
  instructionTexts: string[];
  image: string;
  /** `image` is the repository's `image:` (not the operator's or the caller's). */
  imageNamedByRepo?: boolean;
  /** Absent for the local sandbox. */
  docker?: Docker;
  /** The repository's setup commands, automatic setup's plan, or none. */
  setup: PlannedSetup;
  /** Setup may reach the network (`network` not `none`, and there is setup). */
  setupNetwork: boolean;
  /** What the repository asked for `network` when the operator's cap lowered it. */
  networkAsked?: RepoConfig['network'];
  /** Setup snapshots are taken and used (Docker, there is setup, not disabled). */
  snapshotsOn: boolean;
  /**
   * A follow-up: what the previous revisions changed since the base revision. The workspace's
   * tree (config, test command, setup, snapshot) is the base revision's; these come in later.
   */
  previous?: PreviousRevisions;
}

/** What config settled that the run's result reports, as far as it got. */
export interface ConfigFacts {
  instructionFiles?: InstructionFileUse[];
  budgets?: { maxSteps: number; timeoutMs: number };
  testCommand?: TestCommand;
  followUpBase?: { commit: string; harnessFiles: string[] };
  /** The task text the model is given (every attempt the same), for reviewers to read. */
  task?: string;
}

export type ConfigOutcome =
  | { facts: ConfigFacts; prepared: Prepared; failure?: undefined }
  | { facts: ConfigFacts; failure: Failure; prepared?: undefined };

export async function configure(run: RunContext, workspace: Workspace): Promise<ConfigOutcome> {
  const { request, deps, env } = run;
  const facts: ConfigFacts = {};
  try {
    const issueText = await followUpIssueText(run, workspace);
    if (isFailure(issueText)) return { facts, failure: issueText };
    const read = await readConfig(run, workspace);
    if (isFailure(read)) return { facts, failure: read };
    const { config, caps, instructions } = read;
    if (read.networkAsked)
      run.log.warn(
        { asked: read.networkAsked, network: config.network },
        'setup network lowered to the operator cap FROGNANO_SETUP_NETWORK_CAP',
      );
    if (instructions.files.length > 0) facts.instructionFiles = instructions.files;
    const { maxSteps, timeoutMs, attempts } = budgets(run, config, caps);
    facts.budgets = { maxSteps, timeoutMs };

    const test = await testCommand(workspace.treeDir, config);
    if (test) facts.testCommand = test;
    const previous = await followUpRevisions(run, workspace, test);
    if (isFailure(previous)) return { facts, failure: previous };
    if (previous)
      facts.followUpBase = { commit: previous.origin, harnessFiles: previous.harnessFiles };

    const setup = await plannedSetup(config.setup, config.network, workspace.treeDir);
    const image =
      request.overrides?.image ??
      config.image ??
      deps.defaultImage ??
      env.FROGNANO_SANDBOX_IMAGE ??
      DEFAULT_SANDBOX_IMAGE;
    facts.task = taskText({ ...request, issueText }, config, instructions.texts);
    const prepared: Prepared = {
      workspace,
      issueText,
      instructionTexts: instructions.texts,
      config,
      maxSteps,
      timeoutMs,
      attempts,
      ...(test ? { test } : {}),
      image,
      imageNamedByRepo: request.overrides?.image === undefined && config.image !== undefined,
      ...(request.sandbox === 'docker' ? { docker: deps.docker ?? connectDocker(env) } : {}),
      setup,
      setupNetwork: config.network !== 'none' && setupRuns(setup),
      ...(read.networkAsked ? { networkAsked: read.networkAsked } : {}),
      snapshotsOn:
        request.sandbox === 'docker' && setupRuns(setup) && deps.snapshots?.enabled !== false,
      ...(previous ? { previous } : {}),
    };
    return { facts, prepared };
  } catch (error) {
    return { facts, failure: unexpectedFailure(run, error) };
  }
}

/** The task's issue text: the request's, or a follow-up's, built from the previous diff. */
async function followUpIssueText(run: RunContext, workspace: Workspace): Promise<string | Failure> {
  const { followUp, issueText } = run.request;
  if (!followUp) return issueText;
  try {
    return followUp.task(await workspace.diffFrom(followUp.diffBase));
  } catch (error) {
    return { outcome: 'clone_failed', error: errorText(error) };
  }
}

/** The configuration, as the `config` phase: the layers, the operator's caps, instruction files. */
async function readConfig(
  run: RunContext,
  workspace: Workspace,
): Promise<
  | {
      config: RepoConfig;
      caps: RepoConfigCaps;
      instructions: InstructionFiles;
      networkAsked?: RepoConfig['network'];
    }
  | Failure
> {
  let caps: RepoConfigCaps = {};
  try {
    const read = await run.phase('config', async () => {
      caps = repoConfigCaps(run.env);
      const resolved = await resolveRepoConfig(workspace.treeDir, run.request.configBase, run.log);
      if (resolved.files.length > 0) run.log.info({ files: resolved.files }, 'configuration read');
      const capped = capRepoConfig(resolved.config, caps);
      const asked = resolved.config.network;
      return {
        config: capped,
        instructions: await instructionFiles(run, workspace, capped),
        ...(asked !== capped.network ? { networkAsked: asked } : {}),
      };
    });
    return { ...read, caps };
  } catch (error) {
    if (error instanceof RepoConfigError) return { outcome: 'config_error', error: error.message };
    throw error;
  }
}

/** Per attempt: steps and time; and how many attempts, within the operator's cap. */
function budgets(
  run: RunContext,
  config: RepoConfig,
  caps: RepoConfigCaps,
): { maxSteps: number; timeoutMs: number; attempts: number } {
  const { overrides } = run.request;
  const maxSteps = overrides?.maxSteps ?? config.max_steps ?? DEFAULT_MAX_STEPS;
  const timeoutMs =
    (overrides?.timeoutMinutes ?? config.timeout_minutes ?? DEFAULT_TIMEOUT_MINUTES) * 60_000;
  const asked = overrides?.attempts ?? config.attempts ?? 1;
  const attempts = Math.min(asked, caps.attempts ?? MAX_ATTEMPTS, MAX_ATTEMPTS);
  if (attempts < asked)
    run.log.warn({ asked, attempts }, 'attempts lowered to the operator cap FROGNANO_MAX_ATTEMPTS');
  return { maxSteps, timeoutMs, attempts };
}

/** A follow-up's previous revisions (undefined for any other run). */
async function followUpRevisions(
  run: RunContext,
  workspace: Workspace,
  test: TestCommand | undefined,
): Promise<PreviousRevisions | undefined | Failure> {
  if (!run.request.followUp) return undefined;
  try {
    return await previousRevisions(workspace, test?.command);
  } catch (error) {
    return { outcome: 'clone_failed', error: errorText(error) };
  }
}

/** The config's instruction files (default AGENTS.md) at the run's base revision. */
function instructionFiles(
  run: RunContext,
  workspace: Workspace,
  config: RepoConfig,
): Promise<InstructionFiles> {
  const paths = config.instructions_files ?? DEFAULT_INSTRUCTION_FILES;
  return readInstructionFiles(workspace, paths, {
    // A follow-up starts from a head the model wrote: the instructions are the base's.
    ...(run.request.followUp ? { revision: run.request.followUp.diffBase } : {}),
    ...(run.request.readUntrustedTexts ? { read: run.request.readUntrustedTexts } : {}),
    listMissing: config.instructions_files !== undefined,
  });
}

async function testCommand(treeDir: string, config: RepoConfig): Promise<TestCommand | undefined> {
  if (config.test) return { command: config.test, source: 'config' };
  const detected = await detectTestCommand(treeDir);
  return detected
    ? { command: detected.command, source: 'detected', detail: detected.detail }
    : undefined;
}
