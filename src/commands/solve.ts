// `frognano solve`: the whole run pipeline on one repository, no GitHub involved.
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { loadProcessConfig } from '../config.js';
import { createLogger } from '../log.js';
import { checkModelEndpoint } from '../leaf/openai-model.js';
import { runPipeline } from '../runner/run.js';
import type { RunProgress, RunResult } from '../runner/run-types.js';
import { assertDockerReachable, connectDocker } from '../sandbox/docker-engine.js';
import { writeRunPage } from '../web/index.js';
import { modelConfigFrom } from './model-config-from.js';
import { renderSummary } from './render-summary.js';
import { parseSolveOptions, UsageError } from './solve-options.js';

export interface SolveIo {
  stderr: (line: string) => void;
  env: NodeJS.ProcessEnv;
  signal?: AbortSignal;
}

/** Returns the process exit code; throws UsageError for bad input. */
export async function solve(rawOptions: Record<string, unknown>, io: SolveIo): Promise<number> {
  const options = parseSolveOptions(rawOptions);
  const config = loadProcessConfig(io.env);
  const sandbox = options.sandbox ?? config.FROGNANO_SANDBOX;
  const issueText = await readIssueText(options);
  const repo = await resolveRepo(options.repo);
  const modelConfig = modelConfigFrom(config, { baseUrl: options.modelUrl, model: options.model });

  if (sandbox === 'local') {
    io.stderr(
      "warning: --sandbox local runs the agent's commands on this machine with your user's rights, only isolated by a temporary copy; use it for development only",
    );
  }
  // Fail fast, in one line each, before any clone or container.
  const docker = sandbox === 'docker' ? connectDocker(io.env) : undefined;
  if (docker) await assertDockerReachable(docker, { env: io.env });
  await checkModelEndpoint(modelConfig);

  const outDir = path.resolve(options.out);
  await mkdir(outDir, { recursive: true });
  const started = Date.now();
  const result = await runPipeline(
    {
      runId: `solve-${randomUUID().slice(0, 8)}`,
      instanceId: instanceIdFor(options.repo),
      repo,
      revision: options.revision,
      issueText,
      sandbox,
      overrides: {
        image: options.image,
        maxSteps: options.maxSteps,
        timeoutMinutes: options.timeoutMinutes,
      },
      outDir,
      signal: io.signal,
      onProgress: (event) => io.stderr(progressLine(event, started)),
    },
    // The progress lines are the interface here; logs only speak up for problems.
    {
      modelConfig,
      docker,
      env: io.env,
      logger: createLogger({ level: io.env.LOG_LEVEL ?? 'warn' }),
    },
  );

  await writeFile(path.join(outDir, 'patch.diff'), result.patch);
  await writeFile(path.join(outDir, 'summary.md'), renderSummary(result));
  await writeRunPage(outDir, { result, repo: options.repo, issueText, model: modelConfig.model });
  io.stderr(finalLine(result, outDir));
  return result.outcome === 'completed' ? 0 : 1;
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

async function resolveRepo(repo: string): Promise<string> {
  if (/^(https?|ssh|git|file):\/\//.test(repo) || /^[\w.-]+@[\w.-]+:/.test(repo)) return repo;
  const dir = path.resolve(repo);
  try {
    await readFile(path.join(dir, '.git', 'HEAD'));
  } catch {
    throw new UsageError(
      `--repo ${repo} is not a git repository (no .git/HEAD): give a clone URL or a local repository`,
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
  const tools = event.tools.length > 0 ? event.tools.join(',') : 'answer';
  return `[frognano] step ${event.step}/${event.maxSteps} ${tools} ${elapsed} ctx=${event.contextTokens}`;
}

function finalLine(result: RunResult, outDir: string): string {
  if (result.outcome !== 'completed') {
    return `[frognano] ${result.outcome}: ${result.error ?? 'see summary.md'} (details in ${outDir})`;
  }
  const files = result.filesChanged.length;
  return `[frognano] done: ${result.exitReason}, ${result.budgets.steps} steps, ${files} file(s) changed; wrote ${outDir}/patch.diff, summary.md, trajectory.json`;
}
