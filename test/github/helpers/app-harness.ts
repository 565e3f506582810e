// The whole App on real parts for end-to-end tests: startApp on a real port, the real run
// pipeline (local or Docker sandbox) against the scripted model server, real git remotes (under
// file://, or behind a smart-HTTP server that wants a minted installation token), and GitHub's
// REST API mocked strictly with nock or a loopback fake, behind Probot's real App authentication:
// every mocked route checks the credential GitHub would want (an RS256 App JWT signed with the
// App's key, or an installation token this mock minted).
import { execFileSync } from 'node:child_process';
import { createHmac, createPublicKey, createVerify, randomUUID } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import nock from 'nock';
import pino from 'pino';
import {
  startApp,
  type AppParts,
  type RunningApp,
  type StartAppOptions,
} from '../../../src/app.js';
import { reap } from '../../../src/sandbox/reap.js';
import { SqliteStore } from '../../../src/queue/sqlite-store.js';
import { LABEL_RUN } from '../../../src/sandbox/docker-sandbox.js';
import type Docker from 'dockerode';
import { connectDocker } from '../../../src/sandbox/docker-engine.js';
import { runPipeline } from '../../../src/runner/run.js';
import { createPythonRepo } from '../../support/python-repo.js';
import {
  startScriptedModelServer,
  type ScriptedModelServer,
  type ScriptStep,
} from '../../support/scripted-model-server.js';
import { API, AppTestOctokit, PacedTestOctokit, silentLog, testPrivateKey } from './github.js';
import { startGitHttpServer, type GitHttpServer } from './git-http-server.js';

export const SECRET = 'webhook-secret-for-tests';
export const OWNER = 'Codertocat';
export const REPO = 'Hello-World';
export const REPO_PATH = `/repos/${OWNER}/${REPO}`;

// The local sandbox runs `bash -lc`, whose profile may reset PATH: name the interpreter with pytest.
export const PYTHON = execFileSync('python3', ['-c', 'import sys, pytest; print(sys.executable)'], {
  encoding: 'utf8',
}).trim();

export interface HarnessOptions {
  script?: ScriptStep[];
  /** Answers the model requests once the script is used up (e.g. per attempt). */
  onExhausted?: ScriptStep;
  /** Extra lines of the repository's `.github/frognano.yml`. */
  config?: string;
  /** More files of the repository (e.g. `AGENTS.md`). */
  files?: Record<string, string>;
  sandbox?: 'local' | 'docker';
  concurrency?: number;
  throttleMs?: number;
  /** GitHub writes paced as in production (PacedTestOctokit) instead of not at all. */
  pacedWrites?: boolean;
  /** Reuse a data directory (restart tests). */
  dataDir?: string;
  /** Reuse a model server (restart tests). */
  model?: ScriptedModelServer;
  /** Use a model server running elsewhere (the restart test's child process). */
  modelUrl?: string;
  /** Reuse the repositories of an earlier harness. */
  root?: string;
  /** python for the repo's test command inside the sandbox (Docker: python3). */
  python?: string;
  env?: NodeJS.ProcessEnv;
  /** `frognano start` (default), `serve` or `worker`. */
  mode?: 'all' | 'serve' | 'worker';
  /** The App's logger (default silent). */
  log?: pino.Logger;
  /**
   * Serve the repositories over smart HTTP, accepting only installation tokens this mock minted
   * (as GitHub does), instead of file://.
   */
  gitHttp?: GitHubMock;
  /** Set FROGNANO_BOT_NAME/EMAIL (default: unset, so the App asks GitHub who it is). */
  botEnv?: boolean;
  /** See StartAppOptions.webhookBodyTimeoutMs. */
  webhookBodyTimeoutMs?: number;
}

export interface Harness {
  app: RunningApp;
  url: string;
  model: ScriptedModelServer | undefined;
  root: string;
  dataDir: string;
  bare: string;
  base: string;
  /** The smart-HTTP git server (with `gitHttp`). */
  git?: GitHttpServer;
  deliver(event: string, payload: unknown, id?: string, signature?: string): Promise<number>;
  /** Stops the app (and the model server unless it was passed in). */
  stop(options?: { keepFiles?: boolean }): Promise<void>;
}

export function sign(body: string, secret = SECRET): string {
  return `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;
}

export async function startHarness(options: HarnessOptions = {}): Promise<Harness> {
  const root = options.root ?? mkdtempSync(join(tmpdir(), 'frognano-app-'));
  const bare = join(root, 'git', OWNER, `${REPO}.git`);
  const python = options.python ?? PYTHON;
  if (!options.root) {
    const repo = createPythonRepo(join(root, 'src'), {
      ...options.files,
      '.github/frognano.yml': `max_steps: 30\ntest: ${python} -m pytest\n${options.config ?? ''}`,
    });
    mkdirSync(join(root, 'git', OWNER), { recursive: true });
    execFileSync('git', ['clone', '-q', '--bare', repo.dir, bare]);
  }
  const base = execFileSync('git', ['rev-parse', 'HEAD'], { cwd: bare, encoding: 'utf8' }).trim();
  const dataDir = options.dataDir ?? join(root, 'data');
  const localTemp = join(root, 'sandboxes');
  mkdirSync(localTemp, { recursive: true });
  const model =
    options.model ??
    (options.modelUrl
      ? undefined
      : await startScriptedModelServer({
          script: options.script ?? [],
          ...(options.onExhausted ? { onExhausted: options.onExhausted } : {}),
        }));
  const modelUrl = options.modelUrl ?? (model as ScriptedModelServer).baseUrl;
  const sandbox = options.sandbox ?? 'local';
  const log =
    options.log ??
    (process.env.FROGNANO_TEST_LOG ? pino({ level: 'debug' }, pino.destination(2)) : silentLog);
  const tokens = options.gitHttp?.tokens;
  const gitServer = tokens
    ? await startGitHttpServer(join(root, 'git'), (token) => tokens.has(token))
    : undefined;
  const app = await startAppOrCleanUp(
    {
      mode: options.mode ?? 'all',
      log,
      env: {
        PATH: process.env.PATH,
        HOME: process.env.HOME,
        APP_ID: '1',
        PRIVATE_KEY: testPrivateKey(),
        WEBHOOK_SECRET: SECRET,
        PORT: '0',
        HOST: '127.0.0.1',
        FROGNANO_DATA_DIR: dataDir,
        FROGNANO_GIT_URL: gitServer?.url ?? `file://${join(root, 'git')}`,
        FROGNANO_SANDBOX: sandbox,
        FROGNANO_CONCURRENCY: String(options.concurrency ?? 1),
        FROGNANO_STATUS_THROTTLE_MS: String(options.throttleMs ?? 0),
        ...(options.botEnv
          ? {
              FROGNANO_BOT_NAME: 'frognano[bot]',
              FROGNANO_BOT_EMAIL: '41898282+frognano[bot]@users.noreply.github.com',
            }
          : {}),
        FROGNANO_PUBLIC_URL: 'https://frognano.example.com',
        LOG_LEVEL: 'silent',
        ...options.env,
      },
    },
    {
      Octokit: options.pacedWrites ? PacedTestOctokit : AppTestOctokit,
      pollMs: 50,
      intakeRetryMs: 200,
      ...(options.webhookBodyTimeoutMs
        ? { webhookBodyTimeoutMs: options.webhookBodyTimeoutMs }
        : {}),
      runPipeline: (request) =>
        runPipeline(request, {
          modelConfig: { baseUrl: modelUrl, maxRetries: 0 },
          dataDir,
          localTempRoot: localTemp,
          logger: silentLog,
          handleSignals: false,
          snapshots: { enabled: false },
        }),
      reapOrphans: async (liveRunIds) => {
        const docker = sandbox === 'docker' ? connectDocker() : undefined;
        await reap(docker, {
          liveRunIds: [...liveRunIds, ...(await foreignRuns(docker, dataDir))],
          workRoot: join(dataDir, 'runs'),
          log: silentLog,
        });
      },
    },
  );
  const url = app.url as string;

  // A start that fails must not leave the temp tree or the model server behind.
  async function startAppOrCleanUp(startOptions: StartAppOptions, parts: AppParts) {
    try {
      return await startApp(startOptions, parts);
    } catch (error) {
      await gitServer?.close();
      if (!options.model) await model?.close();
      if (!options.root) rmSync(root, { recursive: true, force: true });
      throw error;
    }
  }
  return {
    app,
    url,
    model,
    root,
    dataDir,
    bare,
    base,
    git: gitServer,
    async deliver(event, payload, id = randomUUID(), signature) {
      const body = JSON.stringify(payload);
      const res = await fetch(`${url}/api/github/webhooks`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'x-github-event': event,
          'x-github-delivery': id,
          'x-hub-signature-256': signature ?? sign(body),
        },
        body,
      });
      await res.text();
      return res.status;
    },
    async stop(stopOptions = {}) {
      await app.stop();
      await gitServer?.close();
      if (!options.model) await model?.close();
      if (!stopOptions.keepFiles && !options.root) rmSync(root, { recursive: true, force: true });
    },
  };
}

/** One mocked GitHub endpoint, served by nock or by the loopback fake (`FakeGitHub`). */
export interface Intercept {
  method: 'GET' | 'POST' | 'PATCH' | 'DELETE';
  path: string | RegExp;
  /** Exact query parameters required (omitted: any query). */
  query?: Record<string, string | number>;
  /** The request body must satisfy this. */
  body?: (body: Record<string, unknown>) => boolean;
  status: number;
  /** The reply, given the request body and its path (e.g. the id at the end of a DELETE). */
  reply: (body: Record<string, unknown>, path: string) => unknown;
  /** Answer every matching request (and be "used" after the first); default: exactly `times`. */
  persist?: boolean;
  times?: number;
  /**
   * The credential GitHub wants on this route: `app`, a JWT signed with the App's key (only
   * `/app…` routes take one), or `installation`, a token this mock minted. A request without it
   * is answered 401 and recorded in `authFailures`.
   */
  auth?: 'app' | 'installation';
  /** Response headers (e.g. `retry-after`); a non-JSON `content-type` sends a string reply raw. */
  headers?: Record<string, string>;
  /**
   * May go unused (not "pending" at the end): a route every run asks, declared by helpers that
   * also serve tests where no run starts. Still strict in what it matches and the credential.
   */
  optional?: boolean;
}

export interface GitHubMock {
  /** `METHOD /path` of every request GitHub received, in order. */
  calls: string[];
  /** Bodies of status comment writes (create or edit), in order. */
  statusBodies: string[];
  /** Other comments posted (refusals, busy notices). */
  comments: string[];
  reactions: string[];
  /** Installation tokens minted through `POST /app/installations/{id}/access_tokens`. */
  tokens: Set<string>;
  /** Requests whose credential was wrong for their route. */
  authFailures: string[];
  intercept(spec: Intercept): void;
}

/** What is wrong with this Authorization header for the route (undefined: it is right). */
function authProblem(
  mock: Pick<GitHubMock, 'tokens'>,
  want: 'app' | 'installation',
  header: string | undefined,
): string | undefined {
  const [scheme, credential = ''] = (header ?? '').split(' ');
  if (want === 'installation') {
    if (scheme?.toLowerCase() !== 'token' || !mock.tokens.has(credential)) {
      return `wants a minted installation token, got ${scheme || 'nothing'}`;
    }
    return undefined;
  }
  if (scheme?.toLowerCase() !== 'bearer') return `wants an App JWT, got ${scheme || 'nothing'}`;
  const [head, payload, signature] = credential.split('.');
  const verifier = createVerify('RSA-SHA256').update(`${head}.${payload}`);
  if (!signature || !verifier.verify(createPublicKey(testPrivateKey()), signature, 'base64url')) {
    return 'the JWT is not signed with the App key';
  }
  const claims = JSON.parse(Buffer.from(payload ?? '', 'base64url').toString()) as {
    iss?: unknown;
    exp?: number;
  };
  if (String(claims.iss) !== '1') return `the JWT is for App ${String(claims.iss)}`;
  if (!claims.exp || claims.exp * 1000 < Date.now()) return 'the JWT has expired';
  return undefined;
}

function checkAuth(
  mock: Pick<GitHubMock, 'tokens' | 'authFailures'>,
  spec: Intercept,
  what: string,
  header: string | undefined,
): boolean {
  if (!spec.auth) return true;
  const problem = authProblem(mock, spec.auth, header);
  if (problem) mock.authFailures.push(`${what}: ${problem}`);
  return !problem;
}

const BAD_CREDENTIALS = { message: 'Bad credentials' };

function nockBackend(mock: Omit<GitHubMock, 'intercept'>): (spec: Intercept) => void {
  return (spec) => {
    // One scope per intercept: nock's persist() is a scope's, and on a shared scope it would
    // make every intercept answer forever (an exhausted `times` included).
    const scope = nock(API);
    scope.on('request', (req: { method: string; path: string }) => {
      mock.calls.push(`${req.method} ${req.path.split('?')[0]}`);
    });
    let i = scope.intercept(spec.path, spec.method, spec.body as never);
    if (spec.query) i = i.query(spec.query);
    else i = i.query(true);
    i = i.times(spec.times ?? 1);
    i.reply(function (uri: string, body: unknown) {
      const header = this.req.headers.authorization as string | undefined;
      const what = `${spec.method} ${this.req.path.split('?')[0]}`;
      if (!checkAuth(mock, spec, what, header)) return [401, BAD_CREDENTIALS];
      return [
        spec.status,
        spec.reply((body ?? {}) as Record<string, unknown>, uri.split('?')[0] ?? uri) as nock.Body,
        spec.headers ?? {},
      ];
    });
    if (spec.optional) i.optionally();
    if (spec.persist) scope.persist();
  };
}

/**
 * GitHub's REST API as a strict fake on loopback, for tests where nock cannot sit in the process:
 * nock's HTTP interception also wraps the Docker engine's hijacked exec streams.
 */
export interface FakeGitHub {
  url: string;
  /** Requests nothing matched (they got a 599). */
  unmatched: string[];
  /** Intercepts not used as often as declared. */
  pending(): string[];
  /** Every request as it arrived (its headers read), with the time in ms since the epoch. */
  arrivals: { method: string; path: string; at: number }[];
  close(): Promise<void>;
}

export async function startFakeGitHub(mock: GitHubMock): Promise<FakeGitHub> {
  const routes: (Intercept & { used: number })[] = [];
  const unmatched: string[] = [];
  const arrivals: FakeGitHub['arrivals'] = [];
  const server = createServer((req, res) => {
    const path = new URL(req.url ?? '/', 'http://127.0.0.1').pathname;
    arrivals.push({
      method: req.method ?? '',
      path,
      at: performance.timeOrigin + performance.now(),
    });
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const url = new URL(req.url ?? '/', 'http://127.0.0.1');
      const raw = Buffer.concat(chunks).toString('utf8');
      const body = (raw ? JSON.parse(raw) : {}) as Record<string, unknown>;
      const route = routes.find(
        (r) =>
          r.method === req.method &&
          (typeof r.path === 'string' ? r.path === url.pathname : r.path.test(url.pathname)) &&
          (!r.query ||
            Object.entries(r.query).every(([k, v]) => url.searchParams.get(k) === String(v))) &&
          (!r.body || r.body(body)) &&
          (r.persist || r.used < (r.times ?? 1)),
      );
      const what = `${req.method} ${url.pathname}`;
      if (!route) {
        unmatched.push(what);
        res.writeHead(599).end();
        return;
      }
      mock.calls.push(what);
      route.used++;
      if (!checkAuth(mock, route, what, req.headers.authorization)) {
        res.writeHead(401, { 'content-type': 'application/json' });
        res.end(JSON.stringify(BAD_CREDENTIALS));
        return;
      }
      const headers = { 'content-type': 'application/json', ...route.headers };
      const reply = route.reply(body, url.pathname);
      const rawReply = typeof reply === 'string' && !headers['content-type'].includes('json');
      res.writeHead(route.status, headers).end(rawReply ? reply : JSON.stringify(reply));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as { port: number };
  mock.intercept = (spec) => routes.push({ ...spec, used: 0 });
  return {
    url: `http://127.0.0.1:${port}`,
    unmatched,
    arrivals,
    pending: () =>
      routes
        .filter((r) => !r.optional && (r.persist ? r.used === 0 : r.used < (r.times ?? 1)))
        .map((r) => `${r.method} ${String(r.path)}`),
    close: () => {
      server.closeAllConnections();
      return new Promise((r) => server.close(() => r()));
    },
  };
}

/** A mock whose intercepts go to nock (default) or, after `startFakeGitHub(mock)`, to the fake. */
export function newGitHubMock(backend: 'nock' | 'fake' = 'nock'): GitHubMock {
  const mock: GitHubMock = {
    calls: [],
    statusBodies: [],
    comments: [],
    reactions: [],
    tokens: new Set(),
    authFailures: [],
    intercept: () => {
      throw new Error('start the fake GitHub first');
    },
  };
  if (backend === 'nock') mock.intercept = nockBackend(mock);
  return mock;
}

/** A fresh installation token, remembered so routes and the git server can check it. */
function mint(mock: GitHubMock): string {
  const token = `ghs_${randomUUID().replace(/-/g, '')}`;
  mock.tokens.add(token);
  return token;
}

/**
 * Who the App is, asked once per process when no FROGNANO_BOT_* identity is configured:
 * `GET /app` (App JWT) and `GET /users/<slug>[bot]` (an installation token; GitHub answers it
 * for any credential, but @octokit/auth-app only signs `/app…` routes with the JWT).
 */
export function mockBotIdentity(mock: GitHubMock, slug = 'frognano', userId = 41898282): void {
  mock.intercept({
    method: 'GET',
    path: '/app',
    status: 200,
    auth: 'app',
    reply: () => ({ id: 1, slug, name: slug, owner: { login: OWNER } }),
  });
  mock.intercept({
    method: 'GET',
    path: `/users/${slug}%5Bbot%5D`,
    status: 200,
    auth: 'installation',
    reply: () => ({ login: `${slug}[bot]`, id: userId, type: 'Bot' }),
  });
}

/**
 * The GitHub side of a run on Codertocat/Hello-World: token mints, permission (as given),
 * reactions. Strict: anything else fails.
 */
export function mockGitHub(
  options: { permission?: string | false; reactions?: boolean; ownerConfig?: boolean } = {},
  mock: GitHubMock = newGitHubMock(),
): GitHubMock {
  // Every run asks for the owner's `.github/frognano.yml` (Codertocat has none); a test of it
  // passes `ownerConfig: false` and mocks the files itself (mockConfigFile).
  if (options.ownerConfig !== false) {
    mockConfigFile(mock, { repo: '.github', status: 404, persist: true, optional: true });
  }
  mock.intercept({
    method: 'POST',
    path: '/app/installations/1/access_tokens',
    status: 201,
    persist: true,
    auth: 'app',
    reply: () => ({
      token: mint(mock),
      expires_at: new Date(Date.now() + 3600_000).toISOString(),
      permissions: { contents: 'write', issues: 'write', pull_requests: 'write', metadata: 'read' },
      repository_selection: 'all',
    }),
  });
  if (options.permission !== false) {
    const permission = options.permission ?? 'write';
    mock.intercept({
      method: 'GET',
      path: new RegExp(`^${REPO_PATH}/collaborators/[^/]+/permission$`),
      status: 200,
      persist: true,
      auth: 'installation',
      reply: () => ({ permission, role_name: permission }),
    });
  }
  if (options.reactions === false) return mock;
  mock.intercept({
    method: 'POST',
    path: new RegExp(`^${REPO_PATH}/(issues/\\d+|issues/comments/\\d+)/reactions$`),
    status: 201,
    auth: 'installation',
    persist: true,
    reply: (body) => {
      mock.reactions.push(String(body.content));
      return { id: 1, content: body.content };
    },
  });
  return mock;
}

/**
 * A repository's `.github/frognano.yml` (or `path`) as Probot's config plugin asks for it: the
 * raw contents (`text`), or `status` (404: no such file, or the App is not installed there).
 */
export function mockConfigFile(
  mock: GitHubMock,
  file: {
    owner?: string;
    repo: string;
    path?: string;
    text?: string;
    status?: number;
    times?: number;
    persist?: boolean;
    optional?: boolean;
  },
): void {
  const path = encodeURIComponent(file.path ?? '.github/frognano.yml');
  mock.intercept({
    method: 'GET',
    path: `/repos/${file.owner ?? OWNER}/${file.repo}/contents/${path}`,
    status: file.status ?? 200,
    auth: 'installation',
    ...(file.times !== undefined ? { times: file.times } : {}),
    ...(file.persist ? { persist: true } : {}),
    ...(file.optional ? { optional: true } : {}),
    headers: { 'content-type': 'text/plain; charset=utf-8' },
    reply: () => (file.text === undefined ? 'Not Found' : file.text),
  });
}

/**
 * The status comment: none yet (created once, as 1000 + N), then edited in place. Listing the
 * issue's comments answers what GitHub would hold at that moment.
 */
export function mockStatusComment(
  mock: GitHubMock,
  issueNumber = 1,
  options: { known?: boolean } = {},
): void {
  const id = 1000 + issueNumber;
  if (!options.known) {
    let created: Record<string, unknown> | undefined;
    mock.intercept({
      method: 'GET',
      path: `${REPO_PATH}/issues/${issueNumber}/comments`,
      status: 200,
      auth: 'installation',
      persist: true,
      reply: () => (created ? [created] : []),
    });
    mock.intercept({
      method: 'POST',
      path: `${REPO_PATH}/issues/${issueNumber}/comments`,
      body: (b) => String(b.body).startsWith('<!-- frognano:status -->'),
      status: 201,
      auth: 'installation',
      reply: (body) => {
        mock.statusBodies.push(String(body.body));
        created = {
          id,
          body: body.body,
          user: { login: 'frognano[bot]', type: 'Bot' },
          performed_via_github_app: { id: 1, slug: 'frognano' },
        };
        return { id };
      },
    });
  }
  mock.intercept({
    method: 'PATCH',
    path: `${REPO_PATH}/issues/comments/${id}`,
    status: 200,
    auth: 'installation',
    persist: true,
    reply: (body) => {
      mock.statusBodies.push(String(body.body));
      return { id };
    },
  });
}

/** Ordinary (non-status) comments on an issue. */
export function mockPlainComments(mock: GitHubMock, issueNumber = 1, times = 1): void {
  mock.intercept({
    method: 'POST',
    path: `${REPO_PATH}/issues/${issueNumber}/comments`,
    body: (b) => !String(b.body).startsWith('<!--'),
    status: 201,
    auth: 'installation',
    times,
    reply: (body) => {
      mock.comments.push(String(body.body));
      return { id: 2000 + mock.comments.length };
    },
  });
}

/** The pull request calls of a first publish for issue N: none open, create #prNumber, review. */
export function mockPullRequest(
  mock: GitHubMock,
  issueNumber: number,
  prNumber: number,
  onCreate: (body: Record<string, unknown>) => void,
): void {
  mock.intercept({
    method: 'GET',
    path: `${REPO_PATH}/pulls`,
    query: { head: `${OWNER}:frognano/issue-${issueNumber}`, state: 'open', per_page: 1 },
    status: 200,
    auth: 'installation',
    reply: () => [],
  });
  mock.intercept({
    method: 'POST',
    path: `${REPO_PATH}/pulls`,
    status: 201,
    auth: 'installation',
    reply: (body) => {
      onCreate(body);
      return { number: prNumber, html_url: `https://github.com/${OWNER}/${REPO}/pull/${prNumber}` };
    },
  });
  mock.intercept({
    method: 'POST',
    path: `${REPO_PATH}/pulls/${prNumber}/requested_reviewers`,
    body: (b) => JSON.stringify(b.reviewers) === JSON.stringify(['Codertocat']),
    status: 201,
    auth: 'installation',
    reply: () => ({}),
  });
}

export async function waitFor(
  check: () => boolean | Promise<boolean>,
  what: string,
  timeoutMs = 20_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** A model step that waits until released: keeps a run "in flight". */
export function gate(): { step: ScriptStep; release: () => void; reached: Promise<void> } {
  let release!: () => void;
  let reachedResolve!: () => void;
  const released = new Promise<void>((r) => (release = r));
  const reached = new Promise<void>((r) => (reachedResolve = r));
  return {
    step: async () => {
      reachedResolve();
      await released;
      return { content: 'Nothing to change.' };
    },
    release,
    reached,
  };
}

/**
 * Containers of runs this harness's queue never had: other test files share the engine and
 * run at the same time, so for the reaper they count as live (in production every worker
 * sharing an engine shares the queue, so the queue alone knows which runs are live).
 */
async function foreignRuns(docker: Docker | undefined, dataDir: string): Promise<string[]> {
  if (!docker) return [];
  const queue = SqliteStore.open({ dataDir, concurrency: 1 });
  let ours: Set<string>;
  try {
    ours = new Set(queue.list().map((run) => run.id));
  } finally {
    queue.close();
  }
  const containers = await docker.listContainers({ all: true, filters: { label: [LABEL_RUN] } });
  return containers.map((c) => c.Labels[LABEL_RUN] ?? '').filter((id) => !ours.has(id));
}
