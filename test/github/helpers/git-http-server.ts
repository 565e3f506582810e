// A tiny smart-HTTP git server on loopback (git http-backend as CGI) that demands a token in
// the Authorization header, like GitHub, and records which Authorization headers it saw. It can
// fail pushes on purpose (a 5xx before git-receive-pack runs), as a flaky server would.
import { spawn } from 'node:child_process';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface GitHttpServer {
  url: string;
  /** Authorization header of every request (undefined when absent). */
  authorizations: (string | undefined)[];
  /** Request URLs, to check nothing secret travelled in them. */
  urls: string[];
  /**
   * Answer the next `count` pushes (POST git-receive-pack) with this status: unapplied, or
   * (`applied`) after the push took effect, as when a proxy loses the answer.
   */
  failPushes(count: number, status?: number, options?: { applied?: boolean }): void;
  close(): Promise<void>;
}

export async function startGitHttpServer(
  projectRoot: string,
  token: string | ((token: string) => boolean),
): Promise<GitHttpServer> {
  const accepts = typeof token === 'string' ? (t: string) => t === token : token;
  const authorizations: (string | undefined)[] = [];
  const urls: string[] = [];
  const pushFaults: { status: number; applied: boolean }[] = [];
  const server = createServer((req, res) => {
    authorizations.push(req.headers.authorization);
    urls.push(req.url ?? '');
    const basic = /^Basic (.+)$/.exec(req.headers.authorization ?? '')?.[1];
    const [user, password] = Buffer.from(basic ?? '', 'base64')
      .toString()
      .split(':');
    if (user !== 'x-access-token' || !password || !accepts(password)) {
      res.writeHead(401, { 'WWW-Authenticate': 'Basic realm="test"' }).end();
      req.resume();
      return;
    }
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    const isPush = req.method === 'POST' && url.pathname.endsWith('/git-receive-pack');
    const fault = isPush ? pushFaults.shift() : undefined;
    if (fault && !fault.applied) {
      res.writeHead(fault.status).end('upstream unavailable\n');
      req.resume();
      return;
    }
    const child = spawn('git', ['http-backend'], {
      env: {
        PATH: process.env.PATH,
        HOME: projectRoot,
        GIT_CONFIG_NOSYSTEM: '1',
        GIT_CONFIG_GLOBAL: '/dev/null',
        GIT_PROJECT_ROOT: projectRoot,
        GIT_HTTP_EXPORT_ALL: '1',
        REMOTE_USER: 'x-access-token',
        REMOTE_ADDR: '127.0.0.1',
        REQUEST_METHOD: req.method ?? 'GET',
        PATH_INFO: url.pathname,
        QUERY_STRING: url.search.slice(1),
        CONTENT_TYPE: req.headers['content-type'] ?? '',
        HTTP_CONTENT_ENCODING: req.headers['content-encoding'] ?? '',
        GIT_PROTOCOL: String(req.headers['git-protocol'] ?? ''),
      },
    });
    req.pipe(child.stdin);
    const chunks: Buffer[] = [];
    child.stdout.on('data', (b: Buffer) => chunks.push(b));
    child.on('close', () => {
      if (fault) {
        res.writeHead(fault.status).end('upstream unavailable\n');
        return;
      }
      const all = Buffer.concat(chunks);
      const split = all.indexOf('\r\n\r\n');
      const head = all.subarray(0, split).toString('latin1');
      const headers: Record<string, string> = {};
      let status = 200;
      for (const line of head.split('\r\n')) {
        const i = line.indexOf(':');
        const name = line.slice(0, i).trim();
        const value = line.slice(i + 1).trim();
        if (name.toLowerCase() === 'status') status = Number(value.split(' ')[0]);
        else if (name) headers[name] = value;
      }
      res.writeHead(status, headers).end(all.subarray(split + 4));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    authorizations,
    urls,
    failPushes: (count, status = 502, options = {}) => {
      for (let i = 0; i < count; i++)
        pushFaults.push({ status, applied: options.applied ?? false });
    },
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
