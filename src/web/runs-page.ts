// `/runs`: the queue and recent runs for maintainers, signed in with GitHub (the App's OAuth
// client). A user sees the runs of repositories they can push to, checked with their own token.
// State-changing requests are POSTs with a CSRF token; the OAuth round trip carries a `state`
// bound to a sealed cookie; cookies are HttpOnly and SameSite=Lax.
import { randomBytes, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { exchangeWebFlowCode } from '@octokit/oauth-methods';
import { request } from '@octokit/request';
import type { Logger } from 'pino';
import type { RunState } from '../queue/types.js';
import { cspHash, formatDuration, safeHref, text } from './html.js';
import { runPageUrl } from './run-page-handler.js';
import type { RunListing, RunSummary } from './run-listing.js';
import { parseCookies, serializeCookie, SessionSealer } from './session.js';

export interface RunsPageConfig {
  clientId: string;
  clientSecret: string;
}

/** GITHUB_CLIENT_ID and GITHUB_CLIENT_SECRET (written by Probot's registration flow), or off. */
export function runsPageConfig(env: NodeJS.ProcessEnv): RunsPageConfig | undefined {
  const clientId = env.GITHUB_CLIENT_ID?.trim();
  const clientSecret = env.GITHUB_CLIENT_SECRET?.trim();
  return clientId && clientSecret ? { clientId, clientSecret } : undefined;
}

export interface RunsPageOptions extends RunsPageConfig {
  listing: RunListing;
  /** github.com or the GHE host: where /login/oauth lives. */
  webBaseUrl: string;
  /** The REST API base. */
  apiBaseUrl: string;
  /** This server's public base URL (the OAuth callback is under it); else the request's Host. */
  publicUrl?: string;
  log: Logger;
}

const SESSION_COOKIE = 'frognano_session';
const OAUTH_COOKIE = 'frognano_oauth';
const SESSION_MAX_AGE_SEC = 8 * 3600;
const OAUTH_MAX_AGE_SEC = 600;
const PERMISSION_TTL_MS = 60_000;
const STATES: RunState[] = ['queued', 'running', 'done', 'failed', 'cancelled'];

interface Session {
  login: string;
  id: number;
  token: string;
}

const STYLE = `body{margin:0;font:14px/1.45 -apple-system,BlinkMacSystemFont,"Segoe UI",Helvetica,Arial,sans-serif;color:#1f2328}
main{max-width:1200px;margin:0 auto;padding:12px 20px}h1{font-size:20px}
table{border-collapse:collapse;width:100%}th,td{border-bottom:1px solid #d1d9e0;padding:5px 8px;text-align:left;vertical-align:top}
th{background:#f6f8fa}.mut{color:#59636e}form.inline{display:inline}.bar{display:flex;gap:12px;align-items:center;margin:10px 0}
.st-running{color:#0969da;font-weight:600}.st-failed{color:#cf222e}.st-done{color:#1a7f37}`;
const CSP = [
  "default-src 'none'",
  `style-src ${cspHash(STYLE)}`,
  "form-action 'self'",
  "base-uri 'none'",
  "frame-ancestors 'none'",
  "img-src 'none'",
].join('; ');

/** What every step of the handler shares: its options, the cookie sealer, cached checks. */
interface Ctx {
  options: RunsPageOptions;
  sealer: SessionSealer;
  permissions: Map<string, { allowed: boolean; at: number }>;
  apiBase: string;
  webBase: string;
}

export function runsPageHandler(options: RunsPageOptions) {
  const ctx: Ctx = {
    options,
    sealer: new SessionSealer(options.clientSecret),
    permissions: new Map(),
    apiBase: options.apiBaseUrl.replace(/\/+$/, ''),
    webBase: options.webBaseUrl.replace(/\/+$/, ''),
  };
  return async (req: IncomingMessage, res: ServerResponse): Promise<boolean> => {
    const url = new URL(req.url ?? '/', 'http://localhost');
    switch (`${req.method} ${url.pathname}`) {
      case 'GET /runs':
        await list(ctx, req, res, url.searchParams);
        return true;
      case 'GET /runs/login':
        login(ctx, req, res);
        return true;
      case 'GET /runs/callback':
        await callback(ctx, req, res, url.searchParams);
        return true;
      case 'POST /runs/logout':
        await logout(ctx, req, res);
        return true;
      default:
        return false;
    }
  };
}

function origin(ctx: Ctx, req: IncomingMessage): string {
  return (ctx.options.publicUrl ?? `http://${req.headers.host ?? 'localhost'}`).replace(/\/+$/, '');
}

function cookie(
  ctx: Ctx,
  req: IncomingMessage,
  name: string,
  value: string,
  maxAgeSec: number,
): string {
  const secure = origin(ctx, req).startsWith('https:');
  return serializeCookie(name, value, { maxAgeSec, secure, path: '/runs' });
}

function api(ctx: Ctx, token: string, path: string): Promise<Response> {
  return fetch(`${ctx.apiBase}${path}`, {
    headers: {
      authorization: `Bearer ${token}`,
      accept: 'application/vnd.github+json',
      'user-agent': 'frognano-bot',
    },
    signal: AbortSignal.timeout(10_000),
  });
}

/** Push (or maintain, admin) on the repository, asked with the user's own token. */
async function canPush(ctx: Ctx, session: Session, repo: string): Promise<boolean> {
  const key = `${session.id}:${repo.toLowerCase()}`;
  const cached = ctx.permissions.get(key);
  if (cached && Date.now() - cached.at < PERMISSION_TTL_MS) return cached.allowed;
  let allowed = false;
  try {
    const res = await api(ctx, session.token, `/repos/${repo}`);
    if (res.ok) {
      const body = (await res.json()) as { permissions?: Record<string, boolean> };
      allowed = Boolean(
        body.permissions?.push || body.permissions?.maintain || body.permissions?.admin,
      );
    }
  } catch (error) {
    ctx.options.log.warn({ err: error, repo }, 'runs page: permission check failed');
  }
  if (ctx.permissions.size > 10_000) ctx.permissions.clear();
  ctx.permissions.set(key, { allowed, at: Date.now() });
  return allowed;
}

function send(
  res: ServerResponse,
  status: number,
  body: string,
  headers: Record<string, string | string[]> = {},
): void {
  res
    .writeHead(status, {
      'content-type': 'text/html; charset=utf-8',
      'content-security-policy': CSP,
      'x-content-type-options': 'nosniff',
      'x-frame-options': 'DENY',
      // same-origin, not no-referrer: browsers then send `Origin: null` on our own POSTs.
      'referrer-policy': 'same-origin',
      'cache-control': 'no-store',
      ...headers,
    })
    .end(body);
}

function redirect(res: ServerResponse, location: string, cookies: string[] = []): void {
  res.writeHead(303, { location, 'cache-control': 'no-store', 'set-cookie': cookies }).end();
}

function login(ctx: Ctx, req: IncomingMessage, res: ServerResponse): void {
  const state = randomBytes(24).toString('base64url');
  const url = new URL(`${ctx.webBase}/login/oauth/authorize`);
  url.searchParams.set('client_id', ctx.options.clientId);
  url.searchParams.set('redirect_uri', `${origin(ctx, req)}/runs/callback`);
  url.searchParams.set('state', state);
  redirect(res, url.toString(), [
    cookie(
      ctx,
      req,
      OAUTH_COOKIE,
      ctx.sealer.seal({ state }, OAUTH_MAX_AGE_SEC),
      OAUTH_MAX_AGE_SEC,
    ),
  ]);
}

function signInFailed(res: ServerResponse, status: number, html: string): void {
  send(res, status, page('Sign-in failed', html));
}

async function callback(
  ctx: Ctx,
  req: IncomingMessage,
  res: ServerResponse,
  query: URLSearchParams,
): Promise<void> {
  const expected = ctx.sealer.unseal<{ state: string }>(
    parseCookies(req.headers.cookie)[OAUTH_COOKIE],
  );
  const state = query.get('state') ?? '';
  const code = query.get('code');
  const same =
    expected !== undefined &&
    Buffer.byteLength(state) === Buffer.byteLength(expected.state) &&
    timingSafeEqual(Buffer.from(state), Buffer.from(expected.state));
  if (!same || !code) {
    signInFailed(
      res,
      400,
      '<p>The sign-in link expired or did not come from this server. <a href="/runs/login">Sign in again</a>.</p>',
    );
    return;
  }
  const token = await exchangeCode(ctx, req, code);
  if (!token) {
    signInFailed(
      res,
      502,
      '<p>GitHub did not accept the sign-in. <a href="/runs/login">Try again</a>.</p>',
    );
    return;
  }
  const userRes = await api(ctx, token, '/user');
  const user = (await userRes.json().catch(() => ({}))) as { login?: string; id?: number };
  if (!userRes.ok || !user.login || typeof user.id !== 'number') {
    signInFailed(
      res,
      502,
      '<p>GitHub did not say who you are. <a href="/runs/login">Try again</a>.</p>',
    );
    return;
  }
  const session: Session = { login: user.login, id: user.id, token };
  ctx.options.log.info({ login: user.login }, 'runs page: signed in');
  redirect(res, '/runs', [
    cookie(
      ctx,
      req,
      SESSION_COOKIE,
      ctx.sealer.seal(session, SESSION_MAX_AGE_SEC),
      SESSION_MAX_AGE_SEC,
    ),
    cookie(ctx, req, OAUTH_COOKIE, '', 0),
  ]);
}

/**
 * The OAuth code traded for the user's token (undefined: GitHub refused it), by
 * @octokit/oauth-methods at the configured web base (github.com or the GHE host). A network
 * failure or timeout throws, as a plain one-line error: Octokit's would carry the request body,
 * client secret included, into the log.
 */
async function exchangeCode(
  ctx: Ctx,
  req: IncomingMessage,
  code: string,
): Promise<string | undefined> {
  const oauthRequest = request.defaults({
    // oauth-methods asks `/login/oauth/access_token` under this base (api.github.com → github.com).
    baseUrl: ctx.webBase,
    headers: { 'user-agent': 'frognano-bot' },
    request: { signal: AbortSignal.timeout(10_000) },
  });
  try {
    const { authentication } = await exchangeWebFlowCode({
      clientType: 'oauth-app',
      clientId: ctx.options.clientId,
      clientSecret: ctx.options.clientSecret,
      code,
      redirectUrl: `${origin(ctx, req)}/runs/callback`,
      request: oauthRequest,
    });
    if (authentication.token) return authentication.token;
    ctx.options.log.warn({ status: 200 }, 'runs page: OAuth code exchange failed');
    return undefined;
  } catch (error) {
    // A RequestError with a response: GitHub answered, and refused (an HTTP error, or `error`).
    const response = (error as { response?: { status: number; data?: { error?: string } } })
      .response;
    const name = (error as Error).name;
    if (!response && (name === 'HttpError' || name === 'AbortError')) {
      throw new Error(
        `runs page: the OAuth code exchange at ${ctx.webBase} did not answer (${(error as Error).message}); check the network and GHE_HOST`,
      );
    }
    // Otherwise GitHub answered with a body that holds no token (not JSON, no `scope`).
    ctx.options.log.warn(
      { status: response?.status ?? 200, error: response?.data?.error },
      'runs page: OAuth code exchange failed',
    );
    return undefined;
  }
}

async function logout(ctx: Ctx, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const raw = parseCookies(req.headers.cookie)[SESSION_COOKIE] ?? '';
  const form = new URLSearchParams(await readSmallBody(req));
  const sameOrigin = !req.headers.origin || req.headers.origin === origin(ctx, req);
  if (!raw || !sameOrigin || !ctx.sealer.checkCsrf(raw, form.get('csrf') ?? undefined)) {
    send(res, 403, page('Forbidden', '<p>That request did not come from this page.</p>'));
    return;
  }
  redirect(res, '/runs', [cookie(ctx, req, SESSION_COOKIE, '', 0)]);
}

async function list(
  ctx: Ctx,
  req: IncomingMessage,
  res: ServerResponse,
  query: URLSearchParams,
): Promise<void> {
  const raw = parseCookies(req.headers.cookie)[SESSION_COOKIE];
  const session = ctx.sealer.unseal<Session>(raw);
  if (!session || !raw) {
    send(
      res,
      200,
      page(
        'frognano runs',
        '<p>Sign in with GitHub to see the runs of the repositories you can push to.</p><p><a href="/runs/login">Sign in with GitHub</a></p>',
      ),
    );
    return;
  }
  const stateParam = query.get('state') ?? '';
  const state = STATES.includes(stateParam as RunState) ? (stateParam as RunState) : undefined;
  const all = await ctx.options.listing.listRuns({ state, limit: 500 });
  const repos = [...new Set(all.map((r) => r.repo))];
  const allowed = new Set<string>();
  await Promise.all(
    repos.map(async (repo) =>
      (await canPush(ctx, session, repo)) ? allowed.add(repo) : undefined,
    ),
  );
  const repoParam = (query.get('repo') ?? '').toLowerCase();
  const visible = all.filter(
    (r) => allowed.has(r.repo) && (!repoParam || r.repo.toLowerCase() === repoParam),
  );
  send(
    res,
    200,
    page(
      'frognano runs',
      renderRuns(
        session,
        visible,
        [...allowed].sort(),
        repoParam,
        state,
        ctx.sealer.csrfToken(raw),
        ctx.options.publicUrl,
      ),
    ),
  );
}

function readSmallBody(req: IncomingMessage, max = 4096): Promise<string> {
  return new Promise((resolve, reject) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => {
      body += chunk;
      if (body.length > max) {
        req.destroy();
        reject(new Error('request body too large'));
      }
    });
    req.on('end', () => resolve(body));
    req.on('error', reject);
  });
}

function page(title: string, body: string): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="referrer" content="same-origin"><meta name="viewport" content="width=device-width, initial-scale=1"><title>${text(title)}</title><style>${STYLE}</style></head><body><main><h1>${text(title)}</h1>${body}</main></body></html>`;
}

function renderRuns(
  session: Session,
  runs: RunSummary[],
  repos: string[],
  repo: string,
  state: RunState | undefined,
  csrf: string,
  publicUrl: string | undefined,
): string {
  const now = Date.now();
  const rows = runs
    .map((r) => {
      const duration =
        r.state === 'queued'
          ? `queued ${formatDuration(now - r.createdAt)}`
          : r.startedAt
            ? formatDuration((r.finishedAt ?? now) - r.startedAt)
            : '–';
      const pageUrl = publicUrl ? runPageUrl(publicUrl, r.id) : `/frognano/runs/${r.id}/trajectory`;
      return `<tr><td class="st-${r.state}">${r.state}</td><td><a href="${safeHref(r.issueUrl)}" rel="noreferrer noopener">${text(r.repo)}#${r.issueNumber}</a><br><span class="mut">${text(r.issueTitle)}</span></td><td>${text(r.trigger)}</td><td>${r.step ?? '–'}${r.maxSteps ? `/${r.maxSteps}` : ''}</td><td>${duration}</td><td>${text(r.outcome ?? '–')}</td><td><a href="${safeHref(pageUrl)}">run page</a>${r.prUrl ? ` · <a href="${safeHref(r.prUrl)}" rel="noreferrer noopener">pull request</a>` : ''}</td></tr>`;
    })
    .join('');
  const repoOptions = ['', ...repos]
    .map(
      (r) =>
        `<option value="${text(r)}"${r.toLowerCase() === repo ? ' selected' : ''}>${r ? text(r) : 'all repositories'}</option>`,
    )
    .join('');
  const stateOptions = ['', ...STATES]
    .map(
      (s) =>
        `<option value="${s}"${s === (state ?? '') ? ' selected' : ''}>${s || 'all states'}</option>`,
    )
    .join('');
  return `<div class="bar"><span>signed in as <b>@${text(session.login)}</b></span>
<form class="inline" method="post" action="/runs/logout"><input type="hidden" name="csrf" value="${text(csrf)}"><button type="submit">sign out</button></form></div>
<form class="bar" method="get" action="/runs"><label>repository <select name="repo">${repoOptions}</select></label><label>state <select name="state">${stateOptions}</select></label><button type="submit">filter</button></form>
${runs.length === 0 ? '<p class="mut">No runs in repositories you can push to.</p>' : `<table><thead><tr><th>state</th><th>issue</th><th>trigger</th><th>step</th><th>duration</th><th>outcome</th><th>links</th></tr></thead><tbody>${rows}</tbody></table>`}`;
}
