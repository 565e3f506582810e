// `frognano solve`: the whole run pipeline on one repository, no GitHub involved.
import { mkdir, readdir, readFile, rm, rmdir, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { loadProcessConfig } from '../config.js';
import { createLogger } from '../log.js';
import { readIssueTextsOffThread } from '../github/sanitize-off-thread.js';
import type Docker from 'dockerode';
import type { Logger } from 'pino';
import { ModelEndpointError, type ModelConfig } from '../leaf/openai-model.js';
import {
  ALLOW_LOCAL_SANDBOX_VALUE,
  ALLOW_LOCAL_SANDBOX_VARIABLE,
  localSandboxProblem,
} from '../action/local-sandbox-guard.js';
import type { ModelFleet } from '../model-fleet/fleet.js';
import { followUpTask } from '../runner/follow-up-task.js';
import { runPipeline } from '../runner/run.js';
import type { RunProgress, RunResult, SandboxKind } from '../runner/run-types.js';
import { assertDockerReachable, connectDocker } from '../sandbox/docker-engine.js';
import { ensureSandboxImage } from '../sandbox/ensure-sandbox-image.js';
import { writeRunPage } from '../web/index.js';
import { modelConfigFrom } from '../model-fleet/model-config-from.js';
import { modelFleetFrom } from '../model-fleet/model-fleet-from.js';
import { renderSummary } from '../github/publishing/index.js';
import { parseSolveOptions, UsageError, type SolveOptions } from './solve-options.js';
import { terminalText } from './terminal-text.js';
import { oneLine } from '../one-line.js';
import { testVerdict, type TestVerdict } from '../runner/test-verdict.js';

/** Exit codes of `frognano solve` (listed in --help and README). */
export const SOLVE_EXIT = {
  /** The agent loop reached a stop reason; patch.diff and summary.md are written. */
  ok: 0,
  /** The run failed: clone, config, sandbox, setup, model endpoint (llm_query_error), tool_error, a patch that could not be captured, or a patch the policy refuses. */
  failed: 1,
  /** Bad usage or a failed pre-flight check (model endpoint, Docker engine); nothing ran. */
  usage: 2,
  /** Cancelled by SIGINT or SIGTERM. */
  cancelled: 130,
} as const;

/** The files a run writes into --out; a previous run's copies are removed first. */
const OUTPUT_FILES = ['trajectory.json', 'trajectory.html', 'patch.diff', 'summary.md'];
/** Attempt K's folder in a run with several (runner/phases/agent.ts, select.ts). */
const ATTEMPT_DIR = /^attempt-[1-9]\d*$/;
/** What a run writes into an attempt's folder, with writeFileAtomic's temporary files. */
const ATTEMPT_FILE = /^(?:patch\.diff|trajectory\.json(?:\.\d+\.[0-9a-f]{8}\.tmp)?)$/;

export interface SolveIo {
  stderr: (line: string) => void;
  env: NodeJS.ProcessEnv;
  signal?: AbortSignal;
}

/** Returns the process exit code; throws UsageError for bad input. */
export async function solve(rawOptions: Record<string, unknown>, io: SolveIo): Promise<number> {
  // Progress and final lines carry what the model chose (tool names, error texts).
  const say = (line: string) => io.stderr(terminalText(line));
  const options = parseSolveOptions(rawOptions);
  const config = loadProcessConfig(io.env);
  const sandbox = options.sandbox ?? config.FROGNANO_SANDBOX;
  // In a workflow job the model's commands would run next to this process and could read the
  // job's environment from /proc: refused as the Action refuses its own `sandbox: local`.
  if (localSandboxProblem(sandbox, io.env) !== undefined) {
    throw new UsageError(
      `--sandbox local is refused in GitHub Actions: the model's commands would run next to this process and could read the job's secrets from /proc; use --sandbox docker, or set ${ALLOW_LOCAL_SANDBOX_VARIABLE}=${ALLOW_LOCAL_SANDBOX_VALUE} to accept that`,
    );
  }
  const issueText = await readIssueText(options);
  const feedback =
    options.feedbackFile === undefined ? undefined : await readFeedback(options.feedbackFile);
  const repo = await resolveRepo(options.repo);
  const overrides = { baseUrl: options.modelUrl, model: options.model };
  const modelConfig = modelConfigFrom(config, overrides);

  const outDir = path.resolve(options.out);
  await assertOutDirUsable(options.out, outDir);
  if (sandbox === 'local') {
    say(
      "warning: --sandbox local runs the agent's commands on this machine with your user's rights, only isolated by a temporary copy; use it for development only",
    );
  }
  // Fail fast, in one line each, before any clone or container.
  const docker = sandbox === 'docker' ? connectDocker(io.env) : undefined;
  if (docker) await assertDockerReachable(docker, { env: io.env });
  // The default sandbox image builds itself when it is missing (progress on stderr).
  if (docker && options.image === undefined) {
    await ensureSandboxImage({
      docker,
      image: config.FROGNANO_SANDBOX_IMAGE,
      env: io.env,
      progress: io.stderr,
    });
  }
  // The progress lines are the interface here; logs only speak up for problems, such as an
  // endpoint marked down mid-run (the loop moves on silently otherwise).
  const logger = createLogger({ level: io.env.LOG_LEVEL ?? 'warn' });
  const fleet = modelFleetFrom(config, io.env, { overrides, log: logger });
  try {
    const checks = await fleet.check();
    const failed = checks.filter((c) => !c.ok);
    if (failed.length === checks.length) {
      throw new ModelEndpointError(
        `${failed.map((c) => c.message).join('; ')} (${modelUrlSource(options, io.env)})`,
      );
    }
    for (const c of failed) say(`warning: ${c.message}; the run uses the other endpoints`);
    // Only now, with every pre-flight check passed: a run that cannot start leaves nothing.
    await prepareOutDir(options.out, outDir);
    return await solveWith(options, io, {
      fleet,
      logger,
      modelConfig,
      docker,
      repo,
      issueText,
      feedback,
      sandbox,
      outDir,
    });
  } finally {
    await fleet.close();
  }
}

async function solveWith(
  options: SolveOptions,
  io: SolveIo,
  context: {
    fleet: ModelFleet;
    logger: Logger;
    modelConfig: ModelConfig;
    docker: Docker | undefined;
    repo: string;
    issueText: string;
    feedback: string | undefined;
    sandbox: SandboxKind;
    outDir: string;
  },
): Promise<number> {
  const say = (line: string) => io.stderr(terminalText(line));
  const { fleet, logger, modelConfig, docker, repo, issueText, feedback, sandbox, outDir } =
    context;
  const started = Date.now();
  const result = await runPipeline(
    {
      runId: `solve-${randomUUID().slice(0, 8)}`,
      instanceId: instanceIdFor(options.repo),
      repo,
      revision: options.revision,
      issueText,
      // The repository's instruction files are read as the App reads issue text.
      readUntrustedTexts: readIssueTextsOffThread,
      // A follow-up, as the App runs one on a review: the previous attempt is --revision.
      ...(feedback !== undefined
        ? {
            followUp: {
              diffBase: options.base ?? 'HEAD',
              task: (previousDiff: string) =>
                followUpTask({
                  issueText,
                  branch: options.revision,
                  previousDiff,
                  request: feedback,
                  threads: [],
                }),
            },
          }
        : {}),
      sandbox,
      overrides: {
        image: options.image,
        maxSteps: options.maxSteps,
        timeoutMinutes: options.timeoutMinutes,
        ...(options.attempts !== undefined ? { attempts: options.attempts } : {}),
      },
      outDir,
      signal: io.signal,
      onProgress: (event) => say(progressLine(event, started)),
    },
    { modelConfig, fleet, docker, env: io.env, logger },
  );

  await writeFile(path.join(outDir, 'patch.diff'), result.patch);
  await writeFile(
    path.join(outDir, 'summary.md'),
    renderSummary(result, { model: modelConfig.model, outDir }),
  );
  await writeRunPage(outDir, { result, repo: options.repo, issueText, model: modelConfig.model });
  const failure = failureOf(result);
  say(failure === undefined ? doneLine(result, outDir) : failedLine(result, failure, outDir));
  if (result.outcome === 'cancelled') return SOLVE_EXIT.cancelled;
  return failure === undefined ? SOLVE_EXIT.ok : SOLVE_EXIT.failed;
}

/** Why the run counts as failed, in one sentence, or undefined when it reached a stop reason. */
export function failureOf(result: RunResult): string | undefined {
  if (result.outcome !== 'completed') return result.error ?? result.outcome;
  if (result.exitReason === 'llm_query_error') {
    // The error may be a proxy's whole HTML error page; summary.md and the trajectory keep it.
    return `the model endpoint stopped answering: ${oneLine(result.error ?? 'no error text')}`;
  }
  if (result.exitReason === 'tool_error') {
    return `the sandbox failed during the run: ${result.error ?? 'no error text'}`;
  }
  if (result.violations.length > 0) {
    return `the patch breaks the repository policy (${result.violations.map((v) => `${v.rule} ${v.detail}`).join(', ')})`;
  }
  return undefined;
}

/** Where solve took the model URL from, and how to give another. */
function modelUrlSource(options: SolveOptions, env: NodeJS.ProcessEnv): string {
  const from =
    options.modelUrl !== undefined
      ? '--model-url'
      : env.FROGNANO_MODEL_URL?.trim()
        ? 'FROGNANO_MODEL_URL'
        : 'the default, as neither --model-url nor FROGNANO_MODEL_URL is set';
  return `the URL is ${from}; give the server's /v1 URL with --model-url <url> or FROGNANO_MODEL_URL (in the environment or .env)`;
}

/** --out must be a directory (or not exist yet): checked before anything runs. */
async function assertOutDirUsable(given: string, outDir: string): Promise<void> {
  const info = await stat(outDir).catch(() => undefined);
  if (info && !info.isDirectory()) {
    throw new UsageError(
      `--out ${given} is a file, not a directory: give a directory for the results`,
    );
  }
}

/** --out made; our own files from an earlier run go, anything else stays. */
async function prepareOutDir(given: string, outDir: string): Promise<void> {
  await assertOutDirUsable(given, outDir);
  try {
    await mkdir(outDir, { recursive: true });
    for (const name of OUTPUT_FILES) await rm(path.join(outDir, name), { force: true });
    // An earlier run with more attempts: its runner-ups' patches would pass for this run's.
    await clearAttemptDirs(outDir);
  } catch (error) {
    throw new UsageError(
      `cannot use --out ${given}: ${(error as NodeJS.ErrnoException).code ?? String(error)}; give a writable directory`,
    );
  }
}

/** Our files in `attempt-K/` folders, then each folder once nothing of the user's is left in it. */
async function clearAttemptDirs(outDir: string): Promise<void> {
  for (const entry of await readdir(outDir, { withFileTypes: true })) {
    // We only make real folders: a link of that name is the user's, and so is what it points at.
    if (!entry.isDirectory() || !ATTEMPT_DIR.test(entry.name)) continue;
    const dir = path.join(outDir, entry.name);
    for (const file of await readdir(dir, { withFileTypes: true })) {
      if (!file.isDirectory() && ATTEMPT_FILE.test(file.name)) {
        await rm(path.join(dir, file.name), { force: true });
      }
    }
    await rmdir(dir).catch((error: NodeJS.ErrnoException) => {
      if (error.code !== 'ENOTEMPTY' && error.code !== 'EEXIST') throw error;
    });
  }
}

async function readIssueText(options: { issueFile?: string; issue?: string }): Promise<string> {
  if (options.issue !== undefined) return options.issue.trim();
  const file = options.issueFile as string;
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch {
    throw new UsageError(`cannot read --issue-file ${file}: check the path`);
  }
  if (text.trim() === '')
    throw new UsageError(`--issue-file ${file} is empty: describe the problem to solve`);
  return text.trim();
}

async function readFeedback(file: string): Promise<string> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch {
    throw new UsageError(`cannot read --feedback-file ${file}: check the path`);
  }
  if (text.trim() === '')
    throw new UsageError(`--feedback-file ${file} is empty: write what to change`);
  return text.trim();
}

export async function resolveRepo(repo: string): Promise<string> {
  if (/^(https?|ssh|git|file):\/\//.test(repo) || /^[\w.-]+@[\w.-]+:/.test(repo)) return repo;
  const dir = path.resolve(repo);
  const info = await stat(dir).catch(() => undefined);
  if (!info)
    throw new UsageError(`--repo ${repo} does not exist: give a local repository or a clone URL`);
  if (!info.isDirectory()) {
    throw new UsageError(
      `--repo ${repo} is a file, not a directory: give a local repository or a clone URL`,
    );
  }
  // A repository has a .git directory; a worktree or submodule checkout a `.git` file.
  const dotGit = path.join(dir, '.git');
  const git = await stat(dotGit).catch(() => undefined);
  const isRepo = git?.isDirectory()
    ? await stat(path.join(dotGit, 'HEAD')).then(
        () => true,
        () => false,
      )
    : git?.isFile()
      ? (await readFile(dotGit, 'utf8').catch(() => '')).startsWith('gitdir:')
      : false;
  if (!isRepo) {
    throw new UsageError(
      `--repo ${repo} is not a git repository (no .git): give a clone URL or a local repository`,
    );
  }
  return dir;
}

function instanceIdFor(repo: string): string {
  return repo
    .replace(/\.git$/, '')
    .replace(/\/+$/, '')
    .split(/[/:]/)
    .slice(-2)
    .join('/');
}

export function progressLine(event: RunProgress, startedAt: number): string {
  const elapsed = `${((Date.now() - startedAt) / 1000).toFixed(1)}s`;
  if (event.kind === 'phase') return `[frognano] ${event.phase} (${elapsed})`;
  if (event.kind === 'attempt') {
    const what = event.state === 'verifying' ? 'verifying its patch' : 'verified';
    return `[frognano] attempt ${event.attempt} ${what} (${elapsed})`;
  }
  if (event.kind === 'model-wait') {
    const who = event.attempt === undefined ? '' : `attempt ${event.attempt} `;
    return event.waiting
      ? `[frognano] ${who}waiting for a model slot (${elapsed})`
      : `[frognano] ${who}got a model slot after ${(event.waitedMs / 1000).toFixed(1)}s waiting, not counted against its time limit (${elapsed})`;
  }
  const tools = event.tools.length > 0 ? event.tools.join(',') : 'answer';
  const who = event.attempt === undefined ? '' : `attempt ${event.attempt} `;
  return `[frognano] ${who}step ${event.step}/${event.maxSteps} ${tools} ${elapsed} ctx=${event.contextTokens}`;
}

function failedLine(result: RunResult, reason: string, outDir: string): string {
  const what = result.outcome === 'completed' ? (result.exitReason ?? 'failed') : result.outcome;
  return `[frognano] failed (${what}): ${reason}; details in ${path.join(outDir, 'summary.md')}`;
}

/** The test verdict, last on the last line: a patch whose tests fail is still a patch (exit 0). */
function testsAfterWords(result: RunResult): string {
  const words: Record<TestVerdict, string> = {
    pass: 'pass',
    fail: 'fail (the patch is written all the same: review it)',
    inconclusive: 'inconclusive (the tests could not run in this environment; see summary.md)',
    not_run: 'not run',
    untested: 'none (no test command configured or detected)',
  };
  return `tests after: ${words[testVerdict(result)]}`;
}

function doneLine(result: RunResult, outDir: string): string {
  return `${doneWords(result, outDir)}; ${testsAfterWords(result)}`;
}

function doneWords(result: RunResult, outDir: string): string {
  const files = result.filesChanged.length;
  const wrote = `wrote ${outDir}/patch.diff, summary.md, trajectory.json, trajectory.html`;
  const count = result.attempts?.length ?? 1;
  if (count === 1 || result.selectedAttempt === undefined)
    return `[frognano] done: ${result.exitReason}, ${result.budgets.steps} steps, ${files} file(s) changed; ${wrote}`;
  return `[frognano] done: attempt ${result.selectedAttempt} of ${count} selected, ${result.exitReason}, ${result.budgets.steps} steps, ${files} file(s) changed; ${wrote}; every attempt's files are listed in summary.md`;
}
