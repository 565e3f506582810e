// Host memory and event-loop stalls while the agent reads and edits a 64 MiB file of
// newlines (issue 8, item 3), on each sandbox this machine can run. Before, the host decoded
// and numbered every line: Read of such a file took the host to 4.8 GB RSS and froze the event
// loop for about 25 s. Targets: host peak RSS at most +100 MB, longest stall at most 100 ms.
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import type { Sandbox } from '../src/leaf/sandbox.js';
import { executeTool } from '../src/leaf/tools.js';
import { connectDocker, describeDockerEndpoint } from '../src/sandbox/docker-engine.js';
import { createDockerSandbox, DEFAULT_SANDBOX_IMAGE } from '../src/sandbox/docker-sandbox.js';
import { createLocalSandbox } from '../src/sandbox/local-sandbox.js';

const MiB = 1024 * 1024;
const FILE_BYTES = 64 * MiB;
const TARGET_RSS_MB = 100;
const TARGET_STALL_MS = 100;
const OLD_READ = 'old: +4.8 GB, ~25 s stall';
const OLD_EDIT = 'old: the same decode-and-split of the whole file on the host';

interface Figures {
  rssMb: number;
  stallMs: number;
  ms: number;
  observation: string;
}

/** Peak RSS growth (from the kernel's high-water mark) and the longest event-loop stall. */
async function measure(work: () => Promise<string>): Promise<Figures> {
  global.gc?.();
  const before = process.memoryUsage().rss;
  const peakBefore = process.resourceUsage().maxRSS * 1024;
  const histogram = monitorEventLoopDelay({ resolution: 5 });
  histogram.enable();
  let sampledPeak = before;
  const sampler = setInterval(() => {
    sampledPeak = Math.max(sampledPeak, process.memoryUsage().rss);
  }, 5);
  const started = performance.now();
  const observation = await work();
  const ms = performance.now() - started;
  clearInterval(sampler);
  histogram.disable();
  const peakAfter = process.resourceUsage().maxRSS * 1024;
  // maxRSS only moves when this process sets a new record; the sampler covers the rest.
  const peak = Math.max(sampledPeak, peakAfter > peakBefore ? peakAfter : 0);
  return {
    rssMb: Math.max(0, peak - before) / MiB,
    stallMs: histogram.max / 1e6,
    ms,
    observation,
  };
}

function line(label: string, figures: Figures, old: string): string {
  const ok = figures.rssMb <= TARGET_RSS_MB && figures.stallMs <= TARGET_STALL_MS;
  const head = figures.observation.split('\n')[0]?.slice(0, 60);
  return (
    `${label.padEnd(22)} host RSS +${figures.rssMb.toFixed(1)} MB (target <= ${TARGET_RSS_MB}), ` +
    `longest stall ${figures.stallMs.toFixed(1)} ms (target <= ${TARGET_STALL_MS}), ` +
    `${(figures.ms / 1000).toFixed(2)} s [${old}] ${ok ? 'OK' : 'MISSED'}  (${head}…)`
  );
}

async function benchSandbox(name: string, sandbox: Sandbox): Promise<void> {
  const made = await sandbox.exec(
    `head -c ${FILE_BYTES} /dev/zero | tr '\\0' '\\n' > nl.txt && cp nl.txt nl-edit.txt`,
    { timeoutMs: 120_000 },
  );
  if (made.exitCode !== 0) throw new Error(`could not make the 64 MiB file: ${made.stderr}`);
  const read = await measure(() => executeTool(sandbox, 'Read', '{"file_path": "nl.txt"}'));
  console.log(line(`${name}: Read`, read, OLD_READ));
  const edit = await measure(() =>
    executeTool(
      sandbox,
      'Edit',
      JSON.stringify({
        file_path: 'nl-edit.txt',
        old_string: '\n\n',
        new_string: '\n',
        replace_all: true,
      }),
    ),
  );
  console.log(line(`${name}: Edit`, edit, OLD_EDIT));
}

export default async function run(): Promise<void> {
  console.log(`64 MiB of newlines (${FILE_BYTES / MiB} Mi lines): Read, then Edit replace_all`);
  const repo = await mkdtemp(join(tmpdir(), 'frognano-bench-read-'));
  await writeFile(join(repo, 'README'), 'bench\n');
  const local = await createLocalSandbox({ sourceDir: repo });
  try {
    await benchSandbox('local', local);
  } finally {
    await local.dispose();
  }
  let dockerReachable = true;
  try {
    await connectDocker().ping();
  } catch {
    dockerReachable = false;
    console.log(`docker: skipped (no engine at ${describeDockerEndpoint()})`);
  }
  if (dockerReachable) {
    const docker = await createDockerSandbox({
      runId: `bench-read-${process.pid}`,
      image: DEFAULT_SANDBOX_IMAGE,
      logger: pino({ level: 'silent' }),
    });
    try {
      await docker.copyIn(repo);
      await benchSandbox('docker', docker);
    } finally {
      await docker.dispose();
    }
  }
  await rm(repo, { recursive: true, force: true });
}
