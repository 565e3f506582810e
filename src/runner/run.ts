// One run, start to finish (DESIGN.md steps 2–9 and 11): clone on the host, read the repo
// config, start the sandbox and copy the tree in, setup (the only phase that may have a
// network), verify-before, the Leaf loop with no network, verify-after on the patched
// tree in a fresh sandbox, policy checks on the patch, and cleanup in every case. Used by
// `frognano solve` and by the GitHub App alike; it knows nothing of GitHub.
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import type Docker from 'dockerode';
import type { Logger } from 'pino';
import { loadProcessConfig, repoConfigCaps } from '../config.js';
import { log as defaultLogger } from '../log.js';
import { runLeaf, type LeafRunResult } from '../leaf/loop.js';
import type { Model } from '../leaf/model.js';
import {
  checkModelEndpoint,
  createOpenAIModel,
  ModelConfig,
  type ModelConfigInput,
} from '../leaf/openai-model.js';
import { DEFAULT_MAX_CONTEXT_TOKENS, DEFAULT_MAX_STEPS } from '../leaf/protocol.js';
import type { ExecResult, Sandbox } from '../leaf/sandbox.js';
import { detectTestCommand } from './detect-test-command.js';
import { connectDocker } from '../sandbox/docker-engine.js';
import {
  DEFAULT_SANDBOX_IMAGE,
  LABEL_RUN,
  createDockerSandbox,
  type DockerSandbox,
  type DockerSandboxLimits,
} from '../sandbox/docker-sandbox.js';
import { createLocalSandbox } from '../sandbox/local-sandbox.js';
import { withTestbedPaths } from '../sandbox/testbed-paths.js';
import { SandboxLimitExceeded } from '../sandbox/disk-guard.js';
import { sandboxOwner } from '../sandbox/owner.js';
import {
  DEFAULT_MAX_PATCH_BYTES,
  checkAppliedChanges,
  checkPatch,
  patchFiles,
} from './patch-policy.js';
import {
  DEFAULT_TIMEOUT_MINUTES,
  RepoConfigError,
  loadRepoConfig,
  type RepoConfig,
} from './repo-config.js';
import type {
  RunOutcome,
  RunPhase,
  RunProgress,
  RunRequest,
  RunResult,
  TestResult,
} from './run-types.js';
import {
  DEFAULT_SNAPSHOT_CAP,
  SNAPSHOT_LABEL,
  evictSnapshots,
  findSnapshot,
  hashDependencyManifests,
  refreshTreeCommand,
  setupInputs,
  snapshotKey,
  snapshotLabels,
  snapshotTag,
} from '../sandbox/snapshot-cache.js';
import { prepareWorkspace, type AppliedPatch, type Workspace } from './workspace.js';
import { addsRootModule, isHarnessFile, isTestFile, patchFacts } from './patch-facts.js';

export { DEFAULT_TIMEOUT_MINUTES };
export const DEFAULT_SETUP_TIMEOUT_MS = 20 * 60_000;
export const DEFAULT_TEST_TIMEOUT_MS = 10 * 60_000;
/** Characters of combined output kept for setup and test results. */
export const OUTPUT_TAIL_CHARS = 4000;
// Setup and test output is read whole up to this, then its tail kept (pytest's summary is last).
const COMMAND_OUTPUT_BYTES = 16 * 1024 * 1024;
// How long a SIGINT/SIGTERM waits for the runs to clean up before the default action.
const SIGNAL_CLEANUP_GRACE_MS = 30_000;
// Git inside the sandbox reads the repository's own .git/config (the agent's, once the loop
// has run): settings that would run a program are overridden on the command line.
const SANDBOX_GIT = 'git -c core.fsmonitor=false -c core.hooksPath=/dev/null';

export interface PipelineDeps {
  /** The model endpoint; checked with `checkModelEndpoint` before the loop. */
  modelConfig?: ModelConfigInput;
  /** A ready Model (tests); used instead of building one from `modelConfig`. */
  model?: Model;
  /** The Docker engine (default: DOCKER_HOST or the local socket). */
  docker?: Docker;
  /** Process environment: FROGNANO_DATA_DIR, FROGNANO_SANDBOX_IMAGE, PATH/HOME for host git. */
  env?: NodeJS.ProcessEnv;
  /** Default `<dataDir>/cache` and `<dataDir>/runs`; dataDir defaults to FROGNANO_DATA_DIR or ./data. */
  dataDir?: string;
  cacheDir?: string;
  workRoot?: string;
  logger?: Logger;
  /** The image when neither the caller nor the repo config names one (default FROGNANO_SANDBOX_IMAGE). */
  defaultImage?: string;
  /** Default: FROGNANO_SANDBOX_MEMORY, _CPUS, _PIDS, _DISK and FROGNANO_DISK_FLOOR from `env`. */
  sandboxLimits?: Partial<DockerSandboxLimits>;
  /** Setup snapshots (Docker only). Default enabled, keeping 10. */
  snapshots?: { enabled?: boolean; keep?: number };
  setupTimeoutMs?: number;
  testTimeoutMs?: number;
  maxPatchBytes?: number;
  maxContextTokens?: number;
  /** Parent of the local sandbox's temporary copies (default: the OS temp dir). */
  localTempRoot?: string;
  /** Clean up on SIGINT/SIGTERM while the run is active (default true). */
  handleSignals?: boolean;
}

export async function runPipeline(
  request: RunRequest,
  deps: PipelineDeps = {},
): Promise<RunResult> {
  const log = (deps.logger ?? defaultLogger).child({ runId: request.runId });
  const env = deps.env ?? process.env;
  const dataDir = path.resolve(deps.dataDir ?? env.FROGNANO_DATA_DIR ?? './data');
  const cacheDir = deps.cacheDir ?? path.join(dataDir, 'cache');
  const workRoot = deps.workRoot ?? path.join(dataDir, 'runs');
  const started = performance.now();

  const controller = new AbortController();
  const onCallerAbort = () => controller.abort(request.signal?.reason);
  if (request.signal?.aborted) controller.abort(request.signal.reason);
  request.signal?.addEventListener('abort', onCallerAbort, { once: true });
  const signal = controller.signal;

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
      maxSteps: request.overrides?.maxSteps ?? DEFAULT_MAX_STEPS,
      contextTokens: 0,
      promptTokens: 0,
      completionTokens: 0,
      wallMs: 0,
      timeoutMs: (request.overrides?.timeoutMinutes ?? DEFAULT_TIMEOUT_MINUTES) * 60_000,
    },
    timings: {},
  };
  const report = (event: RunProgress) => {
    try {
      request.onProgress?.(event);
    } catch (error) {
      log.warn({ err: String(error) }, 'progress callback failed');
    }
  };
  let currentPhase: RunPhase = 'clone';
  const phase = async <T>(name: RunPhase, fn: () => Promise<T>): Promise<T> => {
    currentPhase = name;
    report({
      kind: 'phase',
      phase: name,
      ...(name === 'agent' ? { timeoutMs: result.budgets.timeoutMs } : {}),
    });
    const t0 = performance.now();
    try {
      return await fn();
    } finally {
      result.timings[name] = Math.round((result.timings[name] ?? 0) + performance.now() - t0);
    }
  };
  const stop = (outcome: RunOutcome, error: string): RunResult => {
    result.outcome = signal.aborted ? 'cancelled' : outcome;
    result.error = signal.aborted ? 'the run was cancelled' : error;
    return result;
  };

  let workspace: Workspace | undefined;
  let sandbox: Sandbox | undefined;
  const unregister =
    deps.handleSignals === false
      ? () => undefined
      : registerActiveRun(() => controller.abort(new Error('interrupted by a signal')));

  try {
    // 2. Clone on the host (cached mirror), read the repo config.
    try {
      // Before the work directory exists: the owner lock is what keeps a reaper off it.
      sandboxOwner(dataDir);
      workspace = await phase('clone', () =>
        prepareWorkspace({
          runId: request.runId,
          repo: request.repo,
          revision: request.revision,
          getCredential: request.getCredential,
          cacheDir,
          workRoot,
          signal,
          log,
          env,
        }),
      );
    } catch (error) {
      return stop('clone_failed', errorText(error));
    }
    result.baseCommit = workspace.baseCommit;
    const treeDir = workspace.treeDir;

    let config: RepoConfig;
    try {
      config = await phase('config', () => loadRepoConfig(treeDir, repoConfigCaps(env)));
    } catch (error) {
      if (error instanceof RepoConfigError) return stop('config_error', error.message);
      throw error;
    }
    const maxSteps = request.overrides?.maxSteps ?? config.max_steps ?? DEFAULT_MAX_STEPS;
    const timeoutMs =
      (request.overrides?.timeoutMinutes ?? config.timeout_minutes ?? DEFAULT_TIMEOUT_MINUTES) *
      60_000;
    result.budgets.maxSteps = maxSteps;
    result.budgets.timeoutMs = timeoutMs;

    const detected = config.test ? undefined : await detectTestCommand(treeDir);
    const test = config.test
      ? { command: config.test, source: 'config' as const }
      : detected
        ? { command: detected.command, source: 'detected' as const, detail: detected.detail }
        : undefined;
    if (test) result.testCommand = test;

    // 3. Sandbox up, tree in; a setup snapshot replaces setup when one matches.
    const image =
      request.overrides?.image ??
      config.image ??
      deps.defaultImage ??
      env.FROGNANO_SANDBOX_IMAGE ??
      DEFAULT_SANDBOX_IMAGE;
    const setupNetwork = config.network === 'setup' && config.setup.length > 0;
    const snapshotsOn =
      request.sandbox === 'docker' && config.setup.length > 0 && deps.snapshots?.enabled !== false;
    const docker = request.sandbox === 'docker' ? (deps.docker ?? connectDocker(env)) : undefined;
    // Brings a sandbox up with the ORIGINAL tree, set up, network cut: for the agent, and again
    // (fresh, `timed` false) for verify-after. Returns why it could not, or undefined.
    const bringUp = async (
      timed: boolean,
    ): Promise<{ outcome: RunOutcome; error: string } | undefined> => {
      const step = <T>(name: RunPhase, fn: () => Promise<T>): Promise<T> =>
        timed ? phase(name, fn) : fn();
      let snapshot: { key: string; hitImage?: string } | undefined;
      try {
        sandbox = await step('sandbox', async () => {
          if (!docker) {
            if (config.setup.length > 0) {
              log.warn(
                {},
                'the local sandbox has no network isolation: setup runs with the host network',
              );
            }
            // The model sees /testbed, as in Docker (src/sandbox/testbed-paths.ts).
            return withTestbedPaths(
              await createLocalSandbox({
                sourceDir: treeDir,
                ...(deps.localTempRoot ? { tempRoot: deps.localTempRoot } : {}),
              }),
            );
          }
          let baseImageId: string;
          try {
            const info = await docker.getImage(image).inspect();
            // A setup snapshot holds what one repository's setup made (its private dependencies,
            // whatever setup fetched); it is only ever picked by its own key, never by name.
            if (info.Config?.Labels?.[SNAPSHOT_LABEL] === '1') {
              throw new Error(
                `sandbox image ${image} is a frognano setup snapshot; name a base image instead (snapshots are used only by their own repository's runs)`,
              );
            }
            baseImageId = info.Id;
          } catch (error) {
            if ((error as { statusCode?: number }).statusCode === 404) {
              throw new Error(
                `sandbox image ${image} is not on the Docker engine: build it (see sandbox/README.md) or pass another --image`,
              );
            }
            throw error;
          }
          if (snapshotsOn) {
            const manifests = await hashDependencyManifests(treeDir, setupInputs(config.setup));
            const key = snapshotKey({
              repo: snapshotRepo(request),
              baseImageId,
              setup: config.setup,
              network: config.network,
              manifestsHash: manifests.hash,
              treeCommit: setupInstallsTree(config.setup) ? workspace!.baseCommit : undefined,
            });
            snapshot = { key, hitImage: await findSnapshot(docker, key).catch(() => undefined) };
          }
          const start = (fromSnapshot: boolean) =>
            createDockerSandbox({
              docker,
              image: fromSnapshot ? snapshotTag(snapshot!.key) : image,
              runId: request.runId,
              repo: snapshotRepo(request),
              network: setupNetwork && !fromSnapshot ? 'bridge' : 'none',
              limits: deps.sandboxLimits ?? limitsFromEnv(env, log),
              owner: sandboxOwner(dataDir),
              logger: log,
            });
          let hit = snapshot?.hitImage !== undefined;
          let created: DockerSandbox;
          try {
            created = await start(hit);
          } catch (error) {
            if (!hit) throw error;
            // Evicted between lookup and start (another worker): a cold start still works.
            log.warn({ err: errorText(error) }, 'setup snapshot unusable; running setup');
            snapshot!.hitImage = undefined;
            hit = false;
            created = await start(false);
          }
          sandbox = created;
          if (hit) {
            // The snapshot holds the tree of its own time: drop what git tracked then, keep
            // what setup made (snapshot-cache.ts explains), and bring in today's tree.
            const refreshed = await created.exec(refreshTreeCommand(created.workdir), {
              timeoutMs: 120_000,
              signal,
            });
            if (refreshed.exitCode !== 0) {
              throw new Error(
                `could not refresh the snapshot's tree: ${tail(combined(refreshed), 300)}`,
              );
            }
          }
          await created.copyIn(treeDir);
          return created;
        });
      } catch (error) {
        const limit = limitOf(sandbox, error);
        if (limit) return { outcome: 'sandbox_limit', error: limit.message };
        return { outcome: 'sandbox_failed', error: errorText(error) };
      }
      const hit = snapshot?.hitImage !== undefined;
      if (timed) result.snapshotHit = hit;

      // 4. Setup (network only if the config allows, and only now).
      if (config.setup.length > 0 && !hit) {
        if (timed) result.setupNetwork = setupNetwork || sandbox!.kind === 'local';
        const failure = await step('setup', async () => {
          const deadline = Date.now() + (deps.setupTimeoutMs ?? DEFAULT_SETUP_TIMEOUT_MS);
          const tails: string[] = [];
          for (const [index, command] of config.setup.entries()) {
            const left = deadline - Date.now();
            const run =
              left > 0
                ? await sandbox!.exec(combinedOutput(command), {
                    timeoutMs: left,
                    signal,
                    maxOutputBytes: COMMAND_OUTPUT_BYTES,
                  })
                : undefined;
            if (run) tails.push(combined(run));
            if (timed) result.setupTail = tail(tails.join('\n'), OUTPUT_TAIL_CHARS);
            if (!run || run.timedOut)
              return `setup command ${index + 1} (${shortCommand(command)}) did not finish within the setup time limit`;
            if (run.exitCode !== 0)
              return `setup command ${index + 1} (${shortCommand(command)}) failed with exit code ${run.exitCode}${limitNote(run)}`;
          }
          return undefined;
        });
        if (failure) return { outcome: 'setup_failed', error: failure };
        if (snapshot && docker)
          await saveSnapshot(docker, sandbox as DockerSandbox, snapshot.key, request, deps, log);
      }

      // 5/6. Cut the network before anything else runs in there.
      if (setupNetwork && !hit && sandbox!.kind === 'docker') {
        try {
          await (sandbox as DockerSandbox).disconnectNetwork();
        } catch (error) {
          return {
            outcome: 'sandbox_failed',
            error: `could not cut the sandbox network before the agent: ${errorText(error)}`,
          };
        }
      }
      return undefined;
    };
    const up = await bringUp(true);
    if (up) return stop(up.outcome, up.error);
    if (!sandbox) return stop('sandbox_failed', 'the sandbox did not start');
    if (test) {
      result.verifyBefore = await phase('verify-before', () =>
        runTest(sandbox!, test, 'verify-before', deps, signal),
      );
      // A test command that cannot even start would waste the whole agent run on the GPU.
      const unrunnable = missingToolLine(result.verifyBefore);
      if (unrunnable !== undefined) {
        result.setupTail = result.verifyBefore.outputTail;
        return stop(
          'setup_failed',
          `the test command ${shortCommand(test.command)} could not run (exit ${result.verifyBefore.exitCode}: ${unrunnable}): install the tool in \`setup\` or pick an \`image\` that has it`,
        );
      }
    }
    if (signal.aborted) return stop('cancelled', 'the run was cancelled');
    await excludeUntracked(sandbox, signal, log);

    // 6. The Leaf loop, against the model endpoint from the host.
    const modelConfig =
      deps.modelConfig === undefined ? undefined : ModelConfig.parse(deps.modelConfig);
    if (modelConfig) {
      try {
        await checkModelEndpoint(modelConfig);
      } catch (error) {
        return stop('model_unreachable', errorText(error));
      }
    }
    const model = deps.model ?? (modelConfig ? createOpenAIModel(modelConfig) : undefined);
    if (!model)
      return stop('model_unreachable', 'no model endpoint is configured: set FROGNANO_MODEL_URL');

    await mkdir(request.outDir, { recursive: true });
    const trajectoryPath = path.join(request.outDir, 'trajectory.json');
    result.trajectoryPath = trajectoryPath;
    const leaf: LeafRunResult = await phase('agent', () =>
      runLeaf({
        model,
        sandbox: sandbox!,
        task: taskText(request, config),
        instanceId: request.instanceId,
        maxSteps,
        maxContextTokens: deps.maxContextTokens ?? DEFAULT_MAX_CONTEXT_TOKENS,
        ...(modelConfig ? { maxTokensPerTurn: modelConfig.maxCompletionTokens } : {}),
        timeBudgetMs: timeoutMs,
        signal,
        trajectoryPath,
        trajectoryId: request.runId,
        logger: log,
        onStep: (step) => report({ kind: 'step', ...step }),
      }),
    );
    result.exitReason = leaf.exitReason;
    result.partial = leaf.partial;
    result.finalMessage = leaf.finalMessage;
    result.patch = leaf.patch;
    result.filesChanged = patchFiles(leaf.patch);
    result.steps = leaf.steps;
    result.budgets.steps = leaf.nSteps;
    result.budgets.contextTokens = leaf.contextTokens;
    result.budgets.promptTokens = leaf.usage.promptTokens;
    result.budgets.completionTokens = leaf.usage.completionTokens;
    if (leaf.exitReason === 'cancelled') return stop('cancelled', 'the run was cancelled');
    const limit = limitOf(sandbox, undefined);
    if (limit) return stop('sandbox_limit', limit.message);
    if (leaf.error) result.error = leaf.error;
    if (leaf.patchError) result.error = `the patch could not be captured: ${leaf.patchError}`;

    // git's reading of the patch on the host's clean clone, once: the policy checks it, the
    // evidence splits on it (the repository's own tests and harness for the verdict).
    const maxPatchBytes = deps.maxPatchBytes ?? DEFAULT_MAX_PATCH_BYTES;
    let analysis: Promise<{ applied?: AppliedPatch; error?: string }> | undefined;
    const analyze = () =>
      (analysis ??= (async () => {
        if (leaf.patch.trim() === '') return { error: 'the patch is empty' };
        if (Buffer.byteLength(leaf.patch, 'utf8') > maxPatchBytes)
          return { error: `the patch is larger than ${maxPatchBytes} bytes` };
        try {
          const applied = await workspace!.changesFromPatch(leaf.patch, {
            setAside: (p, c) =>
              isHarnessFile(p, test?.command) || isTestFile(p) || addsRootModule(c),
          });
          result.patchFacts = patchFacts(applied.changes, test?.command);
          result.filesChanged = applied.changes.map((c) => c.path);
          return { applied };
        } catch (error) {
          // Publishing applies it the same way and will say so; the text checks stand.
          log.warn({ err: errorText(error) }, 'the patch does not apply to a clean clone');
          return { error: `the patch does not apply to a clean clone: ${errorText(error)}` };
        }
      })());

    // 8. Verify-after (nothing to verify without a patch), in a FRESH sandbox: the agent's one
    // is untrusted once the loop has run (a login profile that fakes the test command, a .pth
    // file in setup's virtualenv, a process left behind writing into the test's output), and
    // evidence from it would be the agent's to choose. The verdict gets only the source
    // changes, on the repository's own tests and harness; the agent's tests and harness
    // changes then run on top, reported as its own evidence.
    if (test && leaf.patch !== '') {
      const verified = await phase('verify-after', async () => {
        const { applied, error } = await analyze();
        if (!applied?.split) return error ?? 'the patch could not be read';
        const { kept, setAside } = applied.split;
        const used = sandbox;
        sandbox = undefined;
        // A container that will not go is the reaper's; it must not cost the run its result.
        await used
          ?.dispose()
          .catch((e: unknown) =>
            log.error({ err: errorText(e) }, 'agent sandbox removal failed; reap will finish it'),
          );
        const failed = await bringUp(false);
        if (failed) return `a fresh sandbox for the tests could not be prepared: ${failed.error}`;
        const apply = async (text: string): Promise<string | undefined> => {
          if (text === '') return undefined;
          const run = await sandbox!.exec(`${SANDBOX_GIT} apply --whitespace=nowarn -`, {
            stdin: text,
            timeoutMs: 120_000,
            signal,
          });
          return run.exitCode === 0 ? undefined : tail(combined(run).trim(), 300);
        };
        const keptFailed = await apply(kept);
        if (keptFailed) return `the patch did not apply in a fresh sandbox: ${keptFailed}`;
        result.verifyAfter = await runTest(sandbox!, test, 'verify-after', deps, signal);
        if (setAside !== '' && !signal.aborted) {
          const restFailed = await apply(setAside);
          if (restFailed) {
            log.warn({ reason: restFailed }, "the agent's tests could not be applied");
          } else {
            result.agentTests = await runTest(sandbox!, test, 'agent-tests', deps, signal);
          }
        }
        return undefined;
      });
      if (signal.aborted) return stop('cancelled', 'the run was cancelled');
      if (verified) {
        log.warn({ reason: verified }, 'verify-after not run');
        result.error ??= `verify-after was not run: ${verified}`;
      }
    }

    // 9. Policy checks on the patch text, and on what git makes of it on a clean clone.
    result.violations = await phase('policy', async () => {
      const policy = { blockedPaths: config.blocked_paths, maxPatchBytes };
      const violations = checkPatch(leaf.patch, policy);
      if (leaf.patch.trim() === '' || violations.some((v) => v.rule === 'patch_size'))
        return violations;
      const { applied } = await analyze();
      for (const v of applied ? checkAppliedChanges(applied.changes, policy) : []) {
        if (!violations.some((w) => w.rule === v.rule && w.detail === v.detail)) violations.push(v);
      }
      return violations;
    });
    return result;
  } catch (error) {
    const limit = limitOf(sandbox, error);
    if (limit) return stop('sandbox_limit', limit.message);
    log.error({ err: errorText(error) }, 'run failed unexpectedly');
    const outcome: RunOutcome =
      currentPhase === 'clone'
        ? 'clone_failed'
        : currentPhase === 'config'
          ? 'config_error'
          : 'sandbox_failed';
    return stop(outcome, errorText(error));
  } finally {
    // 11. Always: the container and the work directory go, whatever happened above.
    await phase('cleanup', async () => {
      const errors: string[] = [];
      await sandbox?.dispose().catch((e: unknown) => errors.push(`sandbox: ${errorText(e)}`));
      await workspace
        ?.dispose()
        .catch((e: unknown) => errors.push(`work directory: ${errorText(e)}`));
      if (errors.length > 0)
        log.error({ errors }, 'cleanup incomplete; `frognano reap` will finish it');
    }).catch(() => undefined);
    request.signal?.removeEventListener('abort', onCallerAbort);
    result.budgets.wallMs = Math.round(performance.now() - started);
    unregister();
  }
}

/** leaf-protocol.md §1: the issue, then (only if present) a blank line and each extra guidance. */
export function taskText(
  request: Pick<RunRequest, 'issueText' | 'extraGuidance'>,
  config: { instructions?: string | undefined },
): string {
  const parts = [request.issueText];
  if (config.instructions?.trim()) parts.push(config.instructions.trim());
  if (request.extraGuidance?.trim()) parts.push(request.extraGuidance.trim());
  return parts.join('\n\n');
}

/** The shell's "command not found" line when the test command could not start, else undefined. */
function missingToolLine(test: TestResult): string | undefined {
  const lines = test.outputTail.split('\n').map((line) => line.trim());
  const notFound = lines.find((line) => /(command )?not found$/.test(line));
  if (test.exitCode === 127) return notFound ?? lines.filter(Boolean).at(-1) ?? 'no output';
  return test.exitCode !== 0 && notFound !== undefined && lines.filter(Boolean).at(-1) === notFound
    ? notFound
    : undefined;
}

async function runTest(
  sandbox: Sandbox,
  test: { command: string; source: 'config' | 'detected' },
  phase: 'verify-before' | 'verify-after' | 'agent-tests',
  deps: PipelineDeps,
  signal: AbortSignal,
): Promise<TestResult> {
  const run = await sandbox.exec(combinedOutput(test.command), {
    timeoutMs: deps.testTimeoutMs ?? DEFAULT_TEST_TIMEOUT_MS,
    signal,
    maxOutputBytes: COMMAND_OUTPUT_BYTES,
    // Python's bytecode cache trusts (mtime in whole seconds, size): an edit of the same
    // size within the second of an earlier run would be tested as the OLD code. A fresh
    // cache per verification neither reads stale bytecode nor leaves any in the tree.
    env: { PYTHONPYCACHEPREFIX: `${sandbox.homeDir}/.cache/frognano-pycache/${phase}` },
  });
  return {
    command: test.command,
    source: test.source,
    exitCode: run.exitCode,
    timedOut: run.timedOut,
    outputTail: tail(combined(run), OUTPUT_TAIL_CHARS),
    durationMs: Math.round(run.durationMs),
  };
}

async function saveSnapshot(
  docker: Docker,
  sandbox: DockerSandbox,
  key: string,
  request: RunRequest,
  deps: PipelineDeps,
  log: Logger,
): Promise<void> {
  // A failed snapshot costs the next run its head start, never this run its result.
  try {
    // The run label is the container's; the image must not look like a live run's.
    await sandbox.commit(snapshotTag(key), {
      ...snapshotLabels({ repo: snapshotRepo(request), key }),
      [LABEL_RUN]: '',
    });
    const evicted = await evictSnapshots(docker, {
      keep: deps.snapshots?.keep ?? DEFAULT_SNAPSHOT_CAP,
    });
    log.info({ key, evicted: evicted.length }, 'setup snapshot saved');
  } catch (error) {
    log.warn({ key, err: errorText(error) }, 'setup snapshot failed');
  }
}

/** The Docker sandbox tells when a limit, not the command itself, ended it. */
function limitNote(run: ExecResult & { oomKilled?: boolean; pidsLimitHit?: boolean }): string {
  if (run.oomKilled) return ' (out of memory: raise FROGNANO_SANDBOX_MEMORY)';
  if (run.pidsLimitHit) return ' (process limit reached: raise FROGNANO_SANDBOX_PIDS)';
  return '';
}

function limitsFromEnv(env: NodeJS.ProcessEnv, log: Logger): Partial<DockerSandboxLimits> {
  try {
    const config = loadProcessConfig(env);
    return {
      memoryBytes: config.FROGNANO_SANDBOX_MEMORY,
      nanoCpus: Math.round(config.FROGNANO_SANDBOX_CPUS * 1e9),
      pidsLimit: config.FROGNANO_SANDBOX_PIDS,
      diskBytes: config.FROGNANO_SANDBOX_DISK,
      diskFloorBytes: config.FROGNANO_DISK_FLOOR,
    };
  } catch (error) {
    // Entry points validate the environment first; here a bad value falls back to defaults.
    log.warn(
      { err: errorText(error) },
      'sandbox limits from the environment are invalid; using defaults',
    );
    return {};
  }
}

/** The disk guard's reason when it stopped the sandbox (the error itself, or the sandbox's). */
function limitOf(sandbox: Sandbox | undefined, error: unknown): SandboxLimitExceeded | undefined {
  if (error instanceof SandboxLimitExceeded) return error;
  return (sandbox as { limitExceeded?: SandboxLimitExceeded } | undefined)?.limitExceeded;
}

/** The repository a snapshot belongs to (never shared across repositories): no credentials. */
function snapshotRepo(request: RunRequest): string {
  return request.repo.replace(/(\/\/)[^/@\s]+@/, '$1').slice(0, 500);
}

/**
 * `pip install .` (not editable) copies the project's current sources into site-packages:
 * a snapshot of that is only right for the same commit, so the commit joins the key.
 */
export function setupInstallsTree(setup: readonly string[]): boolean {
  return setup.some((command) =>
    command.split(/[;&|\n]+/).some((part) => {
      const words = part.trim().split(/\s+/);
      const isPipInstall = /(^|\/)pip3?$/.test(words[0] ?? '')
        ? words[1] === 'install'
        : words.includes('pip') && words.includes('install');
      const setupPy = /setup\.py$/.test(words[1] ?? '') && words.includes('install');
      if (setupPy) return true;
      if (!isPipInstall) return false;
      const editable = words.some(
        (w) => w === '-e' || w === '--editable' || w.startsWith('--editable='),
      );
      return !editable && words.some((w) => /^\.{1,2}(\/|$|\[)/.test(w));
    }),
  );
}

/**
 * Caches and build products no reviewer wants in a pull request, wherever they appear
 * (the agent's own test runs make them too). Only untracked files are affected: a
 * repository that tracks such a file keeps it tracked.
 */
export const UNTRACKED_NOISE: readonly string[] = [
  '__pycache__/',
  '*.py[cod]',
  '.pytest_cache/',
  '.mypy_cache/',
  '.ruff_cache/',
  '.tox/',
  '.nox/',
  '.coverage',
  '*.egg-info/',
  'node_modules/',
];

/**
 * What setup and verify-before left in the tree (an .egg-info, node_modules, a generated
 * file) is not the agent's work: list it, and the usual caches, in the sandbox's
 * .git/info/exclude so the patch captured after the loop (`git add -A`) holds only the
 * agent's changes.
 */
async function excludeUntracked(sandbox: Sandbox, signal: AbortSignal, log: Logger): Promise<void> {
  const list = await sandbox.exec(
    `${SANDBOX_GIT} ls-files -z --others --exclude-standard --directory`,
    { timeoutMs: 120_000, signal, maxOutputBytes: COMMAND_OUTPUT_BYTES },
  );
  let paths: string[] = [];
  if (list.exitCode !== 0 || list.stdoutDroppedChars > 0) {
    log.warn(
      { exitCode: list.exitCode },
      'could not list setup outputs; they may show up in the patch',
    );
  } else {
    paths = list.stdout
      .toString('utf8')
      .split('\0')
      .filter((p) => p !== '');
  }
  // Anchored, with gitignore's special characters escaped: each line names exactly one path.
  const lines = paths.map(
    (p) => `/${p.replace(/[\\*?[\]]/g, (c) => `\\${c}`).replace(/ $/, '\\ ')}`,
  );
  const text = [
    '',
    '# frognano: caches, and what setup and verify-before left; not part of the patch',
    ...UNTRACKED_NOISE,
    ...lines,
    '',
  ].join('\n');
  const write = await sandbox.exec('mkdir -p .git/info && cat >> .git/info/exclude', {
    stdin: text,
    timeoutMs: 60_000,
    signal,
  });
  if (write.exitCode !== 0)
    log.warn({ exitCode: write.exitCode }, 'could not record setup outputs in .git/info/exclude');
}

/** stdout and stderr interleaved as a terminal would show them. */
function combinedOutput(command: string): string {
  return `{\n${command}\n} 2>&1`;
}

function combined(run: ExecResult): string {
  const out = run.stdout.toString('utf8') + run.stderr.toString('utf8');
  return run.stdoutDroppedChars > 0
    ? `${out}\n[output beyond ${COMMAND_OUTPUT_BYTES} bytes not kept]`
    : out;
}

function tail(text: string, chars: number): string {
  return text.length > chars ? `…${text.slice(text.length - chars)}` : text;
}

function shortCommand(command: string): string {
  const line = command.trim().split('\n')[0] ?? '';
  return `\`${line.length > 80 ? `${line.slice(0, 77)}...` : line}\``;
}

function errorText(error: unknown): string {
  const text = error instanceof Error ? error.message : String(error);
  return text.split('\n')[0] ?? text;
}

// SIGINT/SIGTERM while runs are active: abort them; when the last one has cleaned up, let
// the signal take its default effect (the process ends), unless someone else (the CLI)
// was listening for it at the time and so decides what happens next.
const activeRuns = new Set<() => void>();
const SIGNALS = ['SIGINT', 'SIGTERM'] as const;
let pending: { sig: NodeJS.Signals; othersListening: boolean } | undefined;

function onProcessSignal(sig: NodeJS.Signals): void {
  pending ??= { sig, othersListening: process.listenerCount(sig) > 1 };
  for (const abort of activeRuns) abort();
  // A cleanup that hangs must not keep a signalled process alive for ever.
  setTimeout(() => reRaise(), SIGNAL_CLEANUP_GRACE_MS).unref();
}

function reRaise(): void {
  const signal = pending;
  if (!signal || signal.othersListening) return;
  for (const s of SIGNALS) process.off(s, onProcessSignal);
  process.kill(process.pid, signal.sig);
}

function registerActiveRun(abort: () => void): () => void {
  if (activeRuns.size === 0) for (const s of SIGNALS) process.on(s, onProcessSignal);
  activeRuns.add(abort);
  return () => {
    activeRuns.delete(abort);
    if (activeRuns.size > 0) return;
    for (const s of SIGNALS) process.off(s, onProcessSignal);
    // Before returning to the caller: a signalled run must not be followed by more work.
    if (pending) reRaise();
    // Someone else handles the signal (and decides about the process): forget it.
    pending = undefined;
  };
}
