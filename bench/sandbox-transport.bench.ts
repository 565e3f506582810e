// Tool transport latency: Read, Edit and Glob through DockerSandbox (one long-lived helper,
// one round trip per call) and the real tools, against a baseline measured in the same run
// and the same container: per call, copy a request file in (putArchive) and spawn one
// `docker exec python3 runner.py request.json`, as Leaf's own Kubernetes runtime does.
// Target: median at most 0.25x the baseline for each tool.
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { PassThrough } from 'node:stream';
import type Docker from 'dockerode';
import pino from 'pino';
import tar from 'tar-stream';
import { executeTool } from '../src/leaf/tools.js';
import { connectDocker, describeDockerEndpoint } from '../src/sandbox/docker-engine.js';
import {
  createDockerSandbox,
  DEFAULT_SANDBOX_IMAGE,
  SANDBOX_HOME,
} from '../src/sandbox/docker-sandbox.js';

const ITERATIONS = 24;
const WARMUP = 4;
const TARGET_RATIO = 0.25;
const BENCH_DIR = `${SANDBOX_HOME}/.frognano-bench`;

/** What the baseline runs per call: the same work as the tools, in a fresh process. */
const RUNNER_PY = String.raw`
import glob, json, os, sys
req = json.load(open(sys.argv[1]))
cwd = "/testbed"
def display(p):
    r = os.path.realpath(p)
    return os.path.relpath(r, cwd) if r.startswith(cwd + "/") else r
if req["tool"] == "Read":
    p = os.path.join(cwd, req["path"])
    lines = open(p, encoding="utf-8", errors="replace").read().splitlines()
    out = display(p) + "\n" + "\n".join("%d. %s" % (i + 1, l) for i, l in enumerate(lines))
elif req["tool"] == "Edit":
    p = os.path.join(cwd, req["path"])
    text = open(p, encoding="utf-8").read()
    n = text.count(req["old"])
    open(p, "w", encoding="utf-8").write(text.replace(req["old"], req["new"], 1))
    out = "Edited %s (%d replacement%s)." % (display(p), n, "" if n == 1 else "s")
else:
    ms = sorted(display(m) for m in glob.glob(os.path.join(cwd, req["pattern"]), recursive=True) if os.path.isfile(m))
    out = "\n".join(ms[:1000]) if ms else "No files matched."
print(json.dumps({"output": out[:20000]}))
`;

async function makeRepository(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'frognano-bench-repo-'));
  for (let p = 0; p < 8; p += 1) {
    await mkdir(join(dir, 'pkg', `sub${p}`), { recursive: true });
    for (let m = 0; m < 12; m += 1) {
      const body = Array.from(
        { length: 120 },
        (_, i) => `def f_${m}_${i}(x):\n    return x + ${i}  # MARK_${i}`,
      ).join('\n');
      await writeFile(join(dir, 'pkg', `sub${p}`, `mod_${m}.py`), `${body}\nVALUE = "VALUE_A"\n`);
    }
  }
  await writeFile(join(dir, 'README.md'), '# bench\n');
  return dir;
}

function tarOf(files: Record<string, string>): tar.Pack {
  const pack = tar.pack();
  for (const [name, content] of Object.entries(files)) {
    pack.entry({ name, uid: 1000, gid: 1000, mode: 0o644 }, content);
  }
  pack.finalize();
  return pack;
}

/** One baseline call: copy the request in, spawn a process, read its answer and status. */
async function baselineCall(docker: Docker, containerId: string, request: object): Promise<string> {
  const container = docker.getContainer(containerId);
  await container.putArchive(
    tarOf({ 'request.json': JSON.stringify(request) }) as unknown as NodeJS.ReadableStream,
    {
      path: BENCH_DIR,
    },
  );
  const exec = await container.exec({
    Cmd: ['python3', `${BENCH_DIR}/runner.py`, `${BENCH_DIR}/request.json`],
    User: '1000:1000',
    WorkingDir: '/testbed',
    AttachStdout: true,
    AttachStderr: true,
  });
  const stream = await exec.start({});
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  const chunks: Buffer[] = [];
  stdout.on('data', (chunk: Buffer) => chunks.push(chunk));
  stderr.resume();
  docker.modem.demuxStream(stream, stdout, stderr);
  await new Promise<void>((resolve, reject) => {
    stream.on('end', resolve);
    stream.on('error', reject);
  });
  const info = await exec.inspect();
  if (info.ExitCode !== 0)
    throw new Error(`baseline runner failed with exit code ${info.ExitCode}`);
  return (JSON.parse(Buffer.concat(chunks).toString('utf8')) as { output: string }).output;
}

async function expectOne(output: Promise<string>): Promise<string> {
  const text = await output;
  if (!text.includes('(1 replacement)'))
    throw new Error(`sandbox-transport: unexpected Edit result: ${text}`);
  return text;
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

async function timeCalls(count: number, call: (i: number) => Promise<unknown>): Promise<number[]> {
  const times: number[] = [];
  for (let i = 0; i < WARMUP + count; i += 1) {
    const start = performance.now();
    await call(i);
    if (i >= WARMUP) times.push(performance.now() - start);
  }
  return times;
}

export default async function run(): Promise<void> {
  const docker = connectDocker();
  try {
    await docker.ping();
    await docker.getImage(DEFAULT_SANDBOX_IMAGE).inspect();
  } catch {
    console.log(
      `sandbox-transport: SKIPPED: needs a Docker engine (${describeDockerEndpoint()}) and the image ${DEFAULT_SANDBOX_IMAGE} (sandbox/build-offline.sh)`,
    );
    return;
  }
  const repo = await makeRepository();
  const sandbox = await createDockerSandbox({
    runId: `bench-transport-${process.pid}`,
    repo: 'bench/transport',
    logger: pino({ level: process.env.BENCH_LOG ?? 'silent' }),
  });
  try {
    await sandbox.copyIn(repo);
    await sandbox.writeFile(`${BENCH_DIR}/runner.py`, Buffer.from(RUNNER_PY));
    const target = 'pkg/sub3/mod_7.py';
    const edits = ['VALUE_A', 'VALUE_B'];
    const tools: Record<
      string,
      { fast: (i: number) => Promise<string>; baseline: (i: number) => Promise<string> }
    > = {
      Read: {
        fast: () => executeTool(sandbox, 'Read', JSON.stringify({ path: target })),
        baseline: () => baselineCall(docker, sandbox.containerId, { tool: 'Read', path: target }),
      },
      Edit: {
        // Alternate A->B and B->A so every call makes exactly one replacement (each path
        // runs an even number of calls, so the next path starts from VALUE_A again).
        fast: (i) =>
          expectOne(
            executeTool(
              sandbox,
              'Edit',
              JSON.stringify({
                path: target,
                old_string: edits[i % 2],
                new_string: edits[(i + 1) % 2],
              }),
            ),
          ),
        baseline: (i) =>
          expectOne(
            baselineCall(docker, sandbox.containerId, {
              tool: 'Edit',
              path: target,
              old: edits[i % 2],
              new: edits[(i + 1) % 2],
            }),
          ),
      },
      Glob: {
        fast: () => executeTool(sandbox, 'Glob', JSON.stringify({ pattern: '**/*.py' })),
        baseline: () =>
          baselineCall(docker, sandbox.containerId, { tool: 'Glob', pattern: '**/*.py' }),
      },
    };
    // Both paths must do the real work: check one answer of each before timing.
    const readFast = await tools.Read!.fast(0);
    const readBase = await tools.Read!.baseline(0);
    if (!readFast.includes('MARK_119') || !readBase.includes('MARK_119')) {
      throw new Error('sandbox-transport: Read did not return the file on both paths');
    }
    const globFast = await tools.Glob!.fast(0);
    if (globFast.split('\n').length !== 96)
      throw new Error(`sandbox-transport: Glob found ${globFast.split('\n').length} files, not 96`);
    console.log(
      `sandbox-transport: median of ${ITERATIONS} calls each (after ${WARMUP} warm-up), same container`,
    );
    let allMet = true;
    for (const [name, paths] of Object.entries(tools)) {
      const fast = median(await timeCalls(ITERATIONS, paths.fast));
      const base = median(await timeCalls(ITERATIONS, paths.baseline));
      const ratio = fast / base;
      allMet &&= ratio <= TARGET_RATIO;
      console.log(
        `  ${name.padEnd(5)} helper ${fast.toFixed(2).padStart(7)} ms   copy+exec baseline ${base.toFixed(2).padStart(7)} ms   ratio ${ratio.toFixed(3)}x   target <= ${TARGET_RATIO}x ${ratio <= TARGET_RATIO ? 'met' : 'MISSED'}`,
      );
    }
    const finalText = (await sandbox.readFile(target)).data.toString();
    if (!finalText.includes('VALUE = "VALUE_'))
      throw new Error('sandbox-transport: Edit corrupted the file');
    console.log(`  overall: ${allMet ? 'all targets met' : 'TARGET MISSED'}`);
  } finally {
    await sandbox.dispose();
    await rm(repo, { recursive: true, force: true });
  }
}
