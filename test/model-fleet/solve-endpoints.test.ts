// `frognano solve` with several model endpoints, end to end as a user runs it (a child process,
// a real Python repository, the local sandbox, scripted endpoints on real sockets): one endpoint
// dies in the middle of the run and the run still ends with its fix; with a cap of one loop, a
// second attempt waits for the first one's slot and says so.
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { ATTEMPT_HEADER } from '../../src/runner/phases/connect-model.js';
import { Trajectory } from '../../src/leaf/trajectory.js';
import { createPythonRepo, ISSUE_TEXT } from '../support/python-repo.js';
import {
  finalAnswer,
  startScriptedModelServer,
  toolCall,
  type RecordedRequest,
  type ResponseSpec,
  type ScriptedModelServer,
} from '../support/scripted-model-server.js';

const CLI = path.resolve('bin/frognano.js');

let work: string;
const servers: ScriptedModelServer[] = [];
beforeEach(async () => {
  work = await mkdtemp(path.join(tmpdir(), 'frognano-solve-endpoints-'));
});
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
  await rm(work, { recursive: true, force: true });
});

function runCli(args: string[], env: NodeJS.ProcessEnv): Promise<{ code: number; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [CLI, ...args],
      { env: { PATH: process.env.PATH, HOME: process.env.HOME, ...env }, timeout: 240_000 },
      (error, _stdout, stderr) => {
        resolve({ code: error ? (typeof error.code === 'number' ? error.code : 1) : 0, stderr });
      },
    );
  });
}

function fixingScript(): ResponseSpec[] {
  return [
    toolCall('Glob', { pattern: '**/*.py' }, { id: 'c1' }),
    toolCall('Read', { file_path: 'calc.py' }, { id: 'c2' }),
    toolCall(
      'Edit',
      { file_path: 'calc.py', old_string: 'return a - b', new_string: 'return a + b' },
      { id: 'c3' },
    ),
    toolCall('Bash', { command: 'python3 -m pytest -q' }, { id: 'c4' }),
    finalAnswer('Fixed add(): it subtracted instead of adding.'),
  ];
}

const solveArgs = (repoDir: string, outDir: string) => [
  'solve',
  '--repo',
  repoDir,
  '--issue',
  ISSUE_TEXT,
  '--sandbox',
  'local',
  '--out',
  outDir,
];

it('finishes the run on the other endpoint when one dies in the middle of it', async () => {
  const repo = createPythonRepo(path.join(work, 'repo'));
  const script = fixingScript();
  const holder: { a?: ScriptedModelServer } = {};
  // a answers two steps and dies with the third request in flight; b answers the rest.
  const a = await startScriptedModelServer({
    script: script.slice(0, 2),
    onExhausted: () => {
      void holder.a!.close();
      return { kind: 'hang' };
    },
    version: '0.11.0',
  });
  holder.a = a;
  const b = await startScriptedModelServer({ script: script.slice(2), version: '0.10.2' });
  servers.push(a, b);
  const outDir = path.join(work, 'out');
  const run = await runCli(solveArgs(repo.dir, outDir), {
    FROGNANO_MODEL_URL: `${a.baseUrl},${b.baseUrl}`,
    FROGNANO_MODEL_MAX_RETRIES: '1',
    FROGNANO_DATA_DIR: path.join(work, 'data'),
  });
  expect(run.code, run.stderr).toBe(0);
  expect(run.stderr.trim().split('\n').at(-1)).toMatch(
    /^\[frognano\] done: agent, 5 steps, 1 file/,
  );
  // The request a never answered went to b as it was.
  expect(b.chatRequests[0]!.rawBody).toBe(a.chatRequests[2]!.rawBody);
  const trajectory = Trajectory.parse(
    JSON.parse(await readFile(path.join(outDir, 'trajectory.json'), 'utf8')),
  );
  expect(
    trajectory.model_endpoints!.map((r) => [
      r.endpoint,
      r.first_step,
      r.last_step,
      r.server_version,
    ]),
  ).toEqual([
    [`127.0.0.1:${a.port}`, 0, 1, '0.11.0'],
    [`127.0.0.1:${b.port}`, 2, 4, '0.10.2'],
  ]);
  const summary = await readFile(path.join(outDir, 'summary.md'), 'utf8');
  expect(summary).toContain(
    `- \`127.0.0.1:${a.port}\`: steps 1–2, \`microsoft/FrogNano-4B-2609\` (max_model_len 131072, server \`scripted 0.11.0\`); the run left it: \`Connection error.`,
  );
  expect(summary).toContain(`- \`127.0.0.1:${b.port}\`: steps 3–5, `);
  const patch = await readFile(path.join(outDir, 'patch.diff'), 'utf8');
  expect(patch).toContain('+    return a + b');
}, 180_000);

it('makes an attempt wait for a model slot when the cap is reached, and says so', async () => {
  const repo = createPythonRepo(path.join(work, 'repo'));
  const queues = new Map([
    ['1', fixingScript()],
    ['2', fixingScript()],
  ]);
  const model = await startScriptedModelServer({
    onExhausted: (request: RecordedRequest) =>
      queues.get(String(request.headers[ATTEMPT_HEADER]))?.shift() ?? {
        kind: 'error',
        status: 400,
        body: { error: { message: 'exhausted' } },
      },
  });
  servers.push(model);
  const outDir = path.join(work, 'out');
  const run = await runCli([...solveArgs(repo.dir, outDir), '--attempts', '2'], {
    FROGNANO_MODEL_URL: model.baseUrl,
    FROGNANO_MODEL_MAX_LOOPS: '1',
    FROGNANO_DATA_DIR: path.join(work, 'data'),
  });
  expect(run.code, run.stderr).toBe(0);
  expect(run.stderr).toMatch(/\[frognano\] attempt [12] waiting for a model slot/);
  expect(run.stderr).toMatch(
    /\[frognano\] attempt [12] got a model slot after \d+\.\ds waiting, not counted against its time limit/,
  );
  // One loop at a time: every request of the first attempt, then every one of the second.
  const order = model.chatRequests.map((r) => String(r.headers[ATTEMPT_HEADER]));
  expect(order).toHaveLength(10);
  expect(new Set(order.slice(0, 5)).size).toBe(1);
  expect(new Set(order.slice(5)).size).toBe(1);
  expect(order[0]).not.toBe(order[5]);
}, 180_000);

it('says when an endpoint fails mid-run and the loop moves, never showing its credentials', async () => {
  const repo = createPythonRepo(path.join(work, 'repo'));
  const script = fixingScript();
  // a (behind a proxy with basic auth) answers one step, then its proxy answers an HTML 502.
  const a = await startScriptedModelServer({
    script: script.slice(0, 1),
    onExhausted: { kind: 'error', status: 502, body: '<html><h1>502 Bad Gateway</h1></html>' },
  });
  const b = await startScriptedModelServer({ script: script.slice(1) });
  servers.push(a, b);
  const password = 'Sw0rdfish-9';
  const withCredentials = (url: string) => url.replace('http://', `http://ops:${password}@`);
  const outDir = path.join(work, 'out');
  const run = await runCli(
    [
      ...solveArgs(repo.dir, outDir),
      '--model-url',
      `${withCredentials(a.baseUrl)},${withCredentials(b.baseUrl)}`,
    ],
    { FROGNANO_MODEL_MAX_RETRIES: '0', FROGNANO_DATA_DIR: path.join(work, 'data') },
  );
  expect(run.code, run.stderr).toBe(0);
  const logged = run.stderr
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as { msg: string; endpoint?: string });
  expect(logged).toContainEqual(
    expect.objectContaining({ msg: 'model endpoint marked down', endpoint: `127.0.0.1:${a.port}` }),
  );
  const written = await Promise.all(
    ['summary.md', 'trajectory.json', 'trajectory.html'].map((f) =>
      readFile(path.join(outDir, f), 'utf8'),
    ),
  );
  for (const text of [run.stderr, ...written]) {
    expect(text).not.toContain(password);
    expect(text).not.toContain(Buffer.from(`ops:${password}`).toString('base64'));
  }
}, 180_000);

it("ends with a short last line when the only endpoint answers a proxy's long HTML 502 page", async () => {
  const repo = createPythonRepo(path.join(work, 'repo'));
  const page = `<!DOCTYPE html>\n<html>\n<head><title>502 Bad Gateway</title></head>\n${'<p>filler of a proxy error page</p>\n'.repeat(200)}</html>\n`;
  const a = await startScriptedModelServer({
    script: fixingScript().slice(0, 1),
    onExhausted: { kind: 'error', status: 502, body: page },
  });
  servers.push(a);
  const outDir = path.join(work, 'out');
  const run = await runCli(solveArgs(repo.dir, outDir), {
    FROGNANO_MODEL_URL: a.baseUrl,
    FROGNANO_MODEL_MAX_RETRIES: '0',
    FROGNANO_DATA_DIR: path.join(work, 'data'),
  });
  expect(run.code, run.stderr).toBe(1);
  const last = run.stderr.trim().split('\n').at(-1)!;
  expect(last).toMatch(
    /^\[frognano\] failed \(llm_query_error\): the model endpoint stopped answering: 502 <!DOCTYPE html> <html> <head><title>502 Bad Gateway<\/title><\/head> <p>filler/,
  );
  expect(last.length).toBeLessThan(700);
}, 180_000);

it('says once that an endpoint is down at the start, and runs on the other', async () => {
  const repo = createPythonRepo(path.join(work, 'repo'));
  const gone = await startScriptedModelServer();
  await gone.close();
  const b = await startScriptedModelServer({ script: fixingScript() });
  servers.push(b);
  const outDir = path.join(work, 'out');
  const run = await runCli(
    [...solveArgs(repo.dir, outDir), '--model-url', `${gone.baseUrl},${b.baseUrl}`],
    { FROGNANO_DATA_DIR: path.join(work, 'data') },
  );
  expect(run.code, run.stderr).toBe(0);
  const about = run.stderr.split('\n').filter((line) => line.includes(`:${gone.port}`));
  // The warning a person reads, and the run's one log line that it left the endpoint out.
  expect(about, run.stderr).toEqual([
    expect.stringMatching(/^warning: model endpoint .* is unreachable \(ECONNREFUSED\)/),
    expect.stringContaining('"msg":"model endpoint left out"'),
  ]);
}, 180_000);
