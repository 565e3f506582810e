// A fake GitHub API on a real socket for the App-level calls the doctor and `npm start` make:
// it verifies the App JWT's RS256 signature against the App's public key (Probot's real auth
// signs it), and answers GET /app and GET /app/hook/config, plus the registration flow's code
// conversion (POST /app-manifests/<code>/conversions). Anything else is a 404 it records.
import { createPublicKey, generateKeyPairSync, verify } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface FakeGitHubApp {
  url: string;
  /** The private key the App is registered with. */
  privateKey: string;
  /** `METHOD path` of every request, in order. */
  requests: string[];
  /** The App's webhook URL as GET /app/hook/config reports it ('' = none set). */
  hookUrl: string;
  close(): Promise<void>;
}

export function newPrivateKey(): string {
  return generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({
    type: 'pkcs1',
    format: 'pem',
  }) as string;
}

export async function startFakeGitHubApp(
  options: { appId?: number; hookUrl?: string } = {},
): Promise<FakeGitHubApp> {
  const appId = options.appId ?? 1;
  const privateKey = newPrivateKey();
  const publicKey = createPublicKey(privateKey);
  const state = { hookUrl: options.hookUrl ?? 'https://bot.example.com/api/github/webhooks' };
  const requests: string[] = [];

  const validJwt = (req: IncomingMessage): boolean => {
    const match = /^bearer (.+)$/i.exec(req.headers.authorization ?? '');
    const parts = match?.[1]?.split('.');
    if (!parts || parts.length !== 3) return false;
    const [header, payload, signature] = parts as [string, string, string];
    const signed = verify(
      'RSA-SHA256',
      Buffer.from(`${header}.${payload}`),
      publicKey,
      Buffer.from(signature, 'base64url'),
    );
    const claims = JSON.parse(Buffer.from(payload, 'base64url').toString()) as {
      iss?: string | number;
      exp?: number;
    };
    return signed && String(claims.iss) === String(appId) && (claims.exp ?? 0) > Date.now() / 1000;
  };

  const send = (res: ServerResponse, status: number, body: unknown) =>
    res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));

  const server = createServer((req, res) => {
    // GitHub Enterprise Server's layout (GHE_HOST): the same API under /api/v3.
    const path = ((req.url ?? '').split('?')[0] ?? '').replace(/^\/api\/v3(?=\/)/, '');
    requests.push(`${req.method} ${path}`);
    // The registration flow's last step: GitHub's redirect hands Probot a one-time code, which it
    // converts (no auth) into the new App's credentials.
    const conversion = /^\/app-manifests\/([^/]+)\/conversions$/.exec(path);
    if (req.method === 'POST' && conversion) {
      send(res, 201, {
        id: appId,
        slug: 'frognano-test',
        client_id: 'Iv1.fake',
        client_secret: 'fake-client-secret',
        webhook_secret: 'fake-webhook-secret',
        pem: privateKey,
        html_url: 'https://github.com/apps/frognano-test',
      });
    } else if (!validJwt(req)) {
      send(res, 401, { message: 'A JSON web token could not be decoded' });
    } else if (req.method === 'GET' && path === '/app') {
      send(res, 200, { id: appId, slug: 'frognano-test', name: 'frognano test' });
    } else if (req.method === 'GET' && path === '/app/hook/config') {
      send(res, 200, { url: state.hookUrl, content_type: 'json', insecure_ssl: '0' });
    } else {
      send(res, 404, { message: 'Not Found' });
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    privateKey,
    requests,
    get hookUrl() {
      return state.hookUrl;
    },
    set hookUrl(value: string) {
      state.hookUrl = value;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
