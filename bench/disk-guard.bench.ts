// Disk guard overshoot: how far past FROGNANO_SANDBOX_DISK a fast writer (`dd` from
// /dev/zero into /testbed, the attack of issue 8) gets before the guard kills the sandbox.
// Printed per limit: the writer's rate, what the layer held when it was stopped, the
// overshoot ratio (held / limit) and the time from the start of the writer to its death. Measured
// both ways the guard can look: on the host (the layer read directly) and through the
// engine (`inspect?size=1` and `df`, as for a remote engine). Writes at most 3x each limit.
import { performance } from 'node:perf_hooks';
import pino from 'pino';
import { connectDocker, describeDockerEndpoint } from '../src/sandbox/docker-engine.js';
import { allocatedBytes, formatBytes, startDiskGuard } from '../src/sandbox/disk-guard.js';
import { createDockerSandbox, DEFAULT_SANDBOX_IMAGE } from '../src/sandbox/docker-sandbox.js';

const MiB = 1024 * 1024;
const LIMITS = [256 * MiB, 1024 * MiB, 2048 * MiB];

export default async function run(): Promise<void> {
  const docker = connectDocker();
  try {
    await docker.ping();
    await docker.getImage(DEFAULT_SANDBOX_IMAGE).inspect();
  } catch {
    console.log(
      `skipped: needs the Docker engine (${describeDockerEndpoint()}) and ${DEFAULT_SANDBOX_IMAGE}`,
    );
    return;
  }
  const log = pino({ level: 'silent' });
  for (const via of ['host', 'engine'] as const) {
    for (const limit of LIMITS) {
      const sandbox = await createDockerSandbox({
        runId: `bench-disk-${Date.now()}`,
        docker,
        logger: log,
        limits: { diskBytes: via === 'host' ? limit : 64 * 1024 * MiB, diskFloorBytes: 0 },
      });
      // The engine-side measurement runs as a second guard; the sandbox's own (host) guard
      // gets a limit out of reach, so only the engine guard can stop the writer.
      const container = docker.getContainer(sandbox.containerId);
      const engineGuard =
        via === 'engine'
          ? await startDiskGuard({
              docker,
              container,
              limitBytes: limit,
              floorBytes: 0,
              intervalMs: 2000,
              execUser: '1000:1000',
              log,
              runId: 'bench',
              measureVia: 'engine',
              onTrip: () => void container.kill({ signal: 'SIGKILL' }).catch(() => undefined),
            })
          : undefined;
      const started = performance.now();
      const count = Math.ceil((3 * limit) / MiB);
      await sandbox
        .exec(`dd if=/dev/zero of=/testbed/fill bs=1M count=${count} status=none`, {
          timeoutMs: 120_000,
        })
        .catch(() => undefined);
      // The writer is dead (or done) when its command returns.
      const stoppedAt = performance.now();
      engineGuard?.stop();
      const info = await container.inspect();
      const upper = (info.GraphDriver?.Data as { UpperDir?: string } | undefined)?.UpperDir;
      const held = upper ? await allocatedBytes(upper) : Number.NaN;
      const seconds = (stoppedAt - started) / 1000;
      // Time the writer kept going past the limit at its average rate: what a 700 MiB/s
      // writer (the attack's) would add past any limit, with the same guard reaction.
      const rate = held / seconds;
      const reactionS = Math.max(0, held - limit) / rate;
      console.log(
        `${via.padEnd(6)} limit ${formatBytes(limit).padStart(7)}: stopped at ${formatBytes(held).padStart(9)} after ${seconds.toFixed(2)} s (writer ~${Math.round(held / MiB / seconds)} MiB/s), overshoot ratio ${(held / limit).toFixed(2)}, reaction ${Math.round(reactionS * 1000)} ms (at 700 MiB/s: +${Math.round(700 * reactionS)} MB)${held >= 3 * limit ? ' (NOT STOPPED: the writer finished first)' : ''}`,
      );
      await sandbox.dispose();
    }
  }
}
