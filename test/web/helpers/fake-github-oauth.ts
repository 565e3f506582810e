// A local stand-in for github.com/login/oauth and the two REST endpoints the runs page asks
// with the user's token (GET /user, GET /repos/{owner}/{repo}), on a real socket.
import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface FakeUser {
  login: string;
  id: number;
  /** `owner/repo` → permissions; absent: the repository is invisible to the user (404). */
  repos: Record<string, { push: boolean }>;
}

export interface FakeGitHubOAuth {
  url: string;
  /** Whoever "signs in" at the authorize page next. */
  signInAs(login: string): void;
  /** Repository checks asked, as `login owner/repo`. */
  repoChecks: string[];
  close(): Promise<void>;
}

export async function startFakeGitHubOAuth(options: {
  clientId: string;
  clientSecret: string;
  users: FakeUser[];
}): Promise<FakeGitHubOAuth> {
  let current = options.users[0]!;
  const codes = new Map<string, { user: FakeUser; redirectUri: string }>();
  const tokens = new Map<string, FakeUser>();
  const repoChecks: string[] = [];
  const body = (req: IncomingMessage) =>
    new Promise<string>((resolve) => {
      let data = '';
      req.on('data', (c: Buffer) => (data += c.toString()));
      req.on('end', () => resolve(data));
    });
  const server: Server = createServer((req, res) => {
    void (async () => {
      const url = new URL(req.url ?? '/', 'http://fake');
      const json = (status: number, value: unknown) =>
        res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(value));
      if (req.method === 'GET' && url.pathname === '/login/oauth/authorize') {
        if (url.searchParams.get('client_id') !== options.clientId) return json(400, {});
        const redirectUri = url.searchParams.get('redirect_uri') ?? '';
        const code = randomBytes(8).toString('hex');
        codes.set(code, { user: current, redirectUri });
        const back = new URL(redirectUri);
        back.searchParams.set('code', code);
        back.searchParams.set('state', url.searchParams.get('state') ?? '');
        return res.writeHead(302, { location: back.toString() }).end();
      }
      if (req.method === 'POST' && url.pathname === '/login/oauth/access_token') {
        const form = JSON.parse(await body(req)) as Record<string, string>;
        const grant = codes.get(form.code ?? '');
        codes.delete(form.code ?? '');
        if (
          form.client_id !== options.clientId ||
          form.client_secret !== options.clientSecret ||
          !grant ||
          grant.redirectUri !== form.redirect_uri
        ) {
          return json(200, { error: 'bad_verification_code' });
        }
        const token = `gho_${randomBytes(18).toString('hex')}`;
        tokens.set(token, grant.user);
        return json(200, { access_token: token, token_type: 'bearer', scope: '' });
      }
      const user = tokens.get((req.headers.authorization ?? '').replace(/^Bearer /, ''));
      if (!user) return json(401, { message: 'Bad credentials' });
      if (req.method === 'GET' && url.pathname === '/api/user') {
        return json(200, { login: user.login, id: user.id });
      }
      const repo = /^\/api\/repos\/([^/]+\/[^/]+)$/.exec(url.pathname)?.[1];
      if (req.method === 'GET' && repo) {
        repoChecks.push(`${user.login} ${repo}`);
        const perms = user.repos[repo];
        if (!perms) return json(404, { message: 'Not Found' });
        return json(200, {
          full_name: repo,
          permissions: {
            admin: false,
            maintain: false,
            push: perms.push,
            triage: false,
            pull: true,
          },
        });
      }
      return json(404, { message: 'Not Found' });
    })();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    signInAs(login) {
      current = options.users.find((u) => u.login === login)!;
    },
    repoChecks,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
