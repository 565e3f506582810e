// `frognano doctor`, and the checks `npm start` runs before it says "started": each check is one
// line, ✓ with what was found, or ✗ with what is wrong and how to fix it.
import { constants, existsSync, statSync } from 'node:fs';
import { access, open } from 'node:fs/promises';
import { dirname } from 'node:path';
import Database from 'better-sqlite3';
import { Probot, ProbotOctokit } from 'probot';
import pino from 'pino';
import { ConfigError, loadProcessConfig, type ProcessConfig } from '../config.js';
import { AppConfigError, loadAppConfig, type AppConfig } from '../github/app-config.js';
import { assertDockerReachable, connectDocker } from '../sandbox/docker-engine.js';
import { DEFAULT_SANDBOX_IMAGE } from '../sandbox/docker-sandbox.js';
import { imageExists, offlineBuildBlocker } from '../sandbox/ensure-sandbox-image.js';
import { GVISOR_RUNTIME, chooseSandboxRuntime } from '../sandbox/sandbox-runtime.js';
import type { AppMode } from '../app.js';
import { Redis } from 'ioredis';
import { loadQueueConfig } from '../queue/open-queue.js';
import { redactUrl } from '../queue/redis-queue.js';
import type { CheckResult } from './doctor-check-result.js';
import { modelEndpointChecks } from './doctor-endpoints.js';
import { dataPaths } from '../data-dir.js';

export type { CheckResult } from './doctor-check-result.js';

export interface Check {
  name: string;
  /** Modes that need this check (the webhook URL means nothing to a worker). */
  modes: readonly AppMode[];
  /** At `npm start` a failure only warns (a GPU restarting must not stop the webhook server). */
  warnOnlyAtStart?: boolean;
  run(context: CheckContext): Promise<CheckResult>;
  /** A check with one line per item (a model endpoint each): used instead of `run`. */
  runEach?(context: CheckContext): Promise<{ name: string; result: CheckResult }[]>;
}

export interface CheckContext {
  env: NodeJS.ProcessEnv;
  cwd: string;
  /** The App's configuration, once the credentials check parsed it. */
  app?: AppConfig;
  /** The model and sandbox configuration, once parsed. */
  process?: ProcessConfig;
  /** An App-authenticated (JWT) client, once GET /app answered. */
  appOctokit?: InstanceType<typeof ProbotOctokit>;
  /** False once the data directory check failed (the queue lives there). */
  dataDirWritable?: boolean;
  /** `frognano doctor --probe`: send each model endpoint one small Leaf request. */
  probe?: boolean;
}

export interface CheckOutcome {
  check: Check;
  result: CheckResult;
  /** The line printed for it. */
  line: string;
  /** True when this outcome stops `npm start` (and makes `frognano doctor` exit 1). */
  blocks: boolean;
}

const ALL: readonly AppMode[] = ['all', 'serve', 'worker'];
const RUNS: readonly AppMode[] = ['all', 'worker'];
const WEBHOOKS: readonly AppMode[] = ['all', 'serve'];

const fail = (
  problem: string,
  fix: string,
  severity: 'warn' | 'block' | 'skipped' = 'block',
): CheckResult => ({
  ok: false,
  severity,
  problem,
  fix,
});

const configuration: Check = {
  name: 'configuration',
  modes: ALL,
  async run(context) {
    try {
      context.process = loadProcessConfig(context.env);
      context.app ??= loadAppConfig(context.env, context.cwd);
    } catch (error) {
      if (error instanceof ConfigError || error instanceof AppConfigError) {
        return fail(
          error.problems.join('; '),
          'correct these variables in .env (see .env.example)',
        );
      }
      throw error;
    }
    return { ok: true, detail: 'every variable is valid' };
  },
};

const githubApp: Check = {
  name: 'GitHub App',
  modes: ALL,
  async run(context) {
    const app = context.app;
    if (!app) return fail('not checked', 'the configuration check failed', 'skipped');
    if (!app.credentials) {
      return fail(
        'APP_ID, PRIVATE_KEY (or PRIVATE_KEY_PATH) and WEBHOOK_SECRET are not set',
        // As in the Docker image: Probot serves no registration flow in production.
        context.env.NODE_ENV === 'production'
          ? 'NODE_ENV=production turns the registration flow off: register the App once elsewhere (`npm start` without NODE_ENV writes them to .env) or create it by hand, then pass APP_ID, PRIVATE_KEY and WEBHOOK_SECRET in (e.g. `docker run --env-file .env`)'
          : 'run `npm start` once to register the App (it writes them to .env), or set them from the App settings',
      );
    }
    // No retries: the doctor answers in seconds, and says what is wrong on the first failure.
    const Octokit = ProbotOctokit.defaults((options: Record<string, unknown>) => ({
      ...options,
      retry: { enabled: false },
      throttle: { ...(options.throttle as object), enabled: false },
      request: { ...(options.request as object), timeout: 10_000 },
    }));
    const probot = new Probot({
      appId: app.credentials.appId,
      privateKey: app.credentials.privateKey,
      baseUrl: app.apiBaseUrl,
      Octokit,
      log: pino({ level: 'silent' }),
    });
    try {
      const octokit = await probot.auth();
      const { data } = await octokit.rest.apps.getAuthenticated();
      context.appOctokit = octokit;
      return {
        ok: true,
        detail: `App ${data?.slug ?? '?'} (id ${app.credentials.appId}) answers GET /app at ${app.apiBaseUrl}`,
      };
    } catch (error) {
      const status = (error as { status?: number }).status;
      if (status === 401 || status === 403 || status === 404) {
        return fail(
          `${app.apiBaseUrl} refused the App's JWT (HTTP ${status} on GET /app)`,
          'check APP_ID and the private key against the App settings (generate a new key there if needed)',
        );
      }
      return fail(
        `${app.apiBaseUrl} did not answer GET /app (${errorText(error)})`,
        'check the network and GITHUB_API_URL / GHE_HOST',
      );
    }
  },
};

const webhookUrl: Check = {
  name: 'webhook URL',
  modes: WEBHOOKS,
  async run(context) {
    const app = context.app;
    if (app?.webhookProxyUrl) {
      return {
        ok: true,
        detail: `deliveries come through WEBHOOK_PROXY_URL ${app.webhookProxyUrl}`,
      };
    }
    if (!context.appOctokit) return fail('not checked', 'the GitHub App check failed', 'skipped');
    try {
      const { data } = await context.appOctokit.request('GET /app/hook/config');
      const url = (data as { url?: string }).url;
      if (url) return { ok: true, detail: `GitHub delivers webhooks to ${url}` };
      return fail(
        'the App has no webhook URL, so no event reaches this server',
        `set it in the App settings to https://<this host>${app?.webhookPath ?? '/api/github/webhooks'} (or set WEBHOOK_PROXY_URL for development)`,
      );
    } catch (error) {
      return fail(
        `GET /app/hook/config failed (${errorText(error)})`,
        'check the App settings: the webhook must be active with a URL',
      );
    }
  },
};

const modelEndpoint: Check = {
  name: 'model endpoint',
  modes: RUNS,
  warnOnlyAtStart: true,
  async run(context) {
    const [first] = await modelEndpoint.runEach!(context);
    return first!.result;
  },
  // One line per endpoint of FROGNANO_MODEL_URL (and, with --probe, its conformance).
  async runEach(context) {
    if (!context.process) {
      return [
        {
          name: 'model endpoint',
          result: fail('not checked', 'the configuration check failed', 'skipped'),
        },
      ];
    }
    return modelEndpointChecks(context.process, context.env, { probe: context.probe ?? false });
  },
};

const dockerEngine: Check = {
  name: 'Docker engine',
  modes: RUNS,
  async run(context) {
    if (context.process?.FROGNANO_SANDBOX === 'local') {
      return { ok: true, detail: 'not needed: FROGNANO_SANDBOX=local (development only)' };
    }
    try {
      await assertDockerReachable(connectDocker(context.env), { env: context.env });
      return { ok: true, detail: 'the engine answers' };
    } catch (error) {
      const [problem, fix] = splitFix(errorText(error));
      return fail(problem, fix ?? 'start Docker or set DOCKER_HOST');
    }
  },
};

const sandboxImage: Check = {
  name: 'sandbox image',
  modes: RUNS,
  async run(context) {
    if (context.process?.FROGNANO_SANDBOX === 'local') {
      return { ok: true, detail: 'not needed: FROGNANO_SANDBOX=local' };
    }
    const image = context.process?.FROGNANO_SANDBOX_IMAGE ?? DEFAULT_SANDBOX_IMAGE;
    const docker = connectDocker(context.env);
    let present: boolean;
    try {
      await assertDockerReachable(docker, { env: context.env, timeoutMs: 2000 });
      present = await imageExists(docker, image);
    } catch {
      return fail('not checked', 'the Docker engine check failed', 'skipped');
    }
    if (present) return { ok: true, detail: `${image} is present` };
    if (image !== DEFAULT_SANDBOX_IMAGE) {
      return fail(
        `${image} (FROGNANO_SANDBOX_IMAGE) is missing`,
        `pull or build ${image}, or unset FROGNANO_SANDBOX_IMAGE to use ${DEFAULT_SANDBOX_IMAGE}`,
      );
    }
    const blocker = offlineBuildBlocker(context.env);
    return fail(
      `${image} is missing`,
      blocker
        ? `\`npm start\` builds it from sandbox/Dockerfile when a registry answers (the offline build would need ${blocker}); or run \`sudo bash sandbox/build-offline.sh\``
        : '`npm start` builds it (sandbox/Dockerfile through the engine, else offline with sandbox/build-offline.sh)',
      'warn',
    );
  },
};

const sandboxRuntime: Check = {
  name: 'sandbox runtime',
  modes: RUNS,
  async run(context) {
    if (context.process?.FROGNANO_SANDBOX === 'local') {
      return { ok: true, detail: 'not needed: FROGNANO_SANDBOX=local' };
    }
    const image = context.process?.FROGNANO_SANDBOX_IMAGE ?? DEFAULT_SANDBOX_IMAGE;
    const docker = connectDocker(context.env);
    try {
      await assertDockerReachable(docker, { env: context.env, timeoutMs: 2000 });
      if (!(await imageExists(docker, image))) throw new Error('no image');
    } catch {
      return fail('not checked', 'the sandbox image check failed', 'skipped');
    }
    try {
      const wanted = context.process?.FROGNANO_SANDBOX_RUNTIME;
      const chosen = await chooseSandboxRuntime(docker, { wanted, image });
      const what = chosen.name === GVISOR_RUNTIME ? ' (gVisor)' : '';
      return { ok: true, detail: `${chosen.name}${what} for the agent: ${chosen.reason}` };
    } catch (error) {
      const [problem, fix] = errorText(error).split('; ');
      return fail(problem ?? '', fix ?? 'unset FROGNANO_SANDBOX_RUNTIME');
    }
  },
};

const dataDirectory: Check = {
  name: 'data directory',
  modes: ALL,
  async run(context) {
    const dir = context.app?.dataDir;
    if (!dir) return fail('not checked', 'the configuration check failed', 'skipped');
    // Read-only: the doctor says whether a start could write here, and creates nothing.
    const existing = nearestExisting(dir);
    try {
      if (!existing.isDirectory) throw Object.assign(new Error('ENOTDIR'), { code: 'ENOTDIR' });
      await access(existing.path, constants.W_OK);
      return {
        ok: true,
        detail:
          existing.path === dir
            ? `${dir} is writable`
            : `${dir} does not exist yet: the first start creates it (${existing.path} is writable)`,
      };
    } catch (error) {
      context.dataDirWritable = false;
      const code = (error as NodeJS.ErrnoException).code;
      const file = code === 'ENOTDIR' ? fileInPath(dir) : undefined;
      return fail(
        `${dir} is not writable (${code ?? errorText(error)})`,
        file
          ? `${file} is a file, not a directory: point FROGNANO_DATA_DIR at a directory`
          : 'give this user write access to it, or point FROGNANO_DATA_DIR elsewhere',
      );
    }
  },
};

/** `dir` itself when it exists, else its nearest ancestor that does. */
function nearestExisting(dir: string): { path: string; isDirectory: boolean } {
  for (let at = dir; ; at = dirname(at)) {
    try {
      return { path: at, isDirectory: statSync(at).isDirectory() };
    } catch {
      // Missing, or under a file (ENOTDIR): keep walking up.
    }
    if (at === dirname(at)) return { path: at, isDirectory: true };
  }
}

/**
 * Queue backends, by name: each brings its own reachability check. The SQLite file in the
 * data directory is the only backend today; another backend adds its entry here and the
 * configuration that selects it.
 */
export const queueBackendChecks: Record<string, (context: CheckContext) => Promise<CheckResult>> = {
  async sqlite(context) {
    const dir = context.app?.dataDir;
    if (!dir) return fail('not checked', 'the configuration check failed', 'skipped');
    if (context.dataDirWritable === false) {
      return fail('not checked', 'the data directory check failed', 'skipped');
    }
    const file = dataPaths.queueFile(dir);
    try {
      // The driver loads (a native module), without opening, let alone creating, the file.
      new Database(':memory:').close();
      if (!existsSync(file)) {
        return {
          ok: true,
          detail: `SQLite ${file} does not exist yet: the first start creates it`,
        };
      }
      await access(dir, constants.W_OK);
      // Its header, read as bytes: an SQLite connection would leave -wal/-shm files behind, and
      // must not take over a running App's queue.
      const header = await readHeader(file);
      if (!header.subarray(0, 16).equals(Buffer.from('SQLite format 3\0', 'latin1'))) {
        throw new Error('file is not a database');
      }
      return { ok: true, detail: `SQLite ${file} opens` };
    } catch (error) {
      return fail(
        `SQLite ${file} does not open (${errorText(error)})`,
        'check the file and its directory (permissions, disk space), or move it away to start an empty queue',
      );
    }
  },
  async bullmq(context) {
    let url: string | undefined;
    try {
      url = loadQueueConfig(context.env).FROGNANO_REDIS_URL;
    } catch (error) {
      return fail(errorText(error), 'fix FROGNANO_REDIS_URL (redis://host:6379)');
    }
    if (!url) return fail('not checked', 'FROGNANO_REDIS_URL is not set', 'skipped');
    const redis = new Redis(url, {
      lazyConnect: true,
      maxRetriesPerRequest: 1,
      connectTimeout: 5000,
      retryStrategy: () => null,
    });
    redis.on('error', () => undefined);
    try {
      await redis.connect();
      const server = parseInfo(await redis.info('server'));
      const persistence = parseInfo(await redis.info('persistence'));
      const version = server.redis_version ?? '?';
      if (Number(version.split('.')[0]) < 6) {
        return fail(
          `Redis ${version} at ${redactUrl(url)} is too old for BullMQ`,
          'run Redis 6.2 or newer',
        );
      }
      if (persistence.aof_enabled !== '1') {
        return fail(
          `Redis ${version} at ${redactUrl(url)} answers, but append-only persistence is off: a Redis restart can lose accepted runs`,
          'start Redis with --appendonly yes (or CONFIG SET appendonly yes, then CONFIG REWRITE)',
          'warn',
        );
      }
      return { ok: true, detail: `Redis ${version} at ${redactUrl(url)} answers, AOF on` };
    } catch (error) {
      return fail(
        `Redis at ${redactUrl(url)} does not answer (${errorText(error)})`,
        'start Redis, or fix FROGNANO_REDIS_URL',
      );
    } finally {
      redis.disconnect();
    }
  },
};

async function readHeader(file: string): Promise<Buffer> {
  const handle = await open(file, 'r');
  try {
    const { buffer, bytesRead } = await handle.read(Buffer.alloc(100), 0, 100, 0);
    return buffer.subarray(0, bytesRead);
  } finally {
    await handle.close();
  }
}

function parseInfo(text: string): Record<string, string> {
  return Object.fromEntries(
    text
      .split(/\r?\n/)
      .filter((line) => line.includes(':') && !line.startsWith('#'))
      .map((line) => [line.slice(0, line.indexOf(':')), line.slice(line.indexOf(':') + 1).trim()]),
  );
}

const queueBackend: Check = {
  name: 'queue',
  modes: ALL,
  run: (context) => {
    // FROGNANO_REDIS_URL selects BullMQ on Redis (a bad value is reported by the Redis check).
    const backend = context.env.FROGNANO_REDIS_URL?.trim() ? 'bullmq' : 'sqlite';
    return (queueBackendChecks[backend] as (c: CheckContext) => Promise<CheckResult>)(context);
  },
};

/** Every check, in the order they run (later checks use what earlier ones found). */
export const CHECKS: readonly Check[] = [
  configuration,
  githubApp,
  webhookUrl,
  modelEndpoint,
  dockerEngine,
  sandboxImage,
  sandboxRuntime,
  dataDirectory,
  queueBackend,
];

/** Runs the checks that matter for `mode`; `atStart` makes model failures warnings. */
export async function runChecks(options: {
  env: NodeJS.ProcessEnv;
  cwd: string;
  mode?: AppMode;
  atStart?: boolean;
  checks?: readonly Check[];
  probe?: boolean;
  /** The App's configuration, when the caller read it already (`npm start` reads it once). */
  app?: AppConfig;
}): Promise<CheckOutcome[]> {
  const mode = options.mode ?? 'all';
  const context: CheckContext = { env: options.env, cwd: options.cwd };
  if (options.app) context.app = options.app;
  if (options.probe) context.probe = true;
  const outcomes: CheckOutcome[] = [];
  for (const check of options.checks ?? CHECKS) {
    if (!check.modes.includes(mode)) continue;
    let results: { name: string; result: CheckResult }[];
    try {
      results = check.runEach
        ? await check.runEach(context)
        : [{ name: check.name, result: await check.run(context) }];
    } catch (error) {
      const result = fail(`the check itself failed (${errorText(error)})`, 'report this as a bug');
      results = [{ name: check.name, result }];
    }
    for (const { name, result } of results) {
      const named = name === check.name ? check : { ...check, name };
      const blocks =
        !result.ok && result.severity === 'block' && !(options.atStart && check.warnOnlyAtStart);
      outcomes.push({ check: named, result, line: formatOutcome(named, result), blocks });
    }
  }
  return outcomes;
}

export function formatOutcome(check: Check, result: CheckResult): string {
  if (result.ok) return `✓ ${check.name}: ${result.detail}`;
  if (result.severity === 'skipped') return `- ${check.name}: not checked (${result.fix})`;
  return `${result.severity === 'warn' ? '!' : '✗'} ${check.name}: ${result.problem} → fix: ${result.fix}`;
}

export interface DoctorIo {
  stdout: (line: string) => void;
  env: NodeJS.ProcessEnv;
  cwd?: string;
  /** `--probe`: one small Leaf request per model endpoint (tool-call and reasoning parsers). */
  probe?: boolean;
}

/** `frognano doctor`: prints one line per check; exit code 1 when something blocks runs. */
export async function doctorCommand(io: DoctorIo): Promise<number> {
  const cwd = io.cwd ?? process.cwd();
  const outcomes = await runChecks({ env: io.env, cwd, ...(io.probe ? { probe: true } : {}) });
  for (const outcome of outcomes) io.stdout(outcome.line);
  const blocking = outcomes.filter((outcome) => outcome.blocks).length;
  io.stdout(
    blocking === 0
      ? 'ready: nothing blocks runs'
      : `not ready: ${blocking} problem${blocking === 1 ? '' : 's'} block${blocking === 1 ? 's' : ''} runs`,
  );
  return blocking === 0 ? 0 : 1;
}

/** The nearest ancestor of `dir` (or itself) that exists and is not a directory. */
function fileInPath(dir: string): string | undefined {
  for (let at = dir; at !== dirname(at); at = dirname(at)) {
    try {
      if (!statSync(at).isDirectory()) return at;
    } catch {
      // Missing, or under a file: keep walking up.
    }
  }
  return undefined;
}

/** Messages from the solve-side checks read "problem (reason): fix" or "...; fix": split them. */
function splitFix(message: string): [string, string | undefined] {
  const at = message.search(/\)[:;] /);
  if (at < 0) return [message, undefined];
  return [message.slice(0, at + 1), message.slice(at + 3)];
}

function errorText(error: unknown): string {
  if (error instanceof Error) {
    const cause = error.cause as NodeJS.ErrnoException | undefined;
    const code = cause?.code ?? (error as NodeJS.ErrnoException).code;
    if (typeof code === 'string' && /^E[A-Z]+$/.test(code)) return code;
    return error.message.split('\n')[0] ?? error.name;
  }
  return String(error);
}
