// A local PEP 503 package index serving wheels the test builds (PyPI is unreachable here): what a
// Python setup downloads from, on a real socket of the host. The sandbox reaches it through
// Docker's bridge gateway, or through the egress proxy as an operator's FROGNANO_PIP_INDEX_URL
// mirror on the bot's own host (`http://127.0.0.1:PORT/simple`).
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';

export interface WheelSpec {
  name: string;
  version: string;
  /** Module files, by path inside the wheel (default: `<name>/__init__.py` with `VALUE`). */
  files?: Record<string, string>;
  /** Incompressible bytes beside the module, for downloads of some size. */
  extraBytes?: number;
}

export interface Pep503IndexOptions {
  /** The address the server listens on (default 0.0.0.0). */
  listen?: string;
  /** The host the index's URL names (default: the bridge gateway). */
  urlHost?: string;
}

export interface Pep503Index {
  /** `http://<host>:<port>/simple`, for pip's --index-url. */
  url: string;
  host: string;
  port: number;
  /** Paths asked for, in order (`/simple/frogdate/`, `/files/...whl`). */
  requests: string[];
  close(): Promise<void>;
}

/** Docker's default bridge gateway: how a container on the bridge reaches the host. */
export const BRIDGE_GATEWAY = '172.17.0.1';

/** A pure-Python wheel, built with the host's python3 zipfile (RECORD hashed as pip expects). */
export function buildWheel(spec: WheelSpec): { filename: string; bytes: Buffer } {
  const dir = mkdtempSync(path.join(tmpdir(), 'wheel-'));
  const filename = `${spec.name}-${spec.version}-py3-none-any.whl`;
  const script = [
    'import base64, hashlib, json, os, sys, zipfile',
    'spec = json.loads(sys.argv[1]); out = sys.argv[2]',
    "info = '%s-%s.dist-info' % (spec['name'], spec['version'])",
    "files = dict(spec['files'])",
    "if spec['extra'] > 0:",
    "    files[spec['name'] + '/blob.txt'] = base64.b64encode(os.urandom(spec['extra'] * 3 // 4)).decode()",
    "files[info + '/METADATA'] = 'Metadata-Version: 2.1\\nName: %s\\nVersion: %s\\n' % (spec['name'], spec['version'])",
    "files[info + '/WHEEL'] = 'Wheel-Version: 1.0\\nGenerator: frognano-test\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n'",
    'record = []',
    "with zipfile.ZipFile(out, 'w') as z:",
    '    for name, text in files.items():',
    "        data = text.encode('utf-8'); z.writestr(name, data)",
    "        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b'=').decode()",
    "        record.append('%s,sha256=%s,%d' % (name, digest, len(data)))",
    "    record.append(info + '/RECORD,,')",
    "    z.writestr(info + '/RECORD', '\\n'.join(record) + '\\n')",
  ].join('\n');
  try {
    const out = path.join(dir, filename);
    const files = spec.files ?? { [`${spec.name}/__init__.py`]: `VALUE = "${spec.version}"\n` };
    const json = JSON.stringify({ ...spec, files, extra: spec.extraBytes ?? 0 });
    execFileSync('python3', ['-c', script, json, out]);
    return { filename, bytes: readFileSync(out) };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Serves the wheels (on 0.0.0.0 and named by BRIDGE_GATEWAY unless `options` say otherwise). */
export async function startPep503Index(
  wheels: WheelSpec[],
  options: Pep503IndexOptions = {},
): Promise<Pep503Index> {
  const urlHost = options.urlHost ?? BRIDGE_GATEWAY;
  const built = wheels.map((w) => ({ spec: w, ...buildWheel(w) }));
  const requests: string[] = [];
  const server: Server = createServer((req, res) => {
    const url = req.url ?? '/';
    requests.push(url);
    const project = /^\/simple\/([^/]+)\/?$/.exec(url)?.[1];
    if (url === '/simple/' || url === '/simple') {
      const links = built.map((w) => `<a href="/simple/${w.spec.name}/">${w.spec.name}</a>`);
      return html(res, links.join('\n'));
    }
    if (project) {
      const mine = built.filter((w) => normal(w.spec.name) === normal(project));
      if (mine.length === 0) return notFound(res);
      const links = mine.map((w) => {
        const sha = createHash('sha256').update(w.bytes).digest('hex');
        return `<a href="/files/${w.filename}#sha256=${sha}">${w.filename}</a>`;
      });
      return html(res, links.join('\n'));
    }
    const file = built.find((w) => url === `/files/${w.filename}`);
    if (!file) return notFound(res);
    res.writeHead(200, { 'content-type': 'application/octet-stream' });
    res.end(file.bytes);
  });
  await new Promise<void>((resolve) => server.listen(0, options.listen ?? '0.0.0.0', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://${urlHost}:${port}/simple`,
    host: urlHost,
    port,
    requests,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

function normal(name: string): string {
  return name.toLowerCase().replace(/[-_.]+/g, '-');
}

function html(res: ServerResponse, body: string): void {
  res.writeHead(200, { 'content-type': 'text/html' });
  res.end(`<!DOCTYPE html><html><body>\n${body}\n</body></html>\n`);
}

function notFound(res: ServerResponse): void {
  res.writeHead(404);
  res.end();
}
