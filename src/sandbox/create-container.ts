// The hardened container a Docker sandbox runs in: no capabilities, no new privileges, no
// mounts, no logs, its limits set, and a disk quota where the engine's storage driver has one.
import type Docker from 'dockerode';
import { SandboxFailure } from '../leaf/sandbox.js';
import type { Logger } from '../log.js';
import {
  SANDBOX_ENV,
  SANDBOX_USER,
  SANDBOX_WORKDIR,
  type ResolvedDockerSandboxOptions,
} from './docker-sandbox-options.js';
import { errorText } from './engine-error-text.js';

/** Engines whose storage driver cannot give a container a size quota (remembered per engine). */
const storageQuota = new Map<string, false>();

// overlay2 off xfs/pquota: "--storage-opt is supported only for overlay over xfs with 'pquota'
// mount option"; other drivers: "Storage Option not supported", "... size is not supported".
const STORAGE_OPT_UNSUPPORTED =
  /storage[- ]?opt(ion)?s? .*(not supported|supported only|only supported)|not supported .*storage[- ]?opt/i;

/**
 * Creates (does not start) the container; `quota` says whether the engine enforces the disk
 * limit itself, else the disk guard must measure it.
 */
export async function createContainer(
  docker: Docker,
  resolved: ResolvedDockerSandboxOptions,
  identity: { name: string; labels: Record<string, string> },
  logger: Logger,
): Promise<{ container: Docker.Container; quota: boolean }> {
  const config = (storageOpt: boolean) => containerConfig(resolved, identity, storageOpt);
  let container: Docker.Container;
  let quota = storageQuota.get(engineKey(docker)) !== false;
  try {
    try {
      container = await docker.createContainer(config(quota));
    } catch (error) {
      if (!quota || !STORAGE_OPT_UNSUPPORTED.test(errorText(error))) throw error;
      storageQuota.set(engineKey(docker), false);
      quota = false;
      logger.info(
        { driverSays: errorText(error) },
        'no disk quota from the storage driver; the disk guard measures instead',
      );
      container = await docker.createContainer(config(false));
    }
  } catch (error) {
    throw new SandboxFailure(describeCreateError(error, resolved.image), { cause: error });
  }
  return { container, quota };
}

function containerConfig(
  resolved: ResolvedDockerSandboxOptions,
  { name, labels }: { name: string; labels: Record<string, string> },
  storageOpt: boolean,
): Docker.ContainerCreateOptions {
  const { limits } = resolved;
  return {
    name,
    Image: resolved.image,
    Cmd: ['sleep', 'infinity'],
    Entrypoint: [],
    User: SANDBOX_USER,
    WorkingDir: SANDBOX_WORKDIR,
    Env: SANDBOX_ENV,
    Labels: labels,
    Tty: false,
    OpenStdin: false,
    NetworkDisabled: false,
    HostConfig: {
      NetworkMode: resolved.network,
      // On a setup network (setup-network.ts): IPv4 only, the one family its host firewall
      // and proxy cover. Not under `none` (the agent's runtime, gVisor among them, may refuse
      // sysctls) nor `bridge` (open mode reaches everything anyway).
      ...(resolved.network.startsWith('frognano-setup-')
        ? { Sysctls: { 'net.ipv6.conf.all.disable_ipv6': '1' } }
        : {}),
      ...(resolved.runtime !== undefined ? { Runtime: resolved.runtime } : {}),
      CapDrop: ['ALL'],
      SecurityOpt: ['no-new-privileges'],
      Privileged: false,
      Init: true,
      Memory: limits.memoryBytes,
      MemorySwap: limits.memoryBytes,
      NanoCpus: limits.nanoCpus,
      PidsLimit: limits.pidsLimit,
      Tmpfs: { '/tmp': `rw,nosuid,nodev,size=${limits.tmpfsBytes},mode=1777` },
      Binds: [],
      Mounts: [],
      AutoRemove: false,
      ReadonlyRootfs: false,
      IpcMode: 'private',
      LogConfig: { Type: 'none', Config: {} },
      // The engine's own quota where its storage driver has one (overlay2 on xfs with
      // pquota, btrfs, zfs); elsewhere the disk guard measures instead.
      ...(storageOpt ? { StorageOpt: { size: String(limits.diskBytes) } } : {}),
    },
  };
}

function engineKey(docker: Docker): string {
  const modem = docker.modem as { socketPath?: unknown; host?: unknown; port?: unknown };
  return JSON.stringify([modem.socketPath, modem.host, modem.port]);
}

function describeCreateError(error: unknown, image: string): string {
  const status = (error as { statusCode?: number }).statusCode;
  if (status === 404 && /no such image/i.test(errorText(error))) {
    return `sandbox image ${image} not found; build it (docker build -t ${image} sandbox/, or sandbox/build-offline.sh without a registry) or choose another image`;
  }
  return `could not create the sandbox container from ${image}: ${errorText(error)}`;
}
