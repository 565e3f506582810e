// `frognano runs` and `frognano runs show <id>`: the queue and recent runs of this data
// directory, for a person (a table) or a script (--json).
import { existsSync } from 'node:fs';
import path from 'node:path';
import { loadAppConfig } from '../github/app-config.js';
import type { IssueJob } from '../github/job.js';
import { dataPaths, runOutDir } from '../data-dir.js';
import { openQueue, loadQueueConfig } from '../queue/open-queue.js';
import { runArtifacts } from '../queue/read-run-artifact.js';
import type { Queue, RunState } from '../queue/types.js';
import type { EnvironmentFacts, RunResult, TestResult } from '../runner/run-types.js';
import { testPassed } from '../runner/test-report.js';
import { queueRunListing, readRunRecord, runPageUrl, type RunSummary } from '../web/index.js';
import { UsageError } from './solve-options.js';

export interface RunsIo {
  stdout: (line: string) => void;
  env: NodeJS.ProcessEnv;
  cwd?: string;
  now?: () => number;
}

const STATES: RunState[] = ['queued', 'running', 'done', 'failed', 'cancelled'];

interface ListOptions {
  json?: boolean;
  state?: string;
  repo?: string;
  limit?: string;
}

async function openListing(io: RunsIo) {
  const cwd = io.cwd ?? process.cwd();
  const config = loadAppConfig(io.env, cwd);
  const queue = await openRunsQueue(io.env, config.dataDir);
  const listing = queueRunListing(queue, {
    gitBaseUrl: config.gitBaseUrl,
    // Runs made on other hosts: their files as their workers shared them through the queue.
    files: (id) => runArtifacts(id, { dataDir: config.dataDir, queue }),
  });
  return { config, queue, listing };
}

/** The queue the App uses: Redis with FROGNANO_REDIS_URL (no worker of its own), else SQLite. */
async function openRunsQueue(env: NodeJS.ProcessEnv, dataDir: string): Promise<Queue<IssueJob>> {
  const file = dataPaths.queueFile(dataDir);
  if (!loadQueueConfig(env).FROGNANO_REDIS_URL && !existsSync(file)) {
    throw new UsageError(
      `no run queue at ${file}: the App has not run with this FROGNANO_DATA_DIR (set it to the App's data directory)`,
    );
  }
  try {
    // A listing writes nothing: the App migrates and prunes its own queue.
    return await openQueue<IssueJob>({
      env,
      dataDir,
      concurrency: 1,
      worker: false,
      readOnly: true,
    });
  } catch (error) {
    if (!(error instanceof Error) || error.name !== 'SqliteError') throw error;
    throw new UsageError(
      `cannot read the run queue ${file} (${error.message}): set FROGNANO_DATA_DIR to the App's data directory`,
    );
  }
}

/** The queue (running, queued) and the most recent runs, newest first. */
export async function runsCommand(options: ListOptions, io: RunsIo): Promise<number> {
  if (options.state !== undefined && !STATES.includes(options.state as RunState)) {
    throw new UsageError(`--state must be one of ${STATES.join(', ')} (got ${options.state})`);
  }
  const limit = options.limit === undefined ? 20 : Number(options.limit);
  if (!Number.isInteger(limit) || limit < 1) {
    throw new UsageError(`--limit must be a positive integer (got ${options.limit})`);
  }
  const { queue, listing } = await openListing(io);
  try {
    const runs = await listing.listRuns({
      state: options.state as RunState | undefined,
      repo: options.repo,
      limit,
    });
    if (options.json) {
      io.stdout(JSON.stringify(runs, null, 2));
      return 0;
    }
    const running = (await queue.list('running')).length;
    const queued = (await queue.list('queued')).length;
    io.stdout(`queue: ${running} running, ${queued} queued`);
    if (runs.length === 0) {
      io.stdout('no runs');
      return 0;
    }
    const now = io.now?.() ?? Date.now();
    const rows = runs.map((r) => [
      r.state,
      `${clean(r.repo)}#${r.issueNumber}`,
      age(now - r.createdAt),
      r.step === undefined ? '-' : `${r.step}${r.maxSteps ? `/${r.maxSteps}` : ''}`,
      clean(r.outcome ?? '-'),
      r.id,
    ]);
    for (const line of table(['STATE', 'ISSUE', 'AGE', 'STEP', 'OUTCOME', 'ID'], rows)) {
      io.stdout(line);
    }
    return 0;
  } finally {
    await queue.close();
  }
}

/** One run's summary; `id` may be a unique prefix of the run id. */
export async function runsShowCommand(
  id: string,
  options: { json?: boolean },
  io: RunsIo,
): Promise<number> {
  const { config, queue, listing } = await openListing(io);
  try {
    const matches = (await listing.listRuns({ limit: Number.MAX_SAFE_INTEGER })).filter((r) =>
      r.id.startsWith(id),
    );
    if (matches.length !== 1 || id.length < 4) {
      throw new UsageError(
        matches.length > 1 && id.length >= 4
          ? `run id ${id} is ambiguous (${matches.length} runs): give more characters`
          : `no run ${id}: see \`frognano runs\` for the ids`,
      );
    }
    const run = matches[0] as RunSummary;
    const record = await readRunRecord(listing.files(run.id));
    const pageUrl = config.publicUrl ? runPageUrl(config.publicUrl, run.id) : undefined;
    if (options.json) {
      io.stdout(JSON.stringify({ ...run, runPageUrl: pageUrl, result: record?.result }, null, 2));
      return 0;
    }
    const when = (ms: number | undefined) => (ms ? new Date(ms).toISOString() : '-');
    const lines: [string, string][] = [
      ['run', run.id],
      ['state', `${run.state}${run.outcome ? ` (${clean(run.outcome)})` : ''}`],
      ['issue', `${clean(run.repo)}#${run.issueNumber} ${clean(run.issueTitle)}`],
      ['issue url', run.issueUrl],
      ['trigger', clean(run.trigger)],
      ['created', when(run.createdAt)],
      ['started', when(run.startedAt)],
      ['finished', when(run.finishedAt)],
      [
        'steps',
        run.step === undefined ? '-' : `${run.step}${run.maxSteps ? `/${run.maxSteps}` : ''}`,
      ],
    ];
    const result = record?.result;
    if (result) {
      lines.push(['model', clean(record.model ?? '-')]);
      lines.push([
        'exit reason',
        `${result.exitReason ?? '-'}${result.partial ? ' (partial work)' : ''}`,
      ]);
      if (result.error) lines.push(['error', clean(result.error)]);
      lines.push([
        'tests',
        `before ${testWords(result.verifyBefore)} → after ${testWords(result.verifyAfter)}${result.environment?.runnable === false ? ' (inconclusive)' : ''}`,
      ]);
      lines.push(...environmentRows(result));
      lines.push(['files changed', result.filesChanged.map(clean).join(', ') || 'none']);
      lines.push([
        'tokens',
        `context ${result.budgets.contextTokens}, prompt ${result.budgets.promptTokens}, completion ${result.budgets.completionTokens}`,
      ]);
      lines.push(['wall time', `${(result.budgets.wallMs / 1000).toFixed(1)}s`]);
    }
    if (run.prUrl) lines.push(['pull request', run.prUrl]);
    if (pageUrl) lines.push(['run page', pageUrl]);
    lines.push(['trajectory', path.join(runOutDir(config.dataDir, run.id), 'trajectory.json')]);
    const width = Math.max(...lines.map(([k]) => k.length));
    for (const [k, v] of lines) io.stdout(`${k.padEnd(width)}  ${v}`);
    return 0;
  } finally {
    await queue.close();
  }
}

/**
 * The Environment section's facts (issue 25), one row each: how the environment was made, what
 * did not work, setup's network, and why the tests could not run there.
 */
function environmentRows(result: RunResult): [string, string][] {
  const env = result.environment;
  if (!env) return [];
  const rows: [string, string][] = [['environment', clean(environmentWords(env))]];
  for (const f of env.failed) rows.push(['did not work', clean(`${f.candidate}: ${f.reason}`)]);
  for (const note of env.notes) rows.push(['note', clean(note)]);
  const egress = result.egress;
  if (egress) {
    const allowed = egress.allowedHosts.length
      ? `; allowed: ${egress.allowedHosts.join(', ')}`
      : '';
    const blocked = egress.blocked.length
      ? `; blocked: ${egress.blocked.map((b) => `${b.host}:${b.port} ×${b.count} (${b.reason})`).join(', ')}`
      : '';
    const capped = egress.cappedFrom ? ` (asked ${egress.cappedFrom}, capped by the operator)` : '';
    rows.push(['setup network', clean(`${egress.mode}${capped}${allowed}${blocked}`)]);
  }
  if (env.problem)
    rows.push(['problem', clean(`the tests could not run in this environment: ${env.problem}`)]);
  return rows;
}

/** Where the environment came from, the snapshot, and what the test command collected in it. */
function environmentWords(env: EnvironmentFacts): string {
  const took = env.seconds !== undefined ? ` (${env.seconds}s)` : '';
  const ecosystems = env.ecosystems.length ? ` (${env.ecosystems.join(', ')})` : '';
  const made =
    env.snapshot === 'hit'
      ? 'reused (snapshot)'
      : env.source === 'none'
        ? 'none'
        : env.source === 'config'
          ? `.github/frognano.yml: ${env.commands.map((c) => c.command).join('; ')}${took}`
          : `automatic${ecosystems}: ${
              env.commands
                .filter((c) => !c.from.startsWith('automatic setup'))
                .map((c) => `${c.command} (from ${c.from})`)
                .join('; ') || 'nothing installed'
            }${took}`;
  const snapshot = env.snapshot === 'hit' ? '' : `, snapshot ${env.snapshot}`;
  const collected =
    env.testsCollected !== undefined ? `; ${env.testsCollected} tests collected` : '';
  const errors = env.importErrors.length ? `; import errors: ${env.importErrors.join('; ')}` : '';
  return `${made}${snapshot}${collected}${errors}`;
}

function testWords(test: TestResult | undefined): string {
  if (!test) return 'not run';
  if (test.timedOut) return 'timed out';
  return `${testPassed(test) ? 'pass' : 'fail'} (exit ${test.exitCode})`;
}

/** Issue titles and error texts come from strangers: no control characters reach the terminal. */
function clean(value: string): string {
  // eslint-disable-next-line no-control-regex
  return value.replace(/[\u0000-\u001f\u007f-\u009f\u200b-\u200f\u202a-\u202e\u2066-\u2069]/g, ' ');
}

function age(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m`;
  if (s < 86400) return `${Math.floor(s / 3600)}h`;
  return `${Math.floor(s / 86400)}d`;
}

function table(head: string[], rows: string[][]): string[] {
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  return [head, ...rows].map((r) =>
    r.map((cell, i) => (i === r.length - 1 ? cell : cell.padEnd(widths[i] as number))).join('  '),
  );
}
