// Several model endpoints (issue 20), three figures in one run, each against a baseline
// measured here:
//   1. 40 short runs on 2 endpoints vs 1: goal >= 1.8x;
//   2. the share of each loop's requests one endpoint served: goal 100% while none fails;
//   3. one of two endpoints killed halfway: every run still ends with its patch.
// The endpoints are scripted OpenAI-compatible servers on real sockets, each in a process of its
// own as a GPU server is (helpers/curve-endpoint.ts), whose answers slow down as they batch more
// requests, along the curve measured for a 4B model on an H200 (B sequences at once cost 1.0,
// 1.07, 1.36, 1.8 times one at B = 1, 2, 4, 8); the one killed is killed with -9. Each run is the real agent
// loop (Leaf) on the real local sandbox (its files on disk, the patch captured with git)
// with its Model from one shared fleet (the in-process store, the default cap of
// FROGNANO_MODEL_MAX_LOOPS loops per endpoint, the client's default retries), as a worker's
// pipeline gets it. The pipeline's clone and verifications are left out, and each sandbox is
// made before the clock starts: none of them talks to the model, and on a 2-core host they
// cost 2 to 3 s of CPU per run, which would make the host, not the GPUs, the bottleneck.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { DEFAULT_MODEL_MAX_LOOPS } from '../src/model-fleet/fleet-types.js';
import { runLeaf } from '../src/leaf/loop.js';
import type { LeafRunResult } from '../src/leaf/loop.js';
import type { Sandbox } from '../src/leaf/sandbox.js';
import type { ModelFleet } from '../src/model-fleet/fleet.js';
import { openModelFleet } from '../src/model-fleet/open-fleet.js';
import { createLocalSandbox } from '../src/sandbox/local-sandbox.js';
import { ISSUE_TEXT, createPythonRepo } from '../test/support/python-repo.js';
import type { CurveEndpointMessage } from './helpers/curve-endpoint.js';
import { BASE_MS, REQUESTS_PER_RUN, batchCost } from './helpers/curve-endpoint-script.js';

const RUNS = 40;
/** Runs at once (as 10 workers of concurrency 2): more than two endpoints' slots. */
const RUN_CONCURRENCY = 20;
const SPEEDUP_GOAL = 1.8;
const CURVE_ENDPOINT = fileURLToPath(new URL('./helpers/curve-endpoint.ts', import.meta.url));

interface Measured {
  seconds: number;
  results: LeafRunResult[];
  /** Per run: requests each endpoint received, as the servers recorded them. */
  perRun: Map<number, number[]>;
}

export default async function run(): Promise<void> {
  const root = mkdtempSync(path.join(tmpdir(), 'bench-endpoints-'));
  try {
    const repo = createPythonRepo(path.join(root, 'src'));
    const one = await measure(root, repo.dir, 1, false);
    const two = await measure(root, repo.dir, 2, false);
    const killed = await measure(root, repo.dir, 2, true);
    report(one, two, killed);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}

function report(one: Measured, two: Measured, killed: Measured): void {
  const speedup = one.seconds / two.seconds;
  const bound = lockstepTime(1) / lockstepTime(2);
  console.log(
    `${RUNS} short runs (${REQUESTS_PER_RUN} model requests each, ${BASE_MS} ms alone, slower with the batch along the H200 curve), ${RUN_CONCURRENCY} at a time, cap ${DEFAULT_MODEL_MAX_LOOPS} loops per endpoint, local sandbox, ${cpus().length} cores:`,
  );
  console.log(`  1 endpoint   ${one.seconds.toFixed(1).padStart(6)} s  (baseline)`);
  console.log(`  2 endpoints  ${two.seconds.toFixed(1).padStart(6)} s`);
  console.log(
    `  speed-up     ${speedup.toFixed(3)}x   target >= ${SPEEDUP_GOAL}x  ${speedup >= SPEEDUP_GOAL ? 'MET' : 'MISSED'}   (the curve alone allows ${bound.toFixed(3)}x: ${RUNS} loops fill ${2 * DEFAULT_MODEL_MAX_LOOPS} slots ${(RUNS / (2 * DEFAULT_MODEL_MAX_LOOPS)).toFixed(1)} times)`,
  );
  for (const [name, m] of [
    ['1 endpoint', one],
    ['2 endpoints', two],
  ] as const) {
    const shares = [...m.perRun.values()].map((counts) => {
      const total = counts.reduce((a, b) => a + b, 0);
      return total === 0 ? 0 : Math.max(...counts) / total;
    });
    const min = Math.min(...shares);
    const spread = m.perRun.size === 0 ? '' : loopsPerEndpoint(m.perRun);
    console.log(
      `  ${name}: each loop's requests on one endpoint: lowest ${(min * 100).toFixed(1)}% of ${m.perRun.size} loops${spread}  target 100%  ${min === 1 ? 'MET' : 'MISSED'}`,
    );
  }
  const patched = killed.results.filter((r) => r.exitReason === 'agent' && r.patch !== '');
  const moved = killed.results.filter(
    (r) => (r.trajectory.model_endpoints?.length ?? 0) > 1,
  ).length;
  console.log(
    `  2 endpoints, one killed halfway: ${patched.length} of ${RUNS} runs ended with their patch, ${moved} loops moved to the other endpoint mid-loop, ${killed.seconds.toFixed(1)} s (${(killed.seconds / two.seconds).toFixed(2)}x the 2-endpoint time)  target ${RUNS} of ${RUNS}  ${patched.length === RUNS ? 'MET' : 'MISSED'}`,
  );
}

/**
 * The model time alone of RUNS loops on `endpoints` endpoints, in waves of one loop per slot:
 * each full wave at the cap's batch cost, the last one at its own, spread over the endpoints.
 */
function lockstepTime(endpoints: number): number {
  const slots = endpoints * DEFAULT_MODEL_MAX_LOOPS;
  const full = Math.floor(RUNS / slots);
  const rest = RUNS - full * slots;
  const wave = (perEndpoint: number) => REQUESTS_PER_RUN * BASE_MS * batchCost(perEndpoint);
  return full * wave(DEFAULT_MODEL_MAX_LOOPS) + (rest > 0 ? wave(Math.ceil(rest / endpoints)) : 0);
}

/** ", loops per endpoint a/b": how the least-loaded choice spread them. */
function loopsPerEndpoint(perRun: Map<number, number[]>): string {
  const counts = [...perRun.values()][0]!.map(() => 0);
  for (const c of perRun.values()) counts[c.indexOf(Math.max(...c))]!++;
  return counts.length > 1 ? ` (loops per endpoint ${counts.join('/')})` : '';
}

async function measure(
  root: string,
  repo: string,
  endpoints: number,
  killHalfway: boolean,
): Promise<Measured> {
  const name = `${endpoints}${killHalfway ? '-killed' : ''}`;
  const servers: CurveEndpoint[] = [];
  try {
    for (let i = 0; i < endpoints; i++) {
      // Halfway through its share of the requests, the second endpoint dies with its requests
      // in flight.
      const killAfter = killHalfway && i === 1 ? (RUNS * REQUESTS_PER_RUN) / endpoints / 2 : 0;
      servers.push(await startCurveEndpoint(killAfter));
    }
    const fleet = openModelFleet({ urls: servers.map((s) => s.baseUrl).join(','), model: {} });
    // Made before the clock starts: a run's sandbox phase comes before its loop takes a slot.
    const sandboxes = await Promise.all(
      Array.from({ length: RUNS }, () => createLocalSandbox({ sourceDir: repo, tempRoot: root })),
    );
    try {
      const started = performance.now();
      const results = await pool(RUNS, RUN_CONCURRENCY, (n) => oneRun(sandboxes[n - 1]!, fleet, n));
      const seconds = (performance.now() - started) / 1000;
      const failed = results.filter((r) => r.exitReason !== 'agent' || r.patch === '');
      if (!killHalfway && failed.length > 0)
        throw new Error(`${name}: ${failed.length} runs failed: ${failed[0]!.error ?? ''}`);
      return { seconds, results, perRun: killHalfway ? new Map() : await perRunCounts(servers) };
    } finally {
      await fleet.close();
      await Promise.all(sandboxes.map((s) => s.dispose()));
    }
  } finally {
    for (const s of servers) s.stop();
  }
}

interface CurveEndpoint {
  baseUrl: string;
  /** The requests it received per bench run. */
  perRun(): Promise<Record<string, number>>;
  stop(): void;
}

async function startCurveEndpoint(killAfter: number): Promise<CurveEndpoint> {
  const child: ChildProcess = spawn(process.execPath, ['--import', 'tsx', CURVE_ENDPOINT], {
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    env: { ...process.env, KILL_AFTER: String(killAfter) },
  });
  const next = () =>
    new Promise<CurveEndpointMessage>((resolve, reject) => {
      const onExit = (code: number | null, signal: string | null) =>
        reject(new Error(`a scripted endpoint exited (${signal ?? code}) before it answered`));
      child.once('exit', onExit);
      child.once('message', (message: CurveEndpointMessage) => {
        child.off('exit', onExit);
        resolve(message);
      });
    });
  const ready = await next();
  if (!('baseUrl' in ready)) throw new Error('a scripted endpoint did not tell its URL');
  return {
    baseUrl: ready.baseUrl,
    perRun: async () => {
      const answer = next();
      child.send('perRun');
      const message = await answer;
      if (!('perRun' in message)) throw new Error('a scripted endpoint did not count its requests');
      return message.perRun;
    },
    stop: () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    },
  };
}

/** One run's agent loop: a Model pinned by the fleet, its slot given back when it ends. */
async function oneRun(sandbox: Sandbox, fleet: ModelFleet, n: number): Promise<LeafRunResult> {
  const model = fleet.loop();
  try {
    return await runLeaf({
      model,
      sandbox,
      task: `${ISSUE_TEXT}\n\n(bench run ${n})`,
      instanceId: `bench/calc#${n}`,
      maxSteps: REQUESTS_PER_RUN,
    });
  } finally {
    await model.release();
  }
}

async function perRunCounts(servers: readonly CurveEndpoint[]): Promise<Map<number, number[]>> {
  const perRun = new Map<number, number[]>();
  const counted = await Promise.all(servers.map((s) => s.perRun()));
  counted.forEach((byRun, i) => {
    for (const [mark, requests] of Object.entries(byRun)) {
      const n = Number(mark);
      if (!Number.isInteger(n)) throw new Error('a request without its run mark');
      const counts = perRun.get(n) ?? servers.map(() => 0);
      counts[i] = requests;
      perRun.set(n, counts);
    }
  });
  return perRun;
}

/** `count` jobs, at most `limit` at once, results in job order. */
async function pool<T>(count: number, limit: number, job: (n: number) => Promise<T>): Promise<T[]> {
  const results: T[] = new Array<T>(count);
  let next = 0;
  const lane = async (): Promise<void> => {
    while (next < count) {
      const n = next++;
      results[n] = await job(n + 1);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, count) }, lane));
  return results;
}
