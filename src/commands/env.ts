// `frognano env [DIR]` (issue 25): the environment a run would make, made and proven, with no
// model: the plan and where each command came from, what the test command collected in it, what
// setup's network refused, and a `.github/frognano.yml` that pins what worked.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { loadProcessConfig } from '../config.js';
import { configSnippet } from '../github/status/index.js';
import { createLogger } from '../log.js';
import { prepareEnvironment } from '../runner/run.js';
import type { RunResult, SandboxKind } from '../runner/run-types.js';
import { assertDockerReachable, connectDocker } from '../sandbox/docker-engine.js';
import { ensureSandboxImage } from '../sandbox/ensure-sandbox-image.js';
import { resolveRepo } from './solve.js';
import { UsageError } from './solve-options.js';
import { terminalText } from './terminal-text.js';

/** Exit codes of `frognano env`. */
export const ENV_EXIT = { runnable: 0, notRunnable: 1, usage: 2 } as const;

export interface EnvOptions {
  dir?: string;
  repo?: string;
  json?: boolean;
  sandbox?: string;
  image?: string;
}

export interface EnvIo {
  stdout: (line: string) => void;
  stderr: (line: string) => void;
  env: NodeJS.ProcessEnv;
  cwd: string;
  signal?: AbortSignal;
}

const OWNER_NAME = /^[A-Za-z\d](?:[A-Za-z\d]|-(?=[A-Za-z\d])){0,38}\/[\w.-]+$/;

/** Returns the exit code; throws UsageError (exit 2) for bad input. */
export async function envCommand(options: EnvOptions, io: EnvIo): Promise<number> {
  const repo = await repoOf(options, io.cwd);
  const config = loadProcessConfig(io.env);
  const sandbox = sandboxOf(options.sandbox ?? config.FROGNANO_SANDBOX);
  const docker = sandbox === 'docker' ? connectDocker(io.env) : undefined;
  if (docker) await assertDockerReachable(docker, { env: io.env });
  if (docker && options.image === undefined)
    await ensureSandboxImage({
      docker,
      image: config.FROGNANO_SANDBOX_IMAGE,
      env: io.env,
      progress: io.stderr,
    });
  const outDir = await mkdtemp(path.join(tmpdir(), 'frognano-env-'));
  try {
    const result = await prepareEnvironment(
      {
        runId: `env-${randomUUID().slice(0, 8)}`,
        instanceId: `${repo}#env`,
        repo,
        issueText: '',
        sandbox,
        outDir,
        ...(options.image ? { overrides: { image: options.image } } : {}),
        ...(io.signal ? { signal: io.signal } : {}),
      },
      {
        dataDir: config.FROGNANO_DATA_DIR,
        logger: createLogger({ level: io.env.LOG_LEVEL ?? 'warn' }),
        ...(docker ? { docker } : {}),
      },
    );
    const ok = result.outcome === 'completed' && result.environment?.runnable !== false;
    const lines = options.json
      ? [JSON.stringify(envJson(result, ok))]
      : envText(result, ok).flatMap((line) => line.split('\n').map(terminalText));
    for (const line of lines) io.stdout(line);
    return ok ? ENV_EXIT.runnable : ENV_EXIT.notRunnable;
  } finally {
    await rm(outDir, { recursive: true, force: true });
  }
}

async function repoOf(options: EnvOptions, cwd: string): Promise<string> {
  if (options.repo !== undefined) {
    if (options.dir !== undefined)
      throw new UsageError('give a directory or --repo OWNER/NAME, not both');
    if (!OWNER_NAME.test(options.repo))
      throw new UsageError(`--repo ${options.repo} is not OWNER/NAME: give it like octo/hello`);
    return `https://github.com/${options.repo}.git`;
  }
  return resolveRepo(path.resolve(cwd, options.dir ?? '.'));
}

function sandboxOf(kind: string): SandboxKind {
  if (kind === 'docker' || kind === 'local') return kind;
  throw new UsageError(`--sandbox ${kind} is not a sandbox: give docker or local`);
}

/** The one JSON object of `--json`. */
export function envJson(result: RunResult, ok: boolean): Record<string, unknown> {
  const env = result.environment;
  return {
    source: env?.source ?? 'none',
    ecosystems: env?.ecosystems ?? [],
    commands: env?.commands ?? [],
    network: result.egress?.mode ?? env?.network ?? 'none',
    allowed_hosts: result.egress?.allowedHosts ?? [],
    blocked: (result.egress?.blocked ?? []).map(({ host, port, count }) => ({ host, port, count })),
    tests_collected: env?.testsCollected ?? null,
    import_errors: env?.importErrors ?? [],
    ok,
    seconds: env?.seconds ?? null,
    snapshot: env?.snapshot ?? 'none',
    ...(env?.problem ? { problem: env.problem } : {}),
    ...(result.error ? { error: result.error } : {}),
  };
}

function envText(result: RunResult, ok: boolean): string[] {
  const env = result.environment;
  const lines: string[] = [];
  if (result.error) lines.push(`error: ${result.error}`);
  if (!env) return lines;
  lines.push(`setup: ${env.source}${env.snapshot === 'hit' ? ' (reused from a snapshot)' : ''}`);
  for (const candidate of env.plan) {
    lines.push(`  candidate ${candidate.candidate}:`);
    for (const c of candidate.commands) lines.push(`    ${c.command}    # ${c.from}`);
  }
  for (const note of env.notes) lines.push(`note: ${note}`);
  for (const f of env.failed) lines.push(`did not work: ${f.candidate}: ${f.reason}`);
  if (env.commands.length > 0) {
    lines.push('ran:');
    for (const c of env.commands) lines.push(`  ${c.command}    # ${c.from}`);
  }
  if (env.seconds !== undefined) lines.push(`took: ${env.seconds}s`);
  if (result.egress) {
    lines.push(
      `network: ${result.egress.mode} (allowed: ${result.egress.allowedHosts.join(', ')})`,
    );
    for (const b of result.egress.blocked) lines.push(`blocked: ${b.host}:${b.port} ×${b.count}`);
  }
  if (env.testsCollected !== undefined) lines.push(`tests collected: ${env.testsCollected}`);
  for (const e of env.importErrors) lines.push(`import error: ${e}`);
  lines.push(
    ok
      ? 'the tests can run in this environment'
      : `the tests cannot run here: ${env.problem ?? result.error ?? 'see above'}`,
  );
  lines.push('', configSnippet(result));
  return lines;
}
