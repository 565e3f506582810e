import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { trajectoryHandler } from '../src/web/index.js';
import { runOutDir } from '../src/data-dir.js';

let server: Server | undefined;
let root: string | undefined;
afterEach(async () => {
  await new Promise((resolve) => (server ? server.close(resolve) : resolve(undefined)));
  server = undefined;
  if (root) rmSync(root, { recursive: true, force: true });
});

describe('trajectoryHandler (real HTTP server)', () => {
  it('serves a run trajectory as inert JSON and nothing outside the runs', async () => {
    root = mkdtempSync(join(tmpdir(), 'trajectory-'));
    const runId = '0f4c1b2a-1111-4222-8333-444455556666';
    mkdirSync(runOutDir(root, runId), { recursive: true });
    writeFileSync(
      join(runOutDir(root, runId), 'trajectory.json'),
      '{"x":"<script>alert(1)</script>"}',
    );
    writeFileSync(join(root, 'secret.json'), '{"secret":true}');
    const handle = trajectoryHandler(root);
    server = createServer((req, res) => {
      void handle(req, res).then((handled) => {
        if (!handled) res.writeHead(404).end();
      });
    });
    await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
    const address = server.address();
    const base = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;

    const ok = await fetch(`${base}/frognano/runs/${runId}/trajectory.json`);
    expect(ok.status).toBe(200);
    expect(ok.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(ok.headers.get('x-content-type-options')).toBe('nosniff');
    expect(ok.headers.get('content-security-policy')).toBe("default-src 'none'; sandbox");
    expect(await ok.text()).toContain('alert(1)');

    for (const probe of [
      '/frognano/runs/../secret.json',
      '/frognano/runs/..%2F..%2Fsecret.json/trajectory.json',
      `/frognano/runs/${runId}/../../secret.json`,
      '/frognano/runs/------------------------------------/trajectory.json',
    ]) {
      const res = await fetch(`${base}${probe}`);
      expect(res.status, probe).toBe(404);
      expect(await res.text()).not.toContain('secret');
    }
  });
});
