// Phase 1, prepare: clone on the host (cached mirror), read .github/frognano.yml (on top of the
// caller's base configuration) and the instruction files, and settle what the run will use:
// budgets, the test command, the image, snapshots, the attempts.
import type Docker from 'dockerode';
import { repoConfigCaps } from '../../config.js';
import { DEFAULT_MAX_STEPS } from '../../leaf/protocol.js';
import { connectDocker } from '../../sandbox/docker-engine.js';
import { DEFAULT_SANDBOX_IMAGE } from '../../sandbox/docker-sandbox.js';
import { sandboxOwner } from '../../sandbox/owner.js';
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
import type { RunContext, Failure } from '../run-context.js';
import type { RunResult } from '../run-types.js';
import { prepareWorkspace, type Workspace } from '../workspace.js';
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
  /** Absent for the local sandbox. */
  docker?: Docker;
  /** Setup may reach the network (`network: setup`, and there is setup). */
  setupNetwork: boolean;
  /** Setup snapshots are taken and used (Docker, there is setup, not disabled). */
  snapshotsOn: boolean;
  /**
   * A follow-up: what the previous revisions changed since the base revision. The workspace's
   * tree (config, test command, setup, snapshot) is the base revision's; these come in later.
   */
  previous?: PreviousRevisions;
}

export async function prepare(run: RunContext): Promise<Prepared | Failure> {
  const { request, deps, env, result } = run;
  let workspace: Workspace;
  try {
    // Before the work directory exists: the owner lock is what keeps a reaper off it.
    sandboxOwner(run.dataDir);
    workspace = await run.phase('clone', () =>
      prepareWorkspace({
        runId: request.runId,
        repo: request.repo,
        revision: request.revision,
        ...(request.followUp ? { baseRevision: request.followUp.diffBase } : {}),
        getCredential: request.getCredential,
        cacheDir: run.cacheDir,
        workRoot: run.workRoot,
        signal: run.signal,
        log: run.log,
        env,
      }),
    );
  } catch (error) {
    return { outcome: 'clone_failed', error: errorText(error) };
  }
  run.workspace = workspace;
  result.baseCommit = workspace.baseCommit;
  let issueText = request.issueText;
  if (request.followUp) {
    try {
      issueText = request.followUp.task(await workspace.diffFrom(request.followUp.diffBase));
    } catch (error) {
      return { outcome: 'clone_failed', error: errorText(error) };
    }
  }

  let config: RepoConfig;
  let caps: RepoConfigCaps = {};
  let instructions: InstructionFiles;
  try {
    ({ config, instructions } = await run.phase('config', async () => {
      caps = repoConfigCaps(env);
      const resolved = await resolveRepoConfig(workspace.treeDir, request.configBase, run.log);
      if (resolved.files.length > 0) run.log.info({ files: resolved.files }, 'configuration read');
      const capped = capRepoConfig(resolved.config, caps);
      return { config: capped, instructions: await instructionFiles(run, workspace, capped) };
    }));
  } catch (error) {
    if (error instanceof RepoConfigError) return { outcome: 'config_error', error: error.message };
    throw error;
  }
  if (instructions.files.length > 0) result.instructionFiles = instructions.files;
  const maxSteps = request.overrides?.maxSteps ?? config.max_steps ?? DEFAULT_MAX_STEPS;
  const timeoutMs =
    (request.overrides?.timeoutMinutes ?? config.timeout_minutes ?? DEFAULT_TIMEOUT_MINUTES) *
    60_000;
  const asked = request.overrides?.attempts ?? config.attempts ?? 1;
  const attempts = Math.min(asked, caps.attempts ?? MAX_ATTEMPTS, MAX_ATTEMPTS);
  if (attempts < asked)
    run.log.warn({ asked, attempts }, 'attempts lowered to the operator cap FROGNANO_MAX_ATTEMPTS');
  result.budgets.maxSteps = maxSteps;
  result.budgets.timeoutMs = timeoutMs;

  const test = await testCommand(workspace.treeDir, config);
  if (test) result.testCommand = test;
  let previous: PreviousRevisions | undefined;
  if (request.followUp) {
    try {
      previous = await previousRevisions(workspace, test?.command);
    } catch (error) {
      return { outcome: 'clone_failed', error: errorText(error) };
    }
    result.followUpBase = { commit: previous.origin, harnessFiles: previous.harnessFiles };
  }

  const image =
    request.overrides?.image ??
    config.image ??
    deps.defaultImage ??
    env.FROGNANO_SANDBOX_IMAGE ??
    DEFAULT_SANDBOX_IMAGE;
  return {
    workspace,
    issueText,
    instructionTexts: instructions.texts,
    config,
    maxSteps,
    timeoutMs,
    attempts,
    ...(test ? { test } : {}),
    image,
    ...(request.sandbox === 'docker' ? { docker: deps.docker ?? connectDocker(env) } : {}),
    setupNetwork: config.network === 'setup' && config.setup.length > 0,
    snapshotsOn:
      request.sandbox === 'docker' && config.setup.length > 0 && deps.snapshots?.enabled !== false,
    ...(previous ? { previous } : {}),
  };
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
