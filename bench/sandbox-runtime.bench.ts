// gVisor against runc: the same pytest run (a repository with 40 test files of 25 tests each,
// file and subprocess work included, as a test suite does) in a hardened sandbox under each
// runtime, plus the sandbox start and one tool round trip. Printed per measure as the median of
// a few runs each and the ratio gVisor / runc (1.00 = as fast). Skipped without runsc.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import pino from 'pino';
import { executeTool } from '../src/leaf/tools.js';
import { connectDocker, describeDockerEndpoint } from '../src/sandbox/docker-engine.js';
import { createDockerSandbox, DEFAULT_SANDBOX_IMAGE } from '../src/sandbox/docker-sandbox.js';
import { GVISOR_RUNTIME, RUNC_RUNTIME } from '../src/sandbox/sandbox-runtime.js';
import { createPythonRepo } from '../test/support/python-repo.js';

const RUNS = 3;
const FILES = 40;
const TESTS_PER_FILE = 25;

function suite(): Record<string, string> {
  const files: Record<string, string> = {};
  for (let f = 0; f < FILES; f++) {
    const tests = Array.from(
      { length: TESTS_PER_FILE },
      (_, t) =>
        `def test_${t}(tmp_path):\n    p = tmp_path / "x.txt"\n    p.write_text(str(add(${t}, ${f})))\n    assert int(p.read_text()) == ${t + f}\n` +
        (t === 0 ? '    assert subprocess.run(["true"]).returncode == 0\n' : ''),
    );
    files[`tests/test_f${f}.py`] =
      `import subprocess\nfrom calc import add\n\n\n${tests.join('\n\n')}`;
  }
  files['calc.py'] = 'def add(a, b):\n    return a + b\n\n\ndef mul(a, b):\n    return a * b\n';
  files['pytest.ini'] = '[pytest]\naddopts = -q -p no:cacheprovider\npythonpath = .\n';
  return files;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

type Times = Record<string, number[]>;

/** One run under `runtime`, its times added to `times`. */
async function measureOnce(runtime: string, repoDir: string, times: Times): Promise<void> {
  const add = (what: string, ms: number) => (times[what] ??= []).push(ms);
  let t = performance.now();
  const sandbox = await createDockerSandbox({
    runId: `bench-runtime-${Date.now()}`,
    docker: connectDocker(),
    logger: pino({ level: 'silent' }),
    runtime,
  });
  add('start', performance.now() - t);
  try {
    await sandbox.copyIn(repoDir);
    t = performance.now();
    const ran = await sandbox.exec('python3 -m pytest', { timeoutMs: 600_000 });
    add('pytest', performance.now() - t);
    if (ran.exitCode !== 0)
      throw new Error(`pytest failed under ${runtime}: ${ran.stdout.toString().slice(-300)}`);
    t = performance.now();
    for (let k = 0; k < 20; k++)
      await executeTool(sandbox, 'Read', JSON.stringify({ file_path: 'calc.py' }));
    add('Read round trip', (performance.now() - t) / 20);
  } finally {
    await sandbox.dispose();
  }
}

export default async function run(): Promise<void> {
  const docker = connectDocker();
  try {
    await docker.getImage(DEFAULT_SANDBOX_IMAGE).inspect();
  } catch {
    console.log(
      `skipped: needs the Docker engine (${describeDockerEndpoint()}) and ${DEFAULT_SANDBOX_IMAGE}`,
    );
    return;
  }
  const runtimes = Object.keys(((await docker.info()) as { Runtimes?: object }).Runtimes ?? {});
  if (!runtimes.includes(GVISOR_RUNTIME)) {
    console.log('skipped: the engine offers no runsc runtime (see .ci/run to register it)');
    return;
  }
  const root = mkdtempSync(path.join(tmpdir(), 'bench-runtime-'));
  try {
    const repo = createPythonRepo(root, suite());
    // Interleaved, so a machine busy with something else weighs on both alike.
    const runc: Times = {};
    const gvisor: Times = {};
    for (let i = 0; i < RUNS; i++) {
      await measureOnce(RUNC_RUNTIME, repo.dir, runc);
      await measureOnce(GVISOR_RUNTIME, repo.dir, gvisor);
    }
    console.log(`pytest: ${FILES * TESTS_PER_FILE + 2} tests; median of ${RUNS} runs each`);
    for (const what of Object.keys(runc)) {
      const [a, b] = [median(runc[what]!), median(gvisor[what]!)];
      console.log(
        `${what.padEnd(16)} runc ${a.toFixed(0).padStart(6)} ms  gVisor ${b.toFixed(0).padStart(6)} ms  gVisor/runc ${(b / a).toFixed(2)}x`,
      );
    }
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}
