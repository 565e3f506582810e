// A local PyPI (PEP 503 simple index) serving wheels the test builds: what setup installs from
// through the egress proxy, as an operator's FROGNANO_PIP_INDEX_URL mirror on the bot's host.
import { execFileSync } from 'node:child_process';
import { createReadStream, mkdirSync, readdirSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';

/**
 * Builds `<name>-<version>-py3-none-any.whl` (a module `<name>` with `VALUE = "<version>"`, and
 * `extraBytes` of incompressible data beside it, for downloads of some size).
 */
export function buildWheel(dir: string, name: string, version: string, extraBytes = 0): string {
  mkdirSync(dir, { recursive: true });
  const file = path.join(dir, `${name}-${version}-py3-none-any.whl`);
  const script = `
import base64, hashlib, os, sys, zipfile
name, version, out, extra = sys.argv[1:5]
info = f"{name}-{version}.dist-info"
files = {
    f"{name}/__init__.py": f'VALUE = "{version}"\\n',
    f"{info}/METADATA": f"Metadata-Version: 2.1\\nName: {name}\\nVersion: {version}\\n",
    f"{info}/WHEEL": "Wheel-Version: 1.0\\nGenerator: test\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n",
}
if int(extra) > 0:
    files[f"{name}/blob.txt"] = base64.b64encode(os.urandom(int(extra) * 3 // 4)).decode()
record = []
with zipfile.ZipFile(out, "w") as z:
    for path, text in files.items():
        data = text.encode()
        z.writestr(path, data)
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{path},sha256={digest},{len(data)}")
    record.append(f"{info}/RECORD,,")
    z.writestr(f"{info}/RECORD", "\\n".join(record) + "\\n")
`;
  execFileSync('python3', ['-c', script, name, version, file, String(extraBytes)]);
  return file;
}

export interface SimpleIndex {
  /** `http://127.0.0.1:PORT/simple` */
  url: string;
  port: number;
  /** Paths asked for, in order. */
  requests: string[];
  close(): Promise<void>;
}

/** Serves every wheel in `dir` under /simple/<project>/ and /files/<wheel>, on `host`. */
export async function startSimpleIndex(dir: string, host = '127.0.0.1'): Promise<SimpleIndex> {
  const requests: string[] = [];
  const server: Server = createServer((req, res) => {
    const url = req.url ?? '/';
    requests.push(url);
    const wheels = readdirSync(dir).filter((f) => f.endsWith('.whl'));
    const project = /^\/simple\/([^/]+)\/?$/.exec(url)?.[1];
    if (project) {
      const links = wheels
        .filter((w) => w.split('-')[0]!.toLowerCase().replace(/_/g, '-') === project)
        .map((w) => `<a href="/files/${w}">${w}</a>`);
      if (links.length === 0) return void res.writeHead(404).end();
      res.writeHead(200, { 'content-type': 'text/html' });
      return void res.end(`<!DOCTYPE html><html><body>${links.join('\n')}</body></html>`);
    }
    const file = /^\/files\/([^/]+\.whl)$/.exec(url)?.[1];
    if (file && wheels.includes(file)) {
      res.writeHead(200, { 'content-type': 'application/octet-stream' });
      return void createReadStream(path.join(dir, file)).pipe(res);
    }
    res.writeHead(404).end();
  });
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/simple`,
    port,
    requests,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
