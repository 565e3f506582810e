// Which OCI runtime the agent's and verification's containers run under: gVisor (`runsc`) when
// the engine offers it and a test start under it works, runc otherwise or when the operator
// says so (FROGNANO_SANDBOX_RUNTIME). A test start does more than start: gVisor releases that
// lack a syscall flag the image's tools use (coreutils 9's `ls -l` and `stat` call statx with
// AT_NO_AUTOMOUNT, which gVisor 2022-12 refuses with EINVAL) would break the model's shell.
import type Docker from 'dockerode';
import type { Logger } from '../log.js';
import { SANDBOX_USER } from './docker-sandbox-options.js';
import { errorText } from './engine-error-text.js';

export const GVISOR_RUNTIME = 'runsc';
export const RUNC_RUNTIME = 'runc';

/** The runtime chosen and why, as `doctor`, the run's record and the pull request show it. */
export interface SandboxRuntime {
  /** The engine runtime's name (`runsc`, `runc`, or the operator's). */
  name: string;
  /** One sentence: why this runtime. */
  reason: string;
}

// What the test start runs: Python for the tool helper (without it nothing works), then the
// model's everyday file tools (exit 91: the runtime runs, the shell the model knows does not).
const TEST_COMMAND =
  'python3 -c pass || exit 90; ls -l / >/dev/null && stat -c %s / >/dev/null || exit 91';
const TOOLS_BROKEN = 91;
const TEST_TIMEOUT_MS = 60_000;
/** Marks a test start's container (removed as soon as it ends; the reaper removes orphans). */
export const RUNTIME_TEST_LABEL = 'frognano.runtime-test';
/** A test start ends within TEST_TIMEOUT_MS; one whose container is older was left by a kill. */
const ORPHAN_AGE_MS = 10 * 60_000;

/** One answer per engine, wish and image: a test start costs a container. */
const chosen = new Map<string, Promise<SandboxRuntime>>();

/**
 * The runtime for the agent's and verification's containers. `wanted` is
 * FROGNANO_SANDBOX_RUNTIME: unset picks gVisor when it works here; `runc` opts out; another
 * name must be one the engine offers and start the image, else this throws one line saying so.
 */
export function chooseSandboxRuntime(
  docker: Docker,
  options: { wanted: string | undefined; image: string; logger?: Logger },
): Promise<SandboxRuntime> {
  const modem = docker.modem as { socketPath?: unknown; host?: unknown; port?: unknown };
  const key = JSON.stringify([
    modem.socketPath,
    modem.host,
    modem.port,
    options.wanted,
    options.image,
  ]);
  let answer = chosen.get(key);
  if (!answer) {
    answer = decide(docker, options);
    chosen.set(key, answer);
    // A failed look-up (the engine away) is asked again next time.
    answer.catch(() => chosen.delete(key));
  }
  return answer;
}

async function decide(
  docker: Docker,
  { wanted, image, logger }: { wanted: string | undefined; image: string; logger?: Logger },
): Promise<SandboxRuntime> {
  if (wanted === RUNC_RUNTIME)
    return { name: RUNC_RUNTIME, reason: 'FROGNANO_SANDBOX_RUNTIME=runc opts out of gVisor' };
  const offered = Object.keys(((await docker.info()) as { Runtimes?: object }).Runtimes ?? {});
  const name = wanted ?? GVISOR_RUNTIME;
  if (!offered.includes(name)) {
    if (wanted !== undefined)
      throw new Error(
        `FROGNANO_SANDBOX_RUNTIME=${wanted}: the Docker engine offers no such runtime (it has ${offered.join(', ')}); register it in /etc/docker/daemon.json or unset the variable`,
      );
    return {
      name: RUNC_RUNTIME,
      reason: `the Docker engine offers no ${GVISOR_RUNTIME} runtime (gVisor); register it to isolate the agent further`,
    };
  }
  const test = await testStart(docker, name, image);
  if (test.ok) {
    const how = wanted === undefined ? 'the engine offers it' : `FROGNANO_SANDBOX_RUNTIME=${name}`;
    return { name, reason: `${how} and a test start under it succeeded` };
  }
  logger?.warn({ runtime: name, failed: test.failed }, 'sandbox runtime test start failed');
  if (wanted === undefined)
    return {
      name: RUNC_RUNTIME,
      reason: `a test start under ${GVISOR_RUNTIME} failed (${test.failed}); runc instead`,
    };
  // The operator's choice stands when only the tools check failed; it is said wherever shown.
  if (test.toolsOnly)
    return { name, reason: `FROGNANO_SANDBOX_RUNTIME=${name}, although ${test.failed}` };
  throw new Error(
    `FROGNANO_SANDBOX_RUNTIME=${wanted}: a test start of ${image} under it failed (${test.failed}); fix the runtime or unset the variable`,
  );
}

type TestStart = { ok: true } | { ok: false; failed: string; toolsOnly: boolean };

/** Whether `image` works under `runtime`: starts, runs Python, and its `ls -l` and `stat`. */
async function testStart(docker: Docker, runtime: string, image: string): Promise<TestStart> {
  let container: Docker.Container | undefined;
  try {
    container = await docker.createContainer({
      Image: image,
      Entrypoint: [],
      Cmd: ['sh', '-c', `${TEST_COMMAND} 2>&1`],
      User: SANDBOX_USER,
      Labels: { [RUNTIME_TEST_LABEL]: '1' },
      HostConfig: {
        Runtime: runtime,
        NetworkMode: 'none',
        CapDrop: ['ALL'],
        SecurityOpt: ['no-new-privileges'],
        AutoRemove: false,
      },
    });
    await container.start();
    const exited = (await Promise.race([
      container.wait(),
      new Promise((resolve) => setTimeout(resolve, TEST_TIMEOUT_MS).unref()),
    ])) as { StatusCode?: number } | undefined;
    if (exited === undefined)
      return {
        ok: false,
        failed: `it did not finish within ${TEST_TIMEOUT_MS / 1000} s`,
        toolsOnly: false,
      };
    if (exited.StatusCode === 0) return { ok: true };
    const logs = await container.logs({ stdout: true, stderr: true });
    const said = demux(logs).trim().split('\n').at(-1)?.slice(0, 200) ?? '';
    if (exited.StatusCode === TOOLS_BROKEN)
      return {
        ok: false,
        failed: `\`ls -l\` and \`stat\` fail under it: ${said}`,
        toolsOnly: true,
      };
    return { ok: false, failed: `exit ${exited.StatusCode}: ${said}`, toolsOnly: false };
  } catch (error) {
    return { ok: false, failed: errorText(error).slice(0, 300), toolsOnly: false };
  } finally {
    await container?.remove({ force: true }).catch(() => undefined);
  }
}

/** The text of a non-TTY container's log stream (8-byte frame headers dropped). */
function demux(raw: Buffer): string {
  const parts: Buffer[] = [];
  for (let at = 0; at + 8 <= raw.length;) {
    const size = raw.readUInt32BE(at + 4);
    parts.push(raw.subarray(at + 8, at + 8 + size));
    at += 8 + size;
  }
  return Buffer.concat(parts).toString('utf8');
}

/**
 * Removes test starts' containers that a killed process left (they carry no owner: any
 * instance's, once older than any live test start can be). Returns how many went.
 */
export async function reapRuntimeTests(
  docker: Docker,
  options: { olderThanMs?: number; log?: Logger } = {},
): Promise<number> {
  const cutoff = Date.now() - (options.olderThanMs ?? ORPHAN_AGE_MS);
  const containers = await docker.listContainers({
    all: true,
    filters: JSON.stringify({ label: [RUNTIME_TEST_LABEL] }),
  });
  let removed = 0;
  for (const info of containers) {
    if (info.Created * 1000 > cutoff) continue;
    try {
      await docker.getContainer(info.Id).remove({ force: true, v: true });
      removed++;
      options.log?.info({ container: info.Id.slice(0, 12) }, 'reaped runtime test container');
    } catch (error) {
      // Already gone, or being removed by another reaper: fine.
      const status = (error as { statusCode?: number }).statusCode;
      if (status !== 404 && status !== 409) throw error;
    }
  }
  return removed;
}
