// Setup snapshots: time from the start of a run to its first model request, cold (setup
// runs, then the snapshot is committed) against warm (a snapshot hit: no setup), measured in
// the same run on the same repository. The setup does real work offline: it creates a
// virtualenv (ensurepip), builds and installs a local package from an sdist in the tree with
// --no-index, and byte-compiles the venv. Target: warm at most 0.2x cold.
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import pino from 'pino';
import {
  assertDockerReachable,
  connectDocker,
  describeDockerEndpoint,
} from '../src/sandbox/docker-engine.js';
import { DEFAULT_SANDBOX_IMAGE } from '../src/sandbox/docker-sandbox.js';
import { runPipeline } from '../src/runner/run.js';
import type { RunResult } from '../src/runner/run-types.js';
import { createPythonRepo } from '../test/support/python-repo.js';
import { finalAnswer, startScriptedModelServer } from '../test/support/scripted-model-server.js';
import { removeSnapshotImages } from '../test/support/snapshot-images.js';

const TARGET_RATIO = 0.2;
const COLD_RUNS = 2;
const WARM_RUNS = 3;

const SETUP = [
  'python3 -m venv --system-site-packages ~/venv',
  '~/venv/bin/pip install --quiet --no-index --no-build-isolation --no-deps vendor/fastmath-0.1.tar.gz',
  '~/venv/bin/python -m compileall -q ~/venv',
];

export default async function run(): Promise<void> {
  const docker = connectDocker();
  try {
    await assertDockerReachable(docker);
    await docker.getImage(DEFAULT_SANDBOX_IMAGE).inspect();
  } catch {
    console.log(
      `warm-start: SKIPPED (needs a Docker engine at ${describeDockerEndpoint()} and the image ${DEFAULT_SANDBOX_IMAGE})`,
    );
    return;
  }
  const root = mkdtempSync(path.join(tmpdir(), 'bench-warm-'));
  const repo = makeRepo(root);
  const removeSnapshots = (): Promise<void> => removeSnapshotImages(docker, [repo]);

  try {
    await removeSnapshots();
    const cold: number[] = [];
    const warm: number[] = [];
    for (let i = 0; i < COLD_RUNS; i++) {
      await removeSnapshots();
      const { ms, result } = await timeToFirstRequest(root, repo, `bench-cold-${i}`);
      if (result.snapshotHit !== false) throw new Error('a cold run hit a snapshot');
      cold.push(ms);
    }
    for (let i = 0; i < WARM_RUNS; i++) {
      const { ms, result } = await timeToFirstRequest(root, repo, `bench-warm-${i}`);
      if (result.snapshotHit !== true)
        throw new Error(
          `warm run ${i} missed the snapshot (was ${DEFAULT_SANDBOX_IMAGE} rebuilt meanwhile?) ${result.error ?? ''}`,
        );
      warm.push(ms);
    }
    const c = median(cold);
    const w = median(warm);
    const ratio = w / c;
    console.log(`time to first model request (setup: venv + sdist install + compileall, offline)`);
    console.log(
      `  cold (setup + snapshot commit) median ${fmt(c)} of [${cold.map(fmt).join(', ')}]`,
    );
    console.log(
      `  warm (snapshot hit)            median ${fmt(w)} of [${warm.map(fmt).join(', ')}]`,
    );
    console.log(
      `  warm/cold ${ratio.toFixed(3)}x  target <= ${TARGET_RATIO}x  ${ratio <= TARGET_RATIO ? 'MET' : 'MISSED'}`,
    );
  } finally {
    await removeSnapshots();
    rmSync(root, { recursive: true, force: true });
  }
}

async function timeToFirstRequest(
  root: string,
  repo: string,
  runId: string,
): Promise<{ ms: number; result: RunResult }> {
  let firstRequestAt: number | undefined;
  const server = await startScriptedModelServer({
    script: [
      () => {
        firstRequestAt ??= performance.now();
        return finalAnswer('done');
      },
    ],
  });
  try {
    const started = performance.now();
    const result = await runPipeline(
      {
        runId: `${runId}-${Date.now()}`,
        instanceId: 'bench/fastmath#1',
        repo,
        issueText: 'benchmark',
        sandbox: 'docker',
        outDir: path.join(root, 'out', runId),
      },
      {
        modelConfig: { baseUrl: server.baseUrl, maxRetries: 0 },
        dataDir: path.join(root, 'data'),
        logger: pino({ level: process.env.BENCH_LOG ?? 'silent' }),
      },
    );
    if (result.outcome !== 'completed' || firstRequestAt === undefined) {
      throw new Error(
        `benchmark run ${runId} ended ${result.outcome}: ${result.error ?? ''} ${result.setupTail ?? ''}`,
      );
    }
    return { ms: firstRequestAt - started, result };
  } finally {
    await server.close();
  }
}

/** The calc fixture plus a local package shipped as an sdist, installed by setup. */
function makeRepo(root: string): string {
  const pkg = path.join(root, 'fastmath-src');
  mkdirSync(path.join(pkg, 'fastmath'), { recursive: true });
  writeFileSync(
    path.join(pkg, 'setup.py'),
    "from setuptools import setup\nsetup(name='fastmath', version='0.1', packages=['fastmath'])\n",
  );
  // Enough code that building, installing and byte-compiling it is not free.
  const body = Array.from(
    { length: 3000 },
    (_, i) => `def f${i}(x):\n    return x * ${i} + ${i % 7}\n`,
  ).join('\n');
  writeFileSync(path.join(pkg, 'fastmath', '__init__.py'), `${body}\n`);
  // createPythonRepo commits whatever is already in its directory: put the sdist there first.
  const vendor = path.join(root, 'repo', 'calc', 'vendor');
  mkdirSync(vendor, { recursive: true });
  execFileSync('tar', [
    '-czf',
    path.join(vendor, 'fastmath-0.1.tar.gz'),
    '-C',
    root,
    '--transform',
    's/^fastmath-src/fastmath-0.1/',
    'fastmath-src',
  ]);
  const created = createPythonRepo(path.join(root, 'repo'), {
    '.github/frognano.yml': `setup:\n${SETUP.map((c) => `  - ${c}`).join('\n')}\ntest: ~/venv/bin/python -m pytest -q\n`,
    'requirements.txt': 'fastmath==0.1\n',
  });
  return created.dir;
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

function fmt(ms: number): string {
  return `${(ms / 1000).toFixed(2)}s`;
}
